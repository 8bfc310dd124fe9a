/**
 * Issue 22: output that opened like a tool call and ran past the held-text cap was read to the
 * end (4 MB over 2.3 s, the upstream never aborted) and then thrown away for a corrective retry.
 * Now the upstream stream is cut off as soon as the cap is passed and a retry is certain; the
 * upstream (the simulator, which records every client that leaves mid-stream) counts the abort.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { collectStream, startStack, type Stack } from '../server/stack.js';

const tools = [{ type: 'function' as const, function: { name: 'f', parameters: { type: 'object' } } }];
// ~40k events of 5 characters at 1 ms each: about 40 s if read to the end.
const runaway = `<tool_call>{"name": "f", "arguments": {"a": "${'y'.repeat(200_000)}`;
const scenario = [{ raw: runaway, chunkDelayMs: 1 }, { call: [{ name: 'f', arguments: { a: 1 } }] }];

describe('the upstream is stopped once its output is decided to be discarded', () => {
  let stack: Stack | undefined;
  afterEach(async () => {
    await stack?.close();
    stack = undefined;
  });

  it('streamed: call text past the held-text cap aborts the upstream at once; the retry answers', async () => {
    stack = await startStack({ sim: { scenario }, file: { defaults: { maxHeldBytes: 2048 } } });
    const started = Date.now();
    const out = await collectStream(
      await stack.client.chat.completions.create({
        model: 'sim',
        messages: [{ role: 'user', content: 'x' }],
        tools,
        max_tokens: 3000,
        stream: true,
      }),
    );
    expect(out.calls.map((c) => [c.name, c.args])).toEqual([['f', '{"a":1}']]);
    expect(out.content).toBe('');
    const sim = stack.sim;
    expect(sim.requests).toHaveLength(2);
    // Without the stop: no abort, and the first attempt streams all ~40k events first.
    expect(sim.aborts).toHaveLength(1);
    expect(sim.aborts[0]).toMatchObject({ requestIndex: 0, midStream: true });
    // ~400 events reach the cap; the rest of the ~40k never had to be generated (a margin for a
    // loaded machine, where the abort takes longer to land).
    expect(sim.aborts[0]!.chunksSent).toBeLessThan(20_000);
    expect(Date.now() - started).toBeLessThan(30_000);
    // The retry may use what the client allowed, no more.
    expect(sim.requests.map((r) => (r.body as { max_tokens?: number }).max_tokens)).toEqual([3000, 3000]);
    const metrics = await (await fetch(`${stack.origin}/metrics`)).text();
    expect(metrics).toMatch(/toolproof_upstream_early_stops_total\{model="sim",reason="retry-certain"\} 1/);
  }, 60_000);

  it('not streamed: the same decision (a retry, even when the runaway turn ended by max_tokens)', async () => {
    stack = await startStack({
      sim: { scenario: [{ raw: runaway, truncateAt: 150_000 }, scenario[1]!] },
      file: { defaults: { maxHeldBytes: 2048 } },
    });
    const res = await stack.client.chat.completions.create({
      model: 'sim',
      messages: [{ role: 'user', content: 'x' }],
      tools,
    });
    const calls = res.choices[0]!.message.tool_calls ?? [];
    expect(calls.map((c) => (c.type === 'function' ? [c.function.name, c.function.arguments] : []))).toEqual([
      ['f', '{"a":1}'],
    ]);
    expect(stack.sim.requests).toHaveLength(2);
  });

  it('no retry left (maxRetries 0): the output is the answer, read to the end, never aborted', async () => {
    const text = `<tool_call>{"name": "f", "arguments": {"a": "${'y'.repeat(6000)}`;
    stack = await startStack({
      sim: { scenario: [{ raw: text }] },
      file: { defaults: { maxHeldBytes: 2048, maxRetries: 0 } },
    });
    const out = await collectStream(
      await stack.client.chat.completions.create({
        model: 'sim',
        messages: [{ role: 'user', content: 'x' }],
        tools,
        stream: true,
      }),
    );
    expect(out.content).toBe(text);
    expect(stack.sim.aborts).toHaveLength(0);
    expect(stack.sim.requests).toHaveLength(1);
  });
});
