/**
 * The refusal memory (server/fallback-memory.ts) gives up, when full, the oldest entry of the
 * owner holding the most, each entry's owner read from its name: the text after the last
 * `\u0000key\u0000` mark (memoryModel appends the asking key's). Without keys (a server open to
 * its network, the default) nothing was appended, and the client's own model name could hold
 * the mark: `m\u0000key\u0000x` made every fact remembered of it (one an image, image-decode
 * names every inline image it cannot tell apart) an owner of its own, and each write into the
 * full memory walked all of them, up to 4,096: 40,000 facts 1.9-2.1 s of CPU against 55-77 ms for
 * a model named plainly. Now a name without a key ends with an empty mark: its owner is none.
 */
import { describe, expect, it } from 'vitest';
import { rememberRefusedValues } from '../../server/chat/refusals.js';
import { FallbackMemory, memoryModel } from '../../server/fallback-memory.js';
import type { ResolvedRoute } from '../../server/routing.js';
import { compareCosts, cpuMsOf, measureScaling, withinBudget } from '../support/cost-scaling.js';

const route = {
  name: 'default',
  client: { label: 'up' },
  settings: { fallbackTtlSeconds: 600 },
} as unknown as ResolvedRoute;

const MARKED = 'm\u0000key\u0000x';

let run = 0;
/** A full memory of `size` entries (no keys), and `size` images refused of `model`. */
function fullMemory(
  size: number,
  model = MARKED,
): { memory: FallbackMemory; model: string; values: string[] } {
  const memory = new FallbackMemory(Date.now, size);
  rememberRefusedValues(
    memory,
    route,
    model,
    'image-decode',
    Array.from({ length: size }, (_, i) => `old ${i}`),
  );
  const r = run++;
  return {
    memory,
    model,
    values: Array.from({ length: size }, (_, i) => `data:image/webp;base64,UklGR${r}.${i}`),
  };
}

describe('a model name holding the memory owner mark, no keys', () => {
  it('is remembered and found as any name is', () => {
    const { memory } = fullMemory(8);
    rememberRefusedValues(memory, route, MARKED, 'image-decode', ['a', 'b']);
    expect(memory.size).toBe(8);
    const name = (v: string) => memoryModel(`${MARKED}\u0000image-decode\u0000value\u0000${v}`, undefined);
    expect(memory.isActive('up', name('a'))).toBe(true);
    expect(memory.isActive('up', name('old 0'))).toBe(false);
    expect(memory.isActive('up', name('old 2'))).toBe(true);
  });

  it('4,096 entries and 20,000 images refused cost about what they cost for a plain name', () => {
    const cost = (model: string) => {
      const { memory, values } = fullMemory(4096, model);
      const more = Array.from({ length: 5 }, (_, j) => values.map((v) => `${v}.${j}`)).flat();
      return cpuMsOf(() => rememberRefusedValues(memory, route, model, 'image-decode', more));
    };
    // Measured before: 0.9-1 s against 25-40 ms (40,000 images: 1.9-2.1 s against 55-77 ms).
    const c = compareCosts(
      () => cost(MARKED),
      () => cost('m'),
      (marked, plain) => marked < 3 * plain + 20,
    );
    expect(c.ok, JSON.stringify(c)).toBe(true);
  }, 60_000);

  it('costs linear CPU in memory size and values together (x1 vs x4)', () => {
    const s = measureScaling(
      (size) => fullMemory(size),
      ({ memory, model, values }) => {
        const r = run++;
        rememberRefusedValues(
          memory,
          route,
          model,
          'image-decode',
          values.map((v) => `${v}.${r}`),
        );
      },
      { from: 256, max: 1 << 14 },
    );
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  }, 60_000);
});
