/**
 * `n > 1` with tools on llama-server, through the real server with the openai SDK. llama-server
 * samples one choice a request and refuses any other `n` ("Field 'n': Value must be between
 * 1 <= value <= 1", recorded in /work/shared/wire chat_plain_n2); the client sends `n` again on
 * every turn, so each turn was that 400. Now the refusal is read and remembered
 * (policies/single-choice), and the n choices are asked one request each, every one through the
 * harness as a single choice (leak recovery, forced tool use, its own corrective retry), and
 * joined into one answer with choices 0..n-1, streamed or not.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TurnAction } from '../../simulator/types.js';
import { type Stack, startStack, weatherTool } from '../server/stack.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ sim: { personality: 'llama-server' } });
});
afterAll(() => stack.close());

const messages = [{ role: 'user' as const, content: 'What is the weather in Paris?' }];

/** Each chat request the simulator answers takes the next action; the last repeats. */
function inTurn(actions: TurnAction[]): void {
  let k = 0;
  stack.sim.setScenario(() => actions[Math.min(k++, actions.length - 1)]!);
}

/** The chat requests the simulator received since `from`: their `n` (undefined: none). */
function sentN(from: number): unknown[] {
  return stack.sim.requests
    .slice(from)
    .filter((r) => r.path.endsWith('/chat/completions'))
    .map((r) => (r.body as { n?: unknown }).n);
}

const leaked = { raw: '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>' };
const invalid = { call: [{ name: 'get_weather', arguments: { days: 2 } }] }; // no city: re-asked
const valid = { call: [{ name: 'get_weather', arguments: { city: 'Rome' } }] };

describe('n > 1 on llama-server: one request per choice, joined', () => {
  it('non-streamed: n choices, each recovered, forced and retried as a single choice; the refusal remembered', async () => {
    const before = stack.sim.requests.length;
    inTurn([leaked, invalid, valid, { say: 'It is sunny.' }]);
    const res = await stack.client.chat.completions.create({
      model: 'sim',
      n: 3,
      messages,
      tools: [weatherTool],
    });
    expect(res.choices.map((c) => c.index)).toEqual([0, 1, 2]);
    const [a, b] = res.choices.map((c) => c.message.tool_calls?.[0]);
    // choice 0: the leaked call recovered; choice 1: re-asked once, the valid call
    expect(a?.type === 'function' && JSON.parse(a.function.arguments)).toEqual({ city: 'Paris' });
    expect(b?.type === 'function' && JSON.parse(b.function.arguments)).toEqual({ city: 'Rome' });
    expect(res.choices[0]!.message.content ?? '').toBe('');
    // choice 2: forced, its final_answer unwrapped into content
    expect(res.choices[2]!.message).toMatchObject({ content: 'It is sunny.' });
    expect(res.choices[2]!.finish_reason).toBe('stop');
    // refused once, then one request a choice (choice 1 twice: its retry)
    expect(sentN(before)).toEqual([3, undefined, undefined, undefined, undefined]);
    expect(res.usage?.completion_tokens).toBeGreaterThan(0);

    // the next turn goes one request a choice from the start
    const next = stack.sim.requests.length;
    inTurn([valid]);
    const again = await stack.client.chat.completions.create({
      model: 'sim',
      n: 2,
      messages,
      tools: [weatherTool],
    });
    expect(again.choices.map((c) => c.index)).toEqual([0, 1]);
    expect(sentN(next)).toEqual([undefined, undefined]);
  });

  it('streamed: each choice opens its own message under its index, in one stream, usage summed', async () => {
    inTurn([{ say: 'Sunny.' }]);
    const one = await stack.client.chat.completions.create({ model: 'sim', messages, tools: [weatherTool] });
    const before = stack.sim.requests.length;
    inTurn([{ say: 'Sunny.' }, valid]);
    const stream = await stack.client.chat.completions.create({
      model: 'sim',
      n: 2,
      messages,
      tools: [weatherTool],
      stream: true,
      stream_options: { include_usage: true },
    });
    const text = ['', ''];
    const roles = [0, 0];
    const calls: string[] = [];
    const finish: Array<string | null> = [null, null];
    const ids = new Set<string>();
    let usage: { completion_tokens: number } | undefined;
    for await (const chunk of stream) {
      ids.add(chunk.id);
      for (const c of chunk.choices) {
        if (c.delta.role) roles[c.index]!++;
        text[c.index] += c.delta.content ?? '';
        for (const t of c.delta.tool_calls ?? [])
          if (t.function?.name) calls.push(`${c.index}:${t.function.name}`);
        if (c.finish_reason) finish[c.index] = c.finish_reason;
      }
      if (chunk.usage) usage = chunk.usage;
    }
    expect(roles).toEqual([1, 1]);
    expect(text[0]).toBe('Sunny.');
    expect(calls).toEqual(['1:get_weather']);
    expect(finish).toEqual(['stop', 'tool_calls']);
    expect(ids.size).toBe(1); // one stream, one id
    expect(sentN(before)).toEqual([undefined, undefined]);
    expect(usage?.completion_tokens).toBeGreaterThan(one.usage!.completion_tokens);
  });

  it('streamed: a later choice that fails ends the stream with an error event, never a short answer', async () => {
    inTurn([{ say: 'Sunny.' }, { error: { status: 500, message: 'CUDA error: out of memory' } }]);
    const stream = await stack.client.chat.completions.create({
      model: 'sim',
      n: 2,
      messages,
      tools: [weatherTool],
      stream: true,
    });
    const seen: number[] = [];
    const err = await (async () => {
      for await (const chunk of stream) for (const c of chunk.choices) seen.push(c.index);
    })().catch((e: unknown) => e);
    expect(seen).toContain(0);
    expect(seen).not.toContain(1);
    expect(String((err as Error)?.message)).toMatch(/CUDA error: out of memory/);
  });

  it('without tools too (a relayed request): n choices, not the 400', async () => {
    inTurn([{ say: 'Hello.' }]);
    const res = await stack.client.chat.completions.create({ model: 'sim', n: 2, messages });
    expect(res.choices.map((c) => [c.index, c.message.content])).toEqual([
      [0, 'Hello.'],
      [1, 'Hello.'],
    ]);
  });
});
