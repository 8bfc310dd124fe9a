/**
 * The watch of a relayed Responses stream (server/front-doors/responses/relayed-stream.ts): the
 * error events it ends a stream with when the worker answering it exits, numbered on from the
 * last event passed, whatever the chunking; and its cost, linear in the bytes passed whatever
 * their lines (one long line in small pieces, many short lines) (x1 vs x4).
 */
import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { ToolproofError } from '../../../../protocol/errors.js';
import { watchRelayedResponses } from '../../../../server/front-doors/responses/relayed-stream.js';
import { measureScaling, withinBudget } from '../../../support/cost-scaling.js';

const post = { method: 'POST', params: {} } as unknown as FastifyRequest;
const gone = new ToolproofError('TP_ERR_WORKER_GONE', { message: 'gone' });
const sse = (e: Record<string, unknown>) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`;
const events = (text: string) =>
  text
    .split('\n\n')
    .filter((e) => e.includes('data: '))
    .map((e) => JSON.parse(e.slice(e.indexOf('data: ') + 6)) as Record<string, unknown>);

/** A stream as the door writes it: response.created, deltas (each event's JSON ends with its number). */
function stream(deltas: number, text = 'word '): string {
  let s = sse({
    type: 'response.created',
    response: { id: 'resp_00020123abcd', object: 'response', status: 'in_progress', output: [] },
    sequence_number: 0,
  });
  for (let i = 1; i <= deltas; i++)
    s += sse({ type: 'response.output_text.delta', item_id: 'msg_1', delta: text, sequence_number: i });
  return s;
}

describe('the watch of a relayed Responses stream', () => {
  it.each([1, 3, 7, 64, 100_000])(
    'numbers its error events on from the last event, chunks of %i bytes',
    (size) => {
      const watch = watchRelayedResponses(post);
      const bytes = Buffer.from(stream(20));
      for (let i = 0; i < bytes.length; i += size) watch.push(bytes.subarray(i, i + size));
      const [error, failed] = events(watch.fail(gone));
      expect(error).toEqual({
        type: 'error',
        code: 'TP_ERR_WORKER_GONE',
        message: 'gone',
        param: null,
        sequence_number: 21,
      });
      expect(failed).toMatchObject({
        type: 'response.failed',
        sequence_number: 22,
        response: { id: 'resp_00020123abcd', status: 'failed', error: { code: 'TP_ERR_WORKER_GONE' } },
      });
    },
  );

  it("a resumed stream (GET /v1/responses/{id}?stream=true) takes the path's id", () => {
    const watch = watchRelayedResponses({
      method: 'GET',
      params: { id: 'resp_0003feed' },
    } as unknown as FastifyRequest);
    watch.push(Buffer.from(sse({ type: 'response.output_text.delta', delta: 'x', sequence_number: 41 })));
    expect(
      events(watch.fail(gone)).map((e) => [e.type, e.sequence_number, (e.response as { id?: string })?.id]),
    ).toEqual([
      ['error', 42, undefined],
      ['response.failed', 43, 'resp_0003feed'],
    ]);
  });

  it('no event passed yet: the error event alone, numbered 0', () => {
    expect(events(watchRelayedResponses(post).fail(gone))).toEqual([
      { type: 'error', code: 'TP_ERR_WORKER_GONE', message: 'gone', param: null, sequence_number: 0 },
    ]);
  });

  it('costs linear CPU in a long line sent in 16-byte pieces (x1 vs x4)', () => {
    const s = measureScaling(
      (n) => {
        const line = Buffer.from(
          sse({
            type: 'response.completed',
            response: { id: 'resp_1', text: 'y'.repeat(n) },
            sequence_number: 9,
          }),
        );
        const pieces: Buffer[] = [];
        for (let i = 0; i < line.length; i += 16) pieces.push(line.subarray(i, i + 16));
        return pieces;
      },
      (pieces) => {
        const watch = watchRelayedResponses(post);
        for (const p of pieces) watch.push(p);
        return watch.fail(gone);
      },
      { from: 4096, max: 1 << 22 },
    );
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });

  it('costs linear CPU in many short lines in one chunk (x1 vs x4)', () => {
    const s = measureScaling(
      (n) => Buffer.from(`${': keepalive\n\n'.repeat(n)}${stream(n, 'x')}`),
      (bytes) => {
        const watch = watchRelayedResponses(post);
        watch.push(bytes);
        return watch.fail(gone);
      },
      // Up to 32,768 lines (~3.7 MB at x4): at a base of 65,536 the x4 chunk is ~30 MB, no relayed
      // read's size, and one official CI run read it x10.7 (15.4 vs 164.9 ms), over 10x + 5 ms;
      // alone, five reads at 65,536 gave x6.8-7.1 and at 32,768 x4.5-5.7.
      { from: 256, max: 1 << 15 },
    );
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});
