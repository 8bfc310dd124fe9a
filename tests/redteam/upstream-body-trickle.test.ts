/**
 * An upstream that answers a request not streamed with its headers, then its body a byte at a
 * time, each byte within the idle timeout. undici's bodyTimeout is the silence between two
 * chunks, so the body was read for as long as the upstream liked to send it (a 64 MiB body a
 * byte a minute: years), holding the client's request, its connection and the admission slot.
 * A stream's idle clock counts events, not bytes (stream-read.ts); a body read whole is now one
 * event to it: whole within the idle timeout of its read, else the door's 504 (an error body:
 * what came so far, under the upstream's status).
 */
import type { ServerResponse } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { proxyInFrontOf, textCompletion } from '../support/harness.js';

const IDLE_MS = 800;
/** Each byte comes well within the idle timeout; the whole body takes ~30 s. */
const BYTE_EVERY_MS = 150;

const trickles = new Set<NodeJS.Timeout>();
afterAll(() => {
  for (const t of trickles) clearInterval(t);
});

/** Sends `body` a byte every BYTE_EVERY_MS after the headers, until done or the connection goes. */
function trickle(res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { 'content-type': type });
  let at = 0;
  const t = setInterval(() => {
    if (res.destroyed || at >= body.length) {
      clearInterval(t);
      trickles.delete(t);
      if (!res.destroyed) res.end();
      return;
    }
    res.write(body[at++]!);
  }, BYTE_EVERY_MS);
  trickles.add(t);
}

const pair = proxyInFrontOf(
  (req, res) => {
    const body = JSON.parse(req.body.toString()) as { messages?: { content: unknown }[]; prompt?: string };
    const said = String(body.prompt ?? body.messages?.at(-1)?.content ?? '');
    if (said.includes('refuse'))
      return trickle(
        res,
        400,
        'application/json',
        JSON.stringify({ error: { message: 'bad model name here' } }),
      );
    if (req.url.endsWith('/completions') && body.prompt !== undefined)
      return trickle(
        res,
        200,
        'application/json',
        JSON.stringify({ id: 'x', object: 'text_completion', choices: [] }),
      );
    trickle(res, 200, 'application/json', textCompletion('a plain answer, sent slowly'));
  },
  { env: { TOOLPROOF_IDLE_TIMEOUT_MS: String(IDLE_MS) } },
);

const weather = { type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } };

async function post(path: string, body: unknown) {
  const started = performance.now();
  const res = await fetch(`${pair.proxy.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as Record<string, unknown>;
  return { status: res.status, json, ms: performance.now() - started };
}

describe('an upstream body sent a byte at a time, each within the idle timeout', () => {
  it('chat with tools, chat without, /v1/completions: the 504 in OpenAI shape within about the idle timeout', async () => {
    const asked = [
      post('/v1/chat/completions', {
        model: 'm1',
        messages: [{ role: 'user', content: 'hi' }],
        tools: [weather],
      }),
      post('/v1/chat/completions', { model: 'm1', messages: [{ role: 'user', content: 'hi' }] }),
      post('/v1/completions', { model: 'm1', prompt: 'hi' }),
    ];
    for (const r of await Promise.all(asked)) {
      expect(r.status, JSON.stringify(r.json)).toBe(504);
      expect(r.json['error']).toMatchObject({ type: 'timeout_error', code: 'TP_ERR_UPSTREAM_TIMEOUT' });
      expect(String((r.json['error'] as { message: string }).message)).toContain('whole response');
      expect(r.ms).toBeLessThan(IDLE_MS * 5);
    }
  });

  it("Messages and Responses: the 504 in each API's own shape", async () => {
    const [messages, responses] = await Promise.all([
      post('/v1/messages', { model: 'm1', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
      post('/v1/responses', { model: 'm1', input: 'hi' }),
    ]);
    expect(messages.status).toBe(504);
    expect(messages.json).toMatchObject({ type: 'error', error: { type: 'timeout_error' } });
    expect(messages.ms).toBeLessThan(IDLE_MS * 5);
    expect(responses.status).toBe(504);
    expect(responses.json['error']).toMatchObject({ code: 'TP_ERR_UPSTREAM_TIMEOUT' });
    expect(responses.ms).toBeLessThan(IDLE_MS * 5);
  });

  it("a refusal's body trickled: the upstream's status with what it said so far, within about the idle timeout", async () => {
    const r = await post('/v1/chat/completions', {
      model: 'm1',
      messages: [{ role: 'user', content: 'refuse' }],
      tools: [weather],
    });
    expect(r.status).toBe(400);
    expect(r.ms).toBeLessThan(IDLE_MS * 5);
  });
});
