/**
 * What upstreams refused of their models (server/chat/refusals.ts), on an injected clock: a
 * memory in use stays (a session keeps its bytes, docs/prefix.md exception 7); one left unused
 * for the TTL expires.
 */
import { describe, expect, it } from 'vitest';
import type { PolicyEffect } from '../../../policies/registry.js';
import type { Policy } from '../../../policies/types.js';
import { rememberedRefusals, rememberRefusal } from '../../../server/chat/refusals.js';
import { FallbackMemory } from '../../../server/fallback-memory.js';
import type { ResolvedRoute } from '../../../server/routing.js';

const TTL = 60;
const route = {
  name: 'sim',
  upstreamModel: 'qwen',
  client: { label: 'upstream-a' },
  settings: { fallbackTtlSeconds: TTL },
} as unknown as ResolvedRoute;
const policies = [
  { name: 'images', refusal: { fact: 'images' } },
  { name: 'schema-keywords', refusal: { fact: 'schema-keywords' } },
  { name: 'other' },
] as unknown as Policy<PolicyEffect>[];

describe('refusals remembered', () => {
  it('each use keeps the memory another TTL, for every fact; unused for the TTL, it expires', () => {
    let now = 1_000_000;
    const memory = new FallbackMemory(() => now);
    rememberRefusal(memory, route, 'sim', 'images');
    rememberRefusal(memory, route, 'sim', 'schema-keywords');
    // Turns every 40 s, ten times past the TTL: each finds the refusals it used last time.
    for (let turn = 0; turn < 10; turn++) {
      now += 40_000;
      expect(rememberedRefusals(policies, memory, route, 'sim')).toEqual(
        new Set(['images', 'schema-keywords']),
      );
    }
    // Left unused for the TTL: gone.
    now += TTL * 1000;
    expect(rememberedRefusals(policies, memory, route, 'sim').size).toBe(0);
  });

  it('a use refreshes only what was still remembered, not what expired', () => {
    let now = 0;
    const memory = new FallbackMemory(() => now);
    rememberRefusal(memory, route, 'sim', 'images');
    now += 30_000;
    rememberRefusal(memory, route, 'sim', 'schema-keywords');
    now += 40_000; // images expired at 60 s; the keywords are used and kept
    expect(rememberedRefusals(policies, memory, route, 'sim')).toEqual(new Set(['schema-keywords']));
    now += 59_000;
    expect(rememberedRefusals(policies, memory, route, 'sim')).toEqual(new Set(['schema-keywords']));
  });
});
