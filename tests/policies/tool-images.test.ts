import { describe, expect, it } from 'vitest';
import { MOVED_HEAD, moveToolImages, movedLine, toolImagesPolicy } from '../../policies/tool-images/index.js';
import { refusedToolImages, toolMessageImageAt } from '../../policies/tool-images/refusal.js';
import type { ChatCompletionRequest, ChatMessage } from '../../protocol/openai.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';
import { ctxWith } from './helpers.js';

const img = (n: number) => ({
  type: 'image_url' as const,
  image_url: { url: `data:image/png;base64,AAA${n}` },
});
const call = (id: string): ChatMessage => ({
  role: 'assistant',
  content: null,
  tool_calls: [{ id, type: 'function', function: { name: 'shot', arguments: '{}' } }],
});
const tool = (id: string, content: unknown): ChatMessage =>
  ({ role: 'tool', tool_call_id: id, content }) as never;
/** vLLM's 500 (vllm-project/vllm#41452: Gemma 4, an image in a tool message). */
const refusal = (n: number) => ({
  error: {
    message: `Failed to apply prompt replacement for mm_items['image'][${n}]`,
    type: 'InternalServerError',
    param: null,
    code: 500,
  },
});
const request: ChatCompletionRequest = {
  model: 'm',
  messages: [
    { role: 'user', content: [{ type: 'text', text: 'look' }, img(0)] },
    call('a'),
    tool('a', [{ type: 'text', text: 'shot a' }, img(1), img(2)]),
    tool('b', [img(3)]),
    tool('c', 'no image'),
    { role: 'user', content: 'and now?' },
    call('d'),
    tool('d', [img(4)]),
  ],
};
const refused = { now: new Set(['tool-images']), remembered: new Set<string>() };

describe('tool-images', () => {
  it("reads vLLM's refusal only where the image it names is in a tool message", () => {
    expect(toolMessageImageAt(request, 0)).toBe(false);
    expect([1, 2, 3, 4].map((n) => toolMessageImageAt(request, n))).toEqual([true, true, true, true]);
    expect(toolMessageImageAt(request, 5)).toBe(false);
    expect(refusedToolImages(500, refusal(1), request)).toBe(true);
    expect(refusedToolImages(500, refusal(0), request)).toBe(false); // a user's image: no template renders any
    expect(refusedToolImages(500, refusal(9), request)).toBe(false);
    expect(
      refusedToolImages(
        500,
        { error: { message: "Failed to apply prompt replacement for mm_items['audio'][1]" } },
        request,
      ),
    ).toBe(false);
    expect(refusedToolImages(500, { error: { message: 'CUDA out of memory' } }, request)).toBe(false);
    expect(refusedToolImages(200, refusal(1), request)).toBe(false);
  });

  it("moves each run's images to a user message after it, numbered, the rest as it was", () => {
    const moved = moveToolImages(request.messages)!;
    expect(moved.moved).toBe(4);
    const m = moved.messages;
    expect(m.slice(0, 2)).toEqual(request.messages.slice(0, 2));
    expect(m[0]).toBe(request.messages[0]); // untouched messages are the same objects
    expect(m[2]!.content).toBe(`shot a\n\n${movedLine(1)}\n\n${movedLine(2)}`);
    expect(m[3]!.content).toBe(movedLine(3));
    expect(m[4]).toBe(request.messages[4]);
    expect(m[5]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: MOVED_HEAD },
        { type: 'text', text: '[image 1]' },
        img(1),
        { type: 'text', text: '[image 2]' },
        img(2),
        { type: 'text', text: '[image 3]' },
        img(3),
      ],
    });
    expect(m[6]).toBe(request.messages[5]);
    expect(m[8]!.content).toBe(movedLine(1)); // numbered within its own turn's results
    expect(m[9]).toEqual({
      role: 'user',
      content: [{ type: 'text', text: MOVED_HEAD }, { type: 'text', text: '[image 1]' }, img(4)],
    });
    expect(m).toHaveLength(10);
    expect(moveToolImages([{ role: 'user', content: [img(1)] }, tool('x', 'text')])).toBeUndefined();
    // a later turn (one more message) sends the earlier messages' bytes again
    const later = moveToolImages([...request.messages, { role: 'assistant', content: 'seen' }])!;
    expect(JSON.stringify(later.messages).startsWith(JSON.stringify(m).slice(0, -1))).toBe(true);
  });

  it('rewrites only once the upstream refused', () => {
    const plain = toolImagesPolicy.onRequest!(request, ctxWith(), request);
    expect(plain.action === 'continue' && plain.request).toBe(request);
    const d = toolImagesPolicy.onRequest!(request, ctxWith({ refused }), request);
    if (d.action !== 'continue') throw new Error('continue expected');
    expect(d.request.messages).toHaveLength(10);
    expect(d.effects).toEqual([{ policy: 'tool-images', kind: 'tool-image-moved', count: 4 }]);
    const remembered = { now: new Set<string>(), remembered: new Set(['tool-images']) };
    expect(toolImagesPolicy.onRequest!(request, ctxWith({ refused: remembered }), request)).toEqual(d);
  });

  it('costs in proportion to the messages, x1 vs x4', () => {
    const make = (n: number): ChatCompletionRequest => ({
      model: 'm',
      messages: Array.from(
        { length: n },
        (_, i): ChatMessage =>
          i % 3 === 0
            ? call(`c${i}`)
            : tool(`c${i}`, [{ type: 'text', text: `out ${i}` }, img(i), img(i + 1)]),
      ),
    });
    const run = (r: ChatCompletionRequest) => [
      refusedToolImages(500, refusal(r.messages.length), r),
      toolImagesPolicy.onRequest!(r, ctxWith({ refused }), r),
    ];
    const s = measureScaling(make, run, { from: 256, max: 1 << 15 });
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});
