/**
 * Sets of long values (image-decode's inline images, the refused values a request carries):
 * V8 hashes a string past 16,383 characters by its length alone, so a Set of many distinct data
 * URLs of one length compares each new one with all before it. 1,000 images of 20 KB (a 20 MB
 * body) cost 0.86 s for one such Set, and a request goes through several (image-decode's
 * candidates, the values remembered, the policy's lookups), each request once one of them was
 * remembered. Long values are now keyed by their SHA-256 (protocol/string-set.ts).
 */
import { describe, expect, it } from 'vitest';
import { imageDecodePolicy } from '../../policies/image-decode/index.js';
import { inlineImages } from '../../policies/image-decode/refusal.js';
import { remoteImageUrls } from '../../policies/image-urls/refusal.js';
import { POLICIES } from '../../policies/registry.js';
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { StringSet } from '../../protocol/string-set.js';
import { rememberedValues, rememberRefusedValues } from '../../server/chat/refusals.js';
import { FallbackMemory } from '../../server/fallback-memory.js';
import type { ResolvedRoute } from '../../server/routing.js';
import { ctxWith } from '../policies/helpers.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';

const route = {
  name: 'default',
  client: { label: 'up' },
  settings: { fallbackTtlSeconds: 600 },
} as unknown as ResolvedRoute;

/** `n` WebP data URLs of 17,000 characters each, alike but for their last characters. */
const urls = (n: number) =>
  Array.from(
    { length: n },
    (_, i) => `data:image/webp;base64,UklGR${'A'.repeat(17_000)}${String(i).padStart(6, '0')}`,
  );

const req = (images: string[]): ChatCompletionRequest => ({
  model: 'm',
  messages: [
    { role: 'user', content: images.map((url) => ({ type: 'image_url' as const, image_url: { url } })) },
  ],
});

describe('sets of long values', () => {
  it('a StringSet holds long values apart and finds them again', () => {
    const [a, b] = urls(2) as [string, string];
    const s = new StringSet([a, a, 'short']);
    expect(s.size).toBe(2);
    expect([s.has(a), s.has(b), s.has('short'), s.has('other')]).toEqual([true, false, true, false]);
    expect([...s]).toEqual([a, 'short']);
    expect(inlineImages(req([a, b, a]))).toEqual([a, b]);
  });

  it('a request of n remembered long images costs linear CPU in n (x1 vs x4)', () => {
    const make = (n: number) => {
      const images = urls(n);
      const memory = new FallbackMemory();
      rememberRefusedValues(memory, route, 'm', 'image-decode', images, 'k');
      return { memory, request: req(images) };
    };
    const s = measureScaling(
      make,
      ({ memory, request }) => {
        const values = rememberedValues(POLICIES, memory, route, request, 'k');
        const ctx = {
          ...ctxWith(),
          refused: { now: new Set<string>(), remembered: new Set<string>(), values },
        };
        return imageDecodePolicy.onRequest!(request, ctx as never, request);
      },
      { from: 16, max: 1024 },
    );
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });

  it('image-urls’ candidates: n long URLs alike cost linear CPU in n (x1 vs x4)', () => {
    const long = (n: number) =>
      req(Array.from({ length: n }, (_, i) => `https://img.example/${'a'.repeat(17_000)}${i}.png`));
    const s = measureScaling(long, remoteImageUrls, { from: 16, max: 1024 });
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});
