/**
 * The refusal memory (server/fallback-memory.ts) with many keys: each key's facts are its own
 * (tests/redteam/refusal-memory-keys.test.ts), so a deployment of n keys on a backend that
 * refuses `tool_choice: "required"` holds a fact for each, n owners. When full, a write gives up
 * the oldest entry of the owner holding the most, and it found that owner by a walk of every
 * owner: one key's refusal naming m images (image-decode, image-urls: one fact an image) cost
 * m x n. 20,000 images into a full memory: 65 ms with one key holding facts, 822 ms with 4,000.
 * The owners are now in a heap by how many facts they hold (server/busiest-first.ts, the
 * Responses store's since redteam21). x1 vs x4 in both keys and images
 * (tests/support/cost-scaling.ts).
 */
import { describe, expect, it } from 'vitest';
import { rememberRefusedValues } from '../../server/chat/refusals.js';
import { FallbackMemory, memoryModel } from '../../server/fallback-memory.js';
import type { ResolvedRoute } from '../../server/routing.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';

const route = {
  name: 'default',
  client: { label: 'up' },
  settings: { fallbackTtlSeconds: 600 },
} as unknown as ResolvedRoute;

/** A memory of `keys` entries, one fact for each key, full; then one key's refusal of 5 x `keys` images. */
function manyKeys(keys: number): FallbackMemory {
  const memory = new FallbackMemory(Date.now, keys);
  for (let k = 0; k < keys; k++)
    rememberRefusedValues(memory, route, 'm', 'tool-choice', ['required'], `key-${k}`);
  const images = Array.from({ length: 5 * keys }, (_, i) => `data:image/webp;base64,UklGR${i}`);
  rememberRefusedValues(memory, route, 'm', 'image-decode', images, 'mallory');
  return memory;
}

describe('the refusal memory, full, with many keys holding facts', () => {
  it("one key's refusal gives up its own facts, never the other keys'", () => {
    const memory = new FallbackMemory(Date.now, 4);
    const has = (fact: string, key: string) =>
      memory.isActive(
        'up',
        memoryModel(`m\u0000${fact}\u0000value\u0000${fact === 'tool-choice' ? 'required' : ''}`, key),
      );
    const image = (v: string) =>
      memory.isActive('up', memoryModel(`m\u0000image-decode\u0000value\u0000${v}`, 'mallory'));
    for (const k of ['a', 'b', 'c'])
      rememberRefusedValues(memory, route, 'm', 'tool-choice', ['required'], k);
    rememberRefusedValues(memory, route, 'm', 'image-decode', ['i1', 'i2', 'i3'], 'mallory');
    expect(memory.size).toBe(4);
    expect(['a', 'b', 'c'].map((k) => has('tool-choice', k))).toEqual([true, true, true]);
    expect(['i1', 'i2', 'i3'].map(image)).toEqual([false, false, true]);
    // A key holding none yet, when no one holds more than one: the oldest of all goes.
    rememberRefusedValues(memory, route, 'm', 'tool-choice', ['required'], 'd');
    expect(['a', 'b', 'c', 'd'].map((k) => has('tool-choice', k))).toEqual([false, true, true, true]);
    expect(image('i3')).toBe(true);
    // mallory again, holding one: its own goes, the keys' stay.
    rememberRefusedValues(memory, route, 'm', 'image-decode', ['i4', 'i5'], 'mallory');
    expect(['b', 'c', 'd'].map((k) => has('tool-choice', k))).toEqual([true, true, true]);
    expect(['i3', 'i4', 'i5'].map(image)).toEqual([false, false, true]);
  });

  it('costs about keys plus images (x1 vs x4 in both)', () => {
    const s = measureScaling(
      (n) => n,
      (n) => manyKeys(n).size,
      { from: 64, max: 4096 },
    );
    expect(withinBudget(s, 5).time, JSON.stringify(s)).toBe(true);
  });
});
