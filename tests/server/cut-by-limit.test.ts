/**
 * A leaked call the token limit cut off reaches the client as the text it was, never as a call
 * with invented arguments: the upstream ends with finish_reason `length` inside a Qwen3-Coder
 * value. Through the real server on loopback on every door, streamed and not (chat completions,
 * Responses, Messages; the real `openai` and `@anthropic-ai/sdk` clients), against a scripted
 * upstream; the same text with finish_reason `stop` is read as a call.
 */
import type Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bothMessages,
  bothResponses,
  type FrontDoors,
  normalizeMessage,
  normalizeResponse,
  startFrontDoors,
} from '../redteam/front-doors.js';
import { assemble } from './scripted-upstream.js';

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

let fd: FrontDoors;

beforeAll(async () => {
  fd = await startFrontDoors();
});
afterAll(() => fd.close());

const request = {
  model: 'm',
  messages: [{ role: 'user' as const, content: 'write notes.txt' }],
  tools: [writeFile],
  tool_choice: 'auto' as const,
};

const writeFileTool = {
  type: 'function' as const,
  name: 'write_file',
  parameters: writeFile.function.parameters,
  strict: false,
};

describe('a leaked call cut off by the token limit', () => {
  it('chat completions, streamed and not: the text as it was, finish_reason length, no retry', async () => {
    fd.plan([{ content: CUT, finish: 'length' }]);
    const whole = await fd.openai.chat.completions.create({ ...request, stream: false });
    const chunks = [];
    for await (const c of await fd.openai.chat.completions.create({ ...request, stream: true }))
      chunks.push(c);
    const streamed = assemble(chunks as Parameters<typeof assemble>[0]);
    expect(whole.choices[0]!.message.content).toBe(CUT);
    expect(whole.choices[0]!.message.tool_calls ?? []).toEqual([]);
    expect(whole.choices[0]!.finish_reason).toBe('length');
    expect(streamed).toEqual({ content: CUT, calls: [], finish: 'length' });
    // the same budget would cut a re-ask too: one upstream request per client request
    expect(fd.served()).toEqual([1, 1]);
  });

  it('the Responses door, streamed and not: one output_text message, status incomplete (max_output_tokens)', async () => {
    fd.plan([{ content: CUT, finish: 'length' }]);
    const { plain, streamed, events } = await bothResponses(fd, {
      model: 'm',
      input: 'write notes.txt',
      tools: [writeFileTool],
      tool_choice: 'auto',
    });
    expect(plain.status).toBe('incomplete');
    expect(plain.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(plain.output.map((item) => item.type)).toEqual(['message']);
    const message = plain.output[0] as OpenAI.Responses.ResponseOutputMessage;
    expect(message.status).toBe('incomplete');
    expect(message.content).toEqual([{ type: 'output_text', text: CUT, annotations: [] }]);
    expect(plain.output_text).toBe(CUT);
    // streamed: the text deltas add up to the same bytes, no call item opens, the stream ends incomplete
    const deltas = events.filter((e) => e.type === 'response.output_text.delta');
    expect(deltas.map((e) => e.delta).join('')).toBe(CUT);
    expect(events.filter((e) => e.type.startsWith('response.function_call'))).toEqual([]);
    expect(events.filter((e) => e.type === 'response.output_item.added').map((e) => e.item.type)).toEqual([
      'message',
    ]);
    expect(events.at(-1)!.type).toBe('response.incomplete');
    expect(normalizeResponse(streamed)).toEqual(normalizeResponse(plain));
    expect(fd.served()).toEqual([1, 1]);
  });

  it('the Messages door, streamed and not: the text as a text block, stop_reason max_tokens', async () => {
    fd.plan([{ content: CUT, finish: 'length' }]);
    const { plain, streamed, events } = await bothMessages(fd, {
      model: 'm',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'write notes.txt' }],
      tools: [
        { name: 'write_file', input_schema: writeFile.function.parameters as Anthropic.Tool.InputSchema },
      ],
    });
    expect(plain.stop_reason).toBe('max_tokens');
    expect(plain.content).toEqual([{ type: 'text', text: CUT }]);
    // streamed: text deltas byte for byte, no tool_use block opens, message_delta says max_tokens
    let text = '';
    for (const e of events)
      if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') text += e.delta.text;
    expect(text).toBe(CUT);
    expect(events.filter((e) => e.type === 'content_block_start').map((e) => e.content_block.type)).toEqual([
      'text',
    ]);
    const delta = events.find((e) => e.type === 'message_delta');
    expect(delta?.type === 'message_delta' && delta.delta.stop_reason).toBe('max_tokens');
    expect(normalizeMessage(streamed)).toEqual(normalizeMessage(plain));
    expect(fd.served()).toEqual([1, 1]);
  });

  it('the same text ended by the model (finish_reason stop) is read as the call it holds', async () => {
    fd.plan([{ content: CUT, finish: 'stop' }]);
    const whole = await fd.openai.chat.completions.create({ ...request, stream: false });
    const call = whole.choices[0]!.message.tool_calls?.[0];
    expect(call?.type === 'function' ? call.function : call).toEqual({
      name: 'write_file',
      arguments: '{"path":"notes.txt","content":"first line\\nsecond li"}',
    });
    expect(whole.choices[0]!.finish_reason).toBe('tool_calls');
  });
});
