/**
 * The refusal memory's lookups for a request's values (server/chat/refusals.ts rememberedValues:
 * image-limit's one per image, image-decode's one per inline image) against a client that picks
 * a long model name. A name past 256 characters is held by its SHA-256 (server/fallback-memory.ts)
 * and every lookup's name held the model's: each image hashed the whole model name again, so
 * 8,000 image parts and a 256 KB model name (a 0.7 MB body) hashed 2 GB: 24.5 s of CPU for one
 * request, once anything at all was remembered. The model's part is now made once a request
 * (77 ms). The x1/x4 budget below scales images and name together: x114 before, x5-8 after.
 */
import { describe, expect, it } from 'vitest';
import { POLICIES } from '../../policies/registry.js';
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { FallbackMemory } from '../../server/fallback-memory.js';
import { rememberedValues, rememberRefusal, rememberRefusedValues } from '../../server/chat/refusals.js';
import type { ResolvedRoute } from '../../server/routing.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';

const route = {
  name: 'default',
  client: { label: 'up' },
  settings: { fallbackTtlSeconds: 600 },
} as unknown as ResolvedRoute;

/** `size` image parts (plain URLs) and a model name of 256 characters a part. */
const req = (size: number): ChatCompletionRequest => ({
  model: 'm'.repeat(256 * size),
  messages: [
    {
      role: 'user',
      content: Array.from({ length: size }, (_, i) => ({
        type: 'image_url' as const,
        image_url: { url: `https://img.example/${i}.png` },
      })),
    },
  ],
});

describe('refusal memory lookups of a request with a long model name', () => {
  it('the value of a long-named model is found again', () => {
    const memory = new FallbackMemory();
    const r = req(8);
    rememberRefusal(memory, route, r.model, 'image-limit\u0000value\u0000image-limit:4', 'k');
    expect([...rememberedValues(POLICIES, memory, route, r, 'k')]).toEqual(['image-limit:4']);
    expect(rememberedValues(POLICIES, memory, route, r, 'other').size).toBe(0);
  });

  it('costs linear CPU in images and model name together (x1 vs x4)', () => {
    const memory = new FallbackMemory();
    rememberRefusal(memory, route, 'other-model', 'image-limit', 'k'); // the memory is not empty
    const s = measureScaling(req, (r) => rememberedValues(POLICIES, memory, route, r, 'k'), {
      from: 16,
      max: 1 << 13,
    });
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});

/**
 * A full memory (`size` entries: another key's oldest, the asking key's more) and a refusal that
 * names `size` images (image-decode names every inline image it cannot tell apart): each write
 * swept every entry for expired ones and scanned past the other key's for the asking key's
 * oldest, so one refusal of 40,000 images cost 1.7 s of CPU (4096 entries); now 0.22 s.
 */
function fullMemory(size: number): { memory: FallbackMemory; values: string[] } {
  const memory = new FallbackMemory(Date.now, size);
  for (let i = 0; i < size; i++)
    rememberRefusal(
      memory,
      route,
      'm',
      `image-decode\u0000value\u0000old ${i}`,
      i < size / 2 - 1 ? 'alice' : 'mallory',
    );
  return { memory, values: Array.from({ length: size }, (_, i) => `data:image/webp;base64,UklGR${i}`) };
}

describe('a refusal naming many values written to a full memory', () => {
  it('gives up the asking key’s oldest, keeps the other key’s', () => {
    const { memory, values } = fullMemory(8);
    rememberRefusedValues(memory, route, 'm', 'image-decode', values.slice(0, 3), 'mallory');
    expect(memory.size).toBe(8);
    const held = (key: string, v: string) =>
      memory.isActive('up', `m\u0000image-decode\u0000value\u0000${v}\u0000key\u0000${key}`);
    expect([0, 1, 2].map((i) => held('alice', `old ${i}`))).toEqual([true, true, true]);
    expect([3, 4, 5, 6, 7].map((i) => held('mallory', `old ${i}`))).toEqual([
      false,
      false,
      false,
      true,
      true,
    ]);
  });

  it('costs linear CPU in memory size and values together (x1 vs x4)', () => {
    let run = 0;
    const s = measureScaling(
      fullMemory,
      ({ memory, values }) => {
        const r = run++;
        rememberRefusedValues(
          memory,
          route,
          'm',
          'image-decode',
          values.map((v) => `${v}${r}`),
          'mallory',
        );
      },
      { from: 256, max: 1 << 14 },
    );
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});
