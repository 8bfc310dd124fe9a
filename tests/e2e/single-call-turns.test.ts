/**
 * A session whose history holds parallel tool calls, on a template that takes one call per
 * assistant message (Meta's Llama 3.1-3.3: "This model only supports single tool-calls at once!",
 * llama-server's 400), through the real server with the real SDKs. Before, the turn carrying the
 * two calls and every later one (the agent sends them again each turn) were that 400: the session
 * was over. Now the refusal is read, the request sent again with each call in its own message
 * followed by its result (policies/single-call-turns), and remembered: turns 2 and 3 go in one
 * attempt, and each turn's upstream request extends the one turn 1 was answered with.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../server/stack.js';
import { prefixBreak, rawElements } from './raw-json.js';

type Obj = Record<string, unknown>;
const params = { type: 'object', properties: { path: { type: 'string' } } };

let stack: Stack;
let anthropic: Anthropic;
beforeAll(async () => {
  stack = await startStack({
    sim: { personality: 'llama-server', strictHistory: true, template: 'llama3' },
    file: { defaults: { vision: false, audio: false } },
  });
  anthropic = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0, timeout: 30_000 });
  stack.sim.setScenario(() => ({ say: 'Both files are short.' }));
});
afterAll(() => stack.close());

/** Three turns; each turn's upstream attempts, raw. */
async function threeTurns(turn: (k: number) => Promise<void>): Promise<string[][]> {
  const out: string[][] = [];
  for (let k = 0; k < 3; k++) {
    const before = stack.sim.requests.length;
    await turn(k);
    out.push(
      stack.sim.requests
        .slice(before)
        .filter((r) => r.path.endsWith('/chat/completions'))
        .map((r) => r.rawBody),
    );
  }
  return out;
}

function checkSession(attempts: string[][]): void {
  // turn 1: refused once, then answered; later turns: one attempt (the refusal remembered)
  expect(attempts.map((a) => a.length)).toEqual([2, 1, 1]);
  const answered = attempts.map((a) => a.at(-1)!);
  for (const raw of answered) {
    const messages = (rawElements(raw, 'messages') ?? []).map((m) => JSON.parse(m) as Obj);
    for (const m of messages)
      if (Array.isArray(m.tool_calls)) expect((m.tool_calls as unknown[]).length).toBe(1);
    // each call followed by its own result
    messages.forEach((m, i) => {
      if (!Array.isArray(m.tool_calls)) return;
      const id = (m.tool_calls as Array<{ id: string }>)[0]!.id;
      expect(messages[i + 1]).toMatchObject({ role: 'tool', tool_call_id: id });
    });
  }
  expect(prefixBreak(answered[0]!, answered[1]!)).toBeNull();
  expect(prefixBreak(answered[1]!, answered[2]!)).toBeNull();
}

describe('parallel calls in history on a one-call-per-message template: every turn answered', () => {
  it('Messages (Anthropic SDK), streamed: two tool_use blocks beside text, their results in the other order', async () => {
    const messages: Obj[] = [
      { role: 'user', content: 'Read a.ts and b.ts.' },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Reading both.' },
          { type: 'tool_use', id: 'toolu_a', name: 'Read', input: { path: 'a.ts' } },
          { type: 'tool_use', id: 'toolu_b', name: 'Read', input: { path: 'b.ts' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_b', content: 'export const b = 2;' },
          { type: 'tool_result', tool_use_id: 'toolu_a', content: 'export const a = 1;' },
        ],
      },
    ];
    const attempts = await threeTurns(async (k) => {
      const m = await anthropic.messages
        .stream({
          model: 'sim',
          max_tokens: 200,
          tools: [{ name: 'Read', input_schema: params }],
          messages,
        } as never)
        .finalMessage();
      expect(m.content).toEqual([expect.objectContaining({ type: 'text', text: 'Both files are short.' })]);
      messages.push({ role: 'assistant', content: m.content }, { role: 'user', content: `And now ${k}?` });
    });
    checkSession(attempts);
  });

  it('chat completions (OpenAI SDK), not streamed', async () => {
    const call = (id: string, path: string) => ({
      id,
      type: 'function',
      function: { name: 'Read', arguments: JSON.stringify({ path }) },
    });
    const messages: Obj[] = [
      { role: 'user', content: 'Read a.ts and b.ts.' },
      { role: 'assistant', content: null, tool_calls: [call('call_a', 'a.ts'), call('call_b', 'b.ts')] },
      { role: 'tool', tool_call_id: 'call_a', content: 'export const a = 1;' },
      { role: 'tool', tool_call_id: 'call_b', content: 'export const b = 2;' },
    ];
    const attempts = await threeTurns(async (k) => {
      const c = await stack.client.chat.completions.create({
        model: 'sim',
        tools: [{ type: 'function', function: { name: 'Read', parameters: params } }],
        messages,
      } as never);
      expect(c.choices[0]!.message.content).toBe('Both files are short.');
      messages.push(c.choices[0]!.message as never, { role: 'user', content: `And now ${k}?` });
    });
    // this model's refusal is remembered from the Messages session: one attempt from turn 1 on
    expect(attempts.map((a) => a.length)).toEqual([1, 1, 1]);
    checkSession([['', ...attempts[0]!], ...attempts.slice(1)]);
  });
});
