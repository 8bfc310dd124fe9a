/**
 * The stream hooks' hot-path shortcuts (copies made key by key, objects passed on as they are)
 * must produce the same bytes as the spread copies they replace.
 */
import { describe, expect, it } from 'vitest';
import type { ChatCompletionChunk } from '../../protocol/openai.js';
import { createFinalAnswerStreamHook } from '../../policies/force-tool-use/stream.js';
import { createHeldCallsStreamHook } from '../../policies/corrective-retry/stream.js';
import { isLiveAnswer, liveAnswerCopy } from '../../policies/types.js';

const chunkOf = (delta: Record<string, unknown>, finish: string | null = null): ChatCompletionChunk =>
  JSON.parse(
    JSON.stringify({
      id: 'c1',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'm',
      system_fingerprint: 'fp',
      choices: [{ index: 0, delta, finish_reason: finish }],
    }),
  ) as ChatCompletionChunk;

describe('stream hot path', () => {
  it('liveAnswerCopy serializes like a spread, keeps key order and marks only the copy', () => {
    const c = chunkOf({ content: 'x' });
    const choices = [{ index: 0, delta: { content: 'y' }, finish_reason: null }];
    const copy = liveAnswerCopy(c, choices);
    expect(JSON.stringify(copy)).toBe(JSON.stringify({ ...c, choices }));
    expect(isLiveAnswer(copy)).toBe(true);
    expect(isLiveAnswer(c)).toBe(false);
    // Spreads made by later hooks keep the mark.
    expect(isLiveAnswer({ ...copy, choices: [] })).toBe(true);
  });

  it('liveAnswerCopy keeps a "__proto__" key as data, as JSON.parse and a spread do', () => {
    const c = JSON.parse('{"id":"c1","__proto__":{"polluted":true},"choices":[]}') as ChatCompletionChunk;
    const copy = liveAnswerCopy(c, []);
    expect(JSON.stringify(copy)).toBe(JSON.stringify({ ...c, choices: [] }));
    expect((copy as unknown as { polluted?: boolean }).polluted).toBeUndefined();
  });

  it('final-answer rebuilds a delta with the keys in their place', () => {
    const hook = createFinalAnswerStreamHook({
      policy: 'force-tool-use',
      finalAnswerName: 'final_answer',
      forced: true,
      toolChoiceSent: 'required',
    });
    const out = [
      chunkOf({ role: 'assistant', content: '' }),
      chunkOf({
        tool_calls: [
          { index: 0, id: 'a', type: 'function', function: { name: 'final_answer', arguments: '' } },
        ],
        reasoning_content: null,
      }),
      chunkOf({ tool_calls: [{ index: 0, function: { arguments: '{"answer": "Hi' } }], extra: 1 }),
      chunkOf({ tool_calls: [{ index: 0, function: { arguments: '"}' } }] }, 'tool_calls'),
    ].flatMap((c) => hook.onChunk(c));
    expect(out.map((c) => JSON.stringify(c.choices))).toEqual([
      '[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]',
      // A null other than content is something to send; a new content key goes last.
      '[{"index":0,"delta":{"reasoning_content":null},"finish_reason":null}]',
      '[{"index":0,"delta":{"extra":1,"content":"Hi"},"finish_reason":null}]',
      '[{"index":0,"delta":{},"finish_reason":"stop"}]',
    ]);
    expect(isLiveAnswer(out[2]!)).toBe(true);
  });

  it('held calls pass a live answer on as itself, release held text as text, and copy a finished one', () => {
    const hook = createHeldCallsStreamHook(() => ({ effects: [] }), { hold: true });
    const text = chunkOf({ content: 'a' });
    const live = liveAnswerCopy(chunkOf({ content: 'b' }), chunkOf({ content: 'b' }).choices);
    const last = chunkOf({ content: 'c' }, 'stop');
    expect(hook.onChunk(text)).toEqual([]);
    const released = hook.onChunk(live);
    // Held text is kept as text (issue 18 item 6), released as an equal chunk.
    expect(released[0]).toEqual(text);
    expect(released[1]).toBe(live);
    expect(hook.onChunk(last)).toEqual([]);
    const end = hook.onEnd().chunks.map((c) => JSON.stringify(c.choices));
    expect(end).toEqual([
      '[{"index":0,"delta":{"content":"c"},"finish_reason":null}]',
      '[{"index":0,"delta":{},"finish_reason":"stop"}]',
    ]);
  });
});
