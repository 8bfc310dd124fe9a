import { describe, expect, it } from 'vitest';
import {
  imageCount,
  imageLimitPolicy,
  limitNote,
  notedImages,
  refusedLimit,
} from '../../policies/image-limit/index.js';
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';
import { ctxWith } from './helpers.js';

const url = (i: number) => `data:image/png;base64,iVBORw0KGgo${'A'.repeat(i)}`;
const req = (n: number): ChatCompletionRequest => ({
  model: 'm',
  messages: Array.from({ length: n }, (_, i) => ({
    role: 'user' as const,
    content: [
      { type: 'text' as const, text: `shot ${i}` },
      { type: 'image_url' as const, image_url: { url: url(i) } },
    ],
  })),
});
/** vLLM's 400 (vllm/entrypoints/chat_utils.py) with --limit-mm-per-prompt '{"image": 4}'. */
const refusal = (n: number) => ({
  error: {
    message: `At most ${n} image(s) may be provided in one prompt.`,
    type: 'BadRequestError',
    code: 400,
  },
});
const refused = (...values: string[]) => ({
  ...ctxWith({}, {}),
  refused: { now: new Set(['image-limit']), remembered: new Set<string>(), values: new Set(values) },
});

describe('image-limit', () => {
  it('reads the limit of a request over it; 0 is the images policy (a model that cannot see)', () => {
    expect(refusedLimit(400, refusal(4), req(5))).toBe(4);
    expect(refusedLimit(400, refusal(4), req(4))).toBeUndefined();
    expect(refusedLimit(400, refusal(0), req(5))).toBeUndefined();
    expect(refusedLimit(400, { error: { message: 'Failed to download image' } }, req(5))).toBeUndefined();
    const values = imageLimitPolicy.refusal!.values!;
    expect(values.named(400, refusal(4), req(5))).toEqual(['image-limit:4']);
    expect(values.candidates(req(3))).toEqual(['image-limit:1', 'image-limit:2']);
  });

  it('notes the oldest images in steps of half the limit, so turns within a step send the same bytes', () => {
    expect([4, 5, 6, 7, 8, 9].map((n) => notedImages(n, 4))).toEqual([0, 2, 2, 4, 4, 6]);
    expect([1, 2, 3].map((n) => notedImages(n, 1))).toEqual([0, 1, 2]);
    for (let n = 1; n < 40; n++) expect(n - notedImages(n, 5)).toBeLessThanOrEqual(5);
  });

  it('rewrites only once the limit was refused; the latest images stay', () => {
    const r = req(6);
    const plain = imageLimitPolicy.onRequest!(r, ctxWith({}, {}), r);
    expect(plain.action === 'continue' && plain.request).toBe(r);
    const d = imageLimitPolicy.onRequest!(r, refused('https://x/a.png', 'image-limit:4') as never, r);
    if (d.action !== 'continue') throw new Error('continue expected');
    expect(imageCount(d.request)).toBe(4);
    expect(d.request.messages[0]!.content).toBe(`shot 0\n\n${limitNote(url(0), 4)}`);
    expect(d.request.messages.slice(2)).toEqual(r.messages.slice(2));
    expect(d.effects).toEqual([
      { policy: 'image-limit', kind: 'image-limit-note', count: 2, of: 6, limit: 4 },
    ]);
  });

  it('costs in proportion to the images, x1 vs x4', () => {
    const run = (r: ChatCompletionRequest) => [
      imageLimitPolicy.refusal!.values!.candidates(r),
      imageLimitPolicy.onRequest!(r, refused('image-limit:3') as never, r),
    ];
    const s = measureScaling(req, run, { from: 256, max: 1 << 15 });
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});
