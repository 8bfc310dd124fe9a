/**
 * Issue 18 item 3: inputs whose cost grew with the square of their size.
 * - `/v1/responses` with many consecutive `function_call` items: each call copied the turn's
 *   call list (30k items: 6 s of event loop).
 * - One upstream chunk with many `choices`: the held stream judged every choice against every
 *   effect of the attempt (40k choices: 3 s).
 * Both are linear now: the work for 4n is about 4 times the work for n, not 16 times.
 */
import { describe, expect, it } from 'vitest';
import { measureScalingAsync, withinBudget } from '../support/cost-scaling.js';
import { proxyInFrontOf, streamOrJson, textCompletion, textCompletionStream } from '../support/harness.js';

let choices = 1;

/** `n` choices in one chunk, each a text with a call to an undeclared tool in it. */
const manyChoicesStream = (n: number) =>
  textCompletionStream(
    Array.from(
      { length: n },
      (_, i) => `answer ${i} <tool_call>{"name": "nope", "arguments": {}}</tool_call>`,
    ),
  );

const pair = proxyInFrontOf(
  streamOrJson(
    () => manyChoicesStream(choices),
    () => textCompletion('done'),
  ),
);

const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }];

/** One request through the proxy on loopback: its status and text. */
async function post(path: string, body: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`${pair.proxy.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
  return { status: res.status, text: await res.text() };
}

/** The request answered 200, or the run fails. */
const ok = async (r: Promise<{ status: number; text: string }>): Promise<void> => {
  const { status, text } = await r;
  if (status !== 200) throw new Error(`status ${status}: ${text.slice(0, 200)}`);
};

describe('linear in the size of the input', () => {
  it('/v1/responses: 4x as many consecutive function_call items cost about 4x, not 16x', async () => {
    const input = (n: number) => [
      { type: 'message', role: 'user', content: 'go' },
      ...Array.from({ length: n }, (_, i) => ({
        type: 'function_call',
        call_id: `c${i}`,
        name: 'f',
        arguments: '{}',
      })),
    ];
    // The process's CPU (proxy, upstream and client share it), interleaved x1/x4 pairs, medians
    // (tests/support/cost-scaling.ts). Was the wall time of the best of three at each size, one
    // size after the other: 28.9x under load (flakes19), against 3-5x alone.
    const s = await measureScalingAsync(
      (n) =>
        JSON.stringify({
          model: 'm1',
          input: input(n),
          tools: [{ type: 'function', name: 'f', parameters: { type: 'object' } }],
        }),
      (body) => ok(post('/v1/responses', body)),
      { from: 5000, max: 5000 },
    );
    // quadratic: 16x (23.6x before the fix)
    expect(withinBudget(s, 5).time, JSON.stringify(s)).toBe(true);
  }, 120_000);

  it('one upstream chunk with 4x as many choices costs about 4x, not 16x', async () => {
    const body = (n: number) =>
      JSON.stringify({
        model: 'm1',
        stream: true,
        // Choices past n are dropped (unasked-choices.test.ts) and n stops at 128: the request
        // asks for as many as it may, the upstream sends n.
        n: Math.min(n, 128),
        messages: [{ role: 'user', content: 'go' }],
        tools,
      });
    choices = 3;
    const check = await post('/v1/chat/completions', body(3));
    expect(check.text).toContain('answer 2');
    const s = await measureScalingAsync(
      (n) => n,
      (n) => {
        choices = n;
        return ok(post('/v1/chat/completions', body(n)));
      },
      { from: 2500, max: 2500 },
    );
    expect(withinBudget(s, 5).time, JSON.stringify(s)).toBe(true);
  }, 120_000);
});
