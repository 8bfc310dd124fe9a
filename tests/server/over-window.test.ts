/**
 * A prompt an upstream refused as over its window, remembered (server/over-window.ts): a later
 * request that begins with it (the same tools, tool_choice and max tokens, its messages first)
 * is over too; a prompt it begins with, another session's, one with other tools or another
 * max_tokens is not. Per upstream, model and key, kept by each use, gone after the TTL unused.
 * Hashing is linear in the prompt (x1 vs x4), and only paid by a model and key that had such a
 * refusal.
 */
import { describe, expect, it } from 'vitest';
import type { ChatCompletionRequest, ChatMessage } from '../../protocol/openai.js';
import { FallbackMemory } from '../../server/fallback-memory.js';
import {
  overWindowBefore,
  promptDigests,
  refusedBefore,
  rememberBytesPerToken,
  rememberOverWindow,
} from '../../server/over-window.js';
import type { ResolvedRoute } from '../../server/routing.js';
import { compareCosts, cpuMsOf, measureScaling, withinBudget } from '../support/cost-scaling.js';

const TTL = 60;
const route = {
  name: 'sim',
  upstreamModel: 'qwen',
  client: { label: 'upstream-a' },
  settings: Object.freeze({ fallbackTtlSeconds: TTL, contextWindow: 8192 }),
} as unknown as ResolvedRoute;
const tools = [{ type: 'function' as const, function: { name: 'run', parameters: { type: 'object' } } }];

function session(turns: number, first = 'Look at the logs.'): ChatMessage[] {
  const m: ChatMessage[] = [{ role: 'user', content: first }];
  for (let i = 0; i < turns; i++)
    m.push(
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'run', arguments: `{"i":${i}}` } }],
      },
      { role: 'tool', tool_call_id: `c${i}`, content: `result ${i} `.repeat(50) },
    );
  return m;
}
const req = (messages: ChatMessage[], extra: Partial<ChatCompletionRequest> = {}): ChatCompletionRequest => ({
  model: 'sim',
  messages,
  tools,
  ...extra,
});

describe("the bytes a token a refusal's count gave", () => {
  it('held with the refused prompt: a later turn of the session reads it, another session not; the latest prefix wins', () => {
    const memory = new FallbackMemory(() => 1_000_000);
    const refused = req(session(5));
    expect(refusedBefore(memory, route, refused)).toEqual({ over: false });
    rememberBytesPerToken(memory, route, refused, 3.875);
    const later = req([...session(5), { role: 'user', content: 'go on' }]);
    expect(refusedBefore(memory, route, later)).toEqual({ over: false, bytesPerToken: 3.875 });
    expect(refusedBefore(memory, route, req(session(6, 'Read the docs.')))).toEqual({ over: false });
    expect(refusedBefore(memory, route, later, 'team-b')).toEqual({ over: false });
    // Both kinds at once, hashed once.
    rememberOverWindow(memory, route, later);
    expect(refusedBefore(memory, route, req([...later.messages, { role: 'user', content: 'and?' }]))).toEqual(
      {
        over: true,
        bytesPerToken: 3.875,
      },
    );
  });
});

describe('a prompt refused as over the window', () => {
  it('a later turn that begins with it is over; a shorter prompt, another session, other tools or max_tokens are not', () => {
    let now = 1_000_000;
    const memory = new FallbackMemory(() => now);
    const refused = req(session(5));
    expect(overWindowBefore(memory, route, refused)).toBe(false);
    rememberOverWindow(memory, route, refused);
    expect(overWindowBefore(memory, route, refused)).toBe(true);
    const later = req([
      ...session(5),
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: 'go on' },
    ]);
    expect(overWindowBefore(memory, route, later)).toBe(true);
    expect(overWindowBefore(memory, route, req(session(4)))).toBe(false);
    expect(overWindowBefore(memory, route, req(session(6, 'Read the docs.')))).toBe(false);
    expect(overWindowBefore(memory, route, req(session(6), { tools: [] }))).toBe(false);
    expect(overWindowBefore(memory, route, req(session(6), { max_tokens: 100 }))).toBe(false);
    // the compaction request: the whole history and a question, no tools
    expect(overWindowBefore(memory, route, { model: 'sim', messages: session(6) })).toBe(false);
    // another key's, another upstream's
    expect(overWindowBefore(memory, route, later, 'team-b')).toBe(false);
    const other = { ...route, client: { label: 'upstream-b' } } as unknown as ResolvedRoute;
    expect(overWindowBefore(memory, other, later)).toBe(false);
    // kept by each use; unused for the TTL, gone
    now += (TTL - 1) * 1000;
    expect(overWindowBefore(memory, route, later)).toBe(true);
    now += (TTL - 1) * 1000;
    expect(overWindowBefore(memory, route, later)).toBe(true);
    now += (TTL + 1) * 1000;
    expect(overWindowBefore(memory, route, later)).toBe(false);
  });

  it('one digest a message, each the prompt up to it', () => {
    const a = promptDigests(req(session(2)));
    const b = promptDigests(req(session(3)));
    expect(a).toHaveLength(5);
    expect(b.slice(0, 5)).toEqual(a);
    expect(promptDigests(req(session(2), { max_tokens: 5 }))[0]).not.toBe(a[0]);
  });

  it('costs in proportion to the prompt, x1 vs x4 (messages), and nothing without such a refusal', () => {
    const memory = new FallbackMemory();
    rememberOverWindow(memory, route, req(session(1, 'another session')));
    const run = (r: ChatCompletionRequest) => overWindowBefore(memory, route, r);
    const s = measureScaling((n) => req(session(n)), run, { from: 64, max: 1 << 16 });
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
    // Another model's refusal: the mark is not this one's, the prompt is not hashed.
    const quiet = new FallbackMemory();
    rememberOverWindow(
      quiet,
      { ...route, upstreamModel: 'llama' } as unknown as ResolvedRoute,
      req(session(1)),
    );
    const big = req(session(20_000));
    expect(overWindowBefore(quiet, route, big)).toBe(false);
    // Its lookup costs a tenth of hashing that prompt at most: one pair (~0.02 against ~110 ms),
    // GC pauses left out, more pairs only when over (a single process.cpuUsage read each until
    // now: a GC in the lookup's read failed it).
    const c = compareCosts(
      () => cpuMsOf(() => overWindowBefore(quiet, route, big)),
      () => cpuMsOf(() => promptDigests(big)),
      (lookup, hashing) => lookup < hashing / 10,
      1,
    );
    expect(c.ok, JSON.stringify(c)).toBe(true);
  });
});
