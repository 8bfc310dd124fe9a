import { describe, expect, it } from 'vitest';
import { singleCallTurnsPolicy, splitParallelCalls } from '../../policies/single-call-turns/index.js';
import type { ChatMessage } from '../../protocol/openai.js';
import { ctxWith } from './helpers.js';

const call = (id: string) => ({
  id,
  type: 'function' as const,
  function: { name: 'Read', arguments: `{"p":"${id}"}` },
});
const result = (id: string): ChatMessage => ({ role: 'tool', tool_call_id: id, content: `r-${id}` });

describe('single-call-turns', () => {
  it('splits an assistant message of several calls into one message per call, each followed by its result', () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        content: 'Reading.',
        reasoning_content: 'both',
        tool_calls: [call('a'), call('b'), call('c')],
      } as ChatMessage,
      result('c'),
      result('zz'),
      result('a'),
      result('b'),
      { role: 'user', content: 'next' },
    ];
    const { messages: out, split } = splitParallelCalls(messages);
    expect(split).toBe(1);
    expect(out).toEqual([
      { role: 'user', content: 'go' },
      // the content and reasoning stay on the first
      { role: 'assistant', content: 'Reading.', reasoning_content: 'both', tool_calls: [call('a')] },
      result('a'),
      { role: 'assistant', content: null, tool_calls: [call('b')] },
      result('b'),
      { role: 'assistant', content: null, tool_calls: [call('c')] },
      result('c'),
      // a result that answers none of its calls stays, after them
      result('zz'),
      { role: 'user', content: 'next' },
    ]);
    // one call a message: the same object
    const single: ChatMessage[] = [
      { role: 'assistant', content: null, tool_calls: [call('a')] },
      result('a'),
    ];
    expect(splitParallelCalls(single)).toEqual({ messages: single, split: 0 });
  });

  it('acts only once the upstream refused parallel calls, and reads that refusal', () => {
    const req = {
      model: 'm',
      messages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: null, tool_calls: [call('a'), call('b')] },
        result('a'),
        result('b'),
      ],
    } as never;
    const plain = singleCallTurnsPolicy.onRequest!(req, ctxWith({}, {}), req);
    expect(plain.action === 'continue' && plain.request).toBe(req);
    const refused = {
      ...ctxWith({}, {}),
      refused: { now: new Set(['single-tool-calls']), remembered: new Set<string>() },
    };
    const d = singleCallTurnsPolicy.onRequest!(req, refused as never, req);
    if (d.action !== 'continue') throw new Error('continue expected');
    expect(d.request.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'tool']);
    expect(d.effects).toEqual([{ policy: 'single-call-turns', kind: 'split-parallel-calls', count: 1 }]);
    // llama-server's 400 for Meta's Llama 3.1-3.3 template; not another template error
    const r = singleCallTurnsPolicy.refusal!;
    const body = {
      error: {
        code: 400,
        message: 'Error: Jinja Exception: This model only supports single tool-calls at once!',
        type: 'invalid_request_error',
      },
    };
    expect(r.refused(400, body, req, refused as never)).toBe(true);
    expect(
      r.refused(400, { error: { message: 'conversation roles must alternate' } }, req, refused as never),
    ).toBe(false);
    expect(r.refused(404, body, req, refused as never)).toBe(false);
  });
});
