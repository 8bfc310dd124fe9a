/**
 * A leaked call the token limit cut off reaches the client as the text it was, never as a call
 * with invented arguments: the upstream ends with finish_reason `length` inside a Qwen3-Coder
 * value. Through the real server on loopback (chat completions streamed and not, the Messages
 * door), against a scripted upstream; the same text with finish_reason `stop` is read as a call.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  assemble,
  type ScriptedStack,
  startScriptedStack,
  turnChunks,
  turnCompletion,
} from './scripted-upstream.js';

const CUT =
  'Writing it now.\n<tool_call>\n<function=write_file>\n<parameter=path>\nnotes.txt\n</parameter>\n<parameter=content>\nfirst line\nsecond li';

const writeFile = {
  type: 'function' as const,
  function: {
    name: 'write_file',
    parameters: {
      type: 'object',
      properties: { path: { type: 'string' }, content: { type: 'string' } },
      required: ['path', 'content'],
    },
  },
};

let stack: ScriptedStack;
let finish = 'length';

beforeAll(async () => {
  stack = await startScriptedStack((body) =>
    body.stream === true
      ? { sse: turnChunks({ content: CUT, finish }, 4) }
      : { json: turnCompletion({ content: CUT, finish }) },
  );
});
afterAll(() => stack.close());

const request = {
  model: 'm',
  messages: [{ role: 'user' as const, content: 'write notes.txt' }],
  tools: [writeFile],
  tool_choice: 'auto' as const,
};

describe('a leaked call cut off by the token limit', () => {
  it('chat completions, streamed and not: the text as it was, finish_reason length, no retry', async () => {
    finish = 'length';
    const before = stack.upstream.requests.length;
    const whole = await stack.client.chat.completions.create({ ...request, stream: false });
    const chunks = [];
    for await (const c of await stack.client.chat.completions.create({ ...request, stream: true }))
      chunks.push(c);
    const streamed = assemble(chunks as Parameters<typeof assemble>[0]);
    expect(whole.choices[0]!.message.content).toBe(CUT);
    expect(whole.choices[0]!.message.tool_calls ?? []).toEqual([]);
    expect(whole.choices[0]!.finish_reason).toBe('length');
    expect(streamed).toEqual({ content: CUT, calls: [], finish: 'length' });
    // the same budget would cut a re-ask too: one upstream request per client request
    expect(stack.upstream.requests.length - before).toBe(2);
  });

  it('the Messages door: the text as a text block, stop_reason max_tokens', async () => {
    finish = 'length';
    const client = new Anthropic({ baseURL: stack.url.replace(/\/v1$/, ''), apiKey: 'k', maxRetries: 0 });
    const msg = await client.messages.create({
      model: 'm',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'write notes.txt' }],
      tools: [
        { name: 'write_file', input_schema: writeFile.function.parameters as Anthropic.Tool.InputSchema },
      ],
    });
    expect(msg.stop_reason).toBe('max_tokens');
    expect(msg.content.filter((b) => b.type === 'tool_use')).toEqual([]);
    expect(msg.content.map((b) => (b.type === 'text' ? b.text : '')).join('')).toBe(CUT);
  });

  it('the same text ended by the model (finish_reason stop) is read as the call it holds', async () => {
    finish = 'stop';
    const whole = await stack.client.chat.completions.create({ ...request, stream: false });
    const call = whole.choices[0]!.message.tool_calls?.[0];
    expect(call?.type === 'function' ? call.function : call).toEqual({
      name: 'write_file',
      arguments: '{"path":"notes.txt","content":"first line\\nsecond li"}',
    });
    expect(whole.choices[0]!.finish_reason).toBe('tool_calls');
  });
});
