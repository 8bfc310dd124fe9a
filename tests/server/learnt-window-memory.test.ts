/**
 * The window learnt from an upstream's refusal (server/context-window.ts), on an injected clock:
 * remembered per upstream and model as the upstream knows it, kept by each use, gone when unused
 * for the TTL; a window configured or read from the backend is replaced only by a smaller one
 * (the backend refused over it: a `contextWindow` set past the backend's); the same settings
 * object each turn (the policies enabled are computed once per object).
 */
import { describe, expect, it } from 'vitest';
import { rememberWindow, withLearntWindow } from '../../server/context-window.js';
import { FallbackMemory } from '../../server/fallback-memory.js';
import type { ResolvedRoute } from '../../server/routing.js';

const TTL = 60;
const settings = Object.freeze({ fallbackTtlSeconds: TTL, contextWindow: 0 });
const route = {
  name: 'sim',
  upstreamModel: 'qwen',
  client: { label: 'upstream-a' },
  settings,
} as unknown as ResolvedRoute;

describe('a learnt window', () => {
  it('each use keeps it another TTL; unused for the TTL, it expires', () => {
    let now = 1_000_000;
    const memory = new FallbackMemory(() => now);
    expect(withLearntWindow(route, memory, 'sim')).toBe(route);
    rememberWindow(memory, route, 'sim', 8192);
    const first = withLearntWindow(route, memory, 'sim');
    expect(first.settings.contextWindow).toBe(8192);
    for (let turn = 0; turn < 10; turn++) {
      now += 40_000;
      const r = withLearntWindow(route, memory, 'sim');
      expect(r.settings).toBe(first.settings);
    }
    now += TTL * 1000;
    expect(withLearntWindow(route, memory, 'sim')).toBe(route);
  });

  it('per upstream and upstream model; a known window is kept unless the learnt one is smaller', () => {
    const memory = new FallbackMemory();
    rememberWindow(memory, route, 'sim', 8192);
    const other = { ...route, client: { label: 'upstream-b' } } as unknown as ResolvedRoute;
    expect(withLearntWindow(other, memory, 'sim')).toBe(other);
    const renamed = { ...route, upstreamModel: 'llama' } as unknown as ResolvedRoute;
    expect(withLearntWindow(renamed, memory, 'sim')).toBe(renamed);
    const smaller = { ...route, settings: { ...settings, contextWindow: 4096 } } as unknown as ResolvedRoute;
    expect(withLearntWindow(smaller, memory, 'sim')).toBe(smaller);
    const larger = { ...route, settings: { ...settings, contextWindow: 32768 } } as unknown as ResolvedRoute;
    expect(withLearntWindow(larger, memory, 'sim').settings.contextWindow).toBe(8192);
  });
});
