/**
 * GET /v1/responses/{id}?stream=true (the openai SDK's responses.retrieve(id, {stream: true}),
 * a stream resumed with `starting_after`): the replay of a long live stream, one event a delta
 * of its numbering, was built as one array of events and one string the size of the live
 * stream, on the event loop, before the first byte went out, once per request: a key holder
 * asking it of a response of 300,000 deltas (a long answer streamed token by token) had the
 * worker make ~40 MB and stall for it, per request, however slowly it read. It is now written
 * as the client reads it. The real server on loopback, its store holding such a response (as a
 * streamed request leaves it), a client that reads the first bytes and stops.
 */
import { request } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { StreamNumbering } from '../../protocol/responses/replay.js';
import type { OutputItem, ResponsesEvent } from '../../protocol/responses/types.js';
import { answerJson, proxyInFrontOf, textCompletion } from '../support/harness.js';

const pair = proxyInFrontOf(answerJson(textCompletion('ok')), {
  env: { TOOLPROOF_RESPONSES_STORE_MB: '64' },
});

const DELTAS = 300_000;

/** A response kept as a live stream of DELTAS one-character deltas leaves it; its id. */
function keepLongStream(): string {
  const id = 'resp_long_stream';
  const numbering = new StreamNumbering();
  let seq = 0;
  const record = (e: Record<string, unknown>) =>
    numbering.record({ ...e, sequence_number: seq++ } as ResponsesEvent);
  const at = { item_id: 'msg_long', output_index: 0, content_index: 0 };
  record({ type: 'response.created' });
  record({ type: 'response.in_progress' });
  record({ type: 'response.output_item.added', output_index: 0 });
  record({ type: 'response.content_part.added', ...at });
  for (let i = 0; i < DELTAS; i++) record({ type: 'response.output_text.delta', ...at, delta: 'x' });
  record({ type: 'response.output_text.done', ...at });
  record({ type: 'response.content_part.done', ...at });
  record({ type: 'response.output_item.done', output_index: 0 });
  record({ type: 'response.completed' });
  const message = {
    type: 'message',
    id: 'msg_long',
    role: 'assistant',
    status: 'completed',
    content: [{ type: 'output_text', text: 'x'.repeat(DELTAS), annotations: [] }],
  } as OutputItem;
  const envelope = JSON.stringify({
    id,
    object: 'response',
    created_at: 1,
    status: 'completed',
    model: 'm1',
  });
  const kept = pair.proxy.app.toolproof.responsesStore!.keepResponse(
    '',
    id,
    undefined,
    [{ role: 'user', content: 'write a lot' }],
    [message],
    true,
    { envelope, numbering: numbering.finish() },
  );
  expect(kept).toBe(true);
  return id;
}

afterEach(() => vi.restoreAllMocks());

describe('a long response replayed as a stream', () => {
  it('is made as the client reads it: a client that stops after the first bytes leaves most of it unmade', async () => {
    const id = keepLongStream();
    const stringify = vi.spyOn(JSON, 'stringify');
    const { origin } = pair.proxy;
    const made = await new Promise<{ status: number; type: string; madeWhilePaused: number; text: string }>(
      (resolve, reject) => {
        const req = request(`${origin}/v1/responses/${id}?stream=true`, (res) => {
          const chunks: Buffer[] = [];
          let paused = false;
          res.on('data', (chunk: Buffer) => {
            chunks.push(chunk);
            if (paused) return;
            paused = true;
            res.pause();
            // The server goes on only as far as the socket's buffers take it.
            setTimeout(() => {
              const madeWhilePaused = stringify.mock.calls.length;
              res.resume();
              res.on('end', () =>
                resolve({
                  status: res.statusCode ?? 0,
                  type: String(res.headers['content-type']),
                  madeWhilePaused,
                  text: Buffer.concat(chunks).toString('utf8'),
                }),
              );
            }, 1_000);
          });
          res.on('error', reject);
        });
        req.on('error', reject);
        req.end();
      },
    );
    stringify.mockRestore();
    console.log('events made while the client read nothing', made.madeWhilePaused, 'of', DELTAS + 8);
    expect(made.status).toBe(200);
    expect(made.type).toContain('text/event-stream');
    // Before: every event made (DELTAS + 8 stringified) before the first byte went out.
    expect(made.madeWhilePaused).toBeLessThan(DELTAS / 2);
    // Read to its end: every event, numbered as the live stream was, the text whole.
    const events = made.text
      .split('\n\n')
      .filter((e) => e.startsWith('event: '))
      .map((e) => JSON.parse(e.slice(e.indexOf('data: ') + 6)) as ResponsesEvent & { delta?: string });
    expect(events.length).toBe(DELTAS + 8);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events.filter((e) => e.type === 'response.output_text.delta').every((e) => e.delta === 'x')).toBe(
      true,
    );
    expect(events.at(-1)!.type).toBe('response.completed');
  }, 60_000);
});
