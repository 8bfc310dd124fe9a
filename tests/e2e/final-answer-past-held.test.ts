/**
 * A forced turn's final_answer whose arguments hold no answer string ({note, n}: two keys) goes on
 * as a call for corrective-retry to judge ('final-answer-args') only while the answer is within
 * half of maxHeldBytes (force-tool-use heldCallChars). Past maxHeldBytes corrective-retry judges
 * nothing, and the synthetic call went to the client as a tool call it never declared: non-streamed
 * past maxHeldBytes, streamed already past half of it (the streamed count missed the call's
 * argument fragments). Now such an answer is unwrapped as it goes, the same streamed and not.
 *
 * Real HTTP: the simulator as vLLM, the openai SDK (chat) and the Anthropic SDK (Messages).
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../server/stack.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ sim: { personality: 'vllm' }, file: { defaults: { maxHeldBytes: 2048 } } });
});
afterAll(() => stack.close());

const schema = { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] };

/** What the client got: the names of its calls and its text. */
async function ask(door: 'chat' | 'messages', stream: boolean): Promise<{ calls: string[]; text: string }> {
  if (door === 'chat') {
    const client = new OpenAI({ baseURL: `${stack.origin}/v1`, apiKey: 'x', maxRetries: 0 });
    const params = {
      model: 'sim',
      messages: [{ role: 'user' as const, content: 'Run the tests.' }],
      tools: [{ type: 'function' as const, function: { name: 'run', parameters: schema } }],
    };
    const calls: string[] = [];
    let text = '';
    if (stream) {
      for await (const c of await client.chat.completions.create({ ...params, stream: true })) {
        text += c.choices[0]?.delta.content ?? '';
        for (const t of c.choices[0]?.delta.tool_calls ?? [])
          if (t.function?.name) calls.push(t.function.name);
      }
    } else {
      const m = (await client.chat.completions.create(params)).choices[0]!.message;
      text = m.content ?? '';
      for (const t of m.tool_calls ?? []) calls.push((t as { function: { name: string } }).function.name);
    }
    return { calls, text };
  }
  const client = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0 });
  const params = {
    model: 'sim',
    max_tokens: 4096,
    messages: [{ role: 'user' as const, content: 'Run the tests.' }],
    tools: [{ name: 'run', input_schema: schema as Anthropic.Tool.InputSchema }],
  };
  const message = stream
    ? await client.messages.stream(params).finalMessage()
    : await client.messages.create(params);
  return {
    calls: message.content.flatMap((b) => (b.type === 'tool_use' ? [b.name] : [])),
    text: message.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join(''),
  };
}

describe('a final_answer without an answer string, past what corrective-retry judges', () => {
  // 300 words: 1,500 characters, past half of maxHeldBytes; 1,000 words: past maxHeldBytes.
  for (const words of [300, 1000])
    for (const door of ['chat', 'messages'] as const)
      it(`${door}, ${words * 5} characters: its text is the answer, streamed as not, never a final_answer call`, async () => {
        const note = 'word '.repeat(words);
        stack.sim.setScenario(() => ({ call: [{ name: 'final_answer', arguments: { note, n: 1 } }] }));
        const got = [];
        for (const stream of [false, true]) {
          stack.sim.reset();
          got.push(await ask(door, stream));
          expect(stack.sim.requests).toHaveLength(1);
        }
        for (const g of got) {
          expect(g.calls).toEqual([]);
          expect(g.text).toContain(note.trim());
        }
        expect(got[1]).toEqual(got[0]);
      });
});
