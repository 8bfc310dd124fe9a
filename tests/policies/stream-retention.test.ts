/**
 * What an open stream keeps alive: each hook holds its own state, not the chunks it was shown.
 * A held stream lives for minutes, so a parsed chunk pinned by a closure or a template is paid
 * for by every open stream (bench/heap-streams.ts measures the whole; these pin the regressions).
 * Uses a WeakRef and a forced full GC: the chunk must be collectable while the hook is alive.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import type { ChatCompletionChunk } from '../../protocol/openai.js';
import { leakRecovery } from '../../policies/leak-recovery/index.js';
import { normalizeToolCallsPolicy } from '../../policies/normalize-tool-calls/index.js';
import { createHeldCallsStreamHook } from '../../policies/corrective-retry/stream.js';
import type { Policy, StreamHook } from '../../policies/types.js';
import { createStreamChain, runRequestPolicies } from '../../policies/composition.js';
import { chunk, ctxWith, request, weatherTool } from './helpers.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Feeds a fresh first chunk to `hook`; true when that chunk is gone after a full GC. */
async function firstChunkCollected(hook: StreamHook, make: () => ChatCompletionChunk): Promise<boolean> {
  const ref = ((): WeakRef<ChatCompletionChunk> => {
    const first = make();
    hook.onChunk(first);
    return new WeakRef(first);
  })();
  // A WeakRef keeps its target alive until the current job ends: collect after a macrotask.
  await new Promise((resolve) => setTimeout(resolve, 0));
  gc();
  gc();
  return ref.deref() === undefined;
}

const callHeader = () =>
  chunk({
    tool_calls: [
      { index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } },
    ],
  });

describe('an open stream does not keep the chunks it was shown', () => {
  it('leak recovery: the lazy engine of a choice keeps the response id, not the first chunk', async () => {
    const original = request({ tools: [weatherTool] });
    const hook = leakRecovery.createStreamHook!(ctxWith(), undefined, original, original);
    expect(await firstChunkCollected(hook, callHeader)).toBe(true);
    // Still a working hook afterwards: the structured call's arguments pass, renumbered as before.
    const out = hook.onChunk(chunk({ tool_calls: [{ index: 0, function: { arguments: '{}' } }] }));
    expect(out[0]?.choices[0]?.delta.tool_calls?.[0]?.function?.arguments).toBe('{}');
  });

  it('held calls: the template for the calls sent at the end keeps no choices', async () => {
    const hook = createHeldCallsStreamHook(() => ({ effects: [] }), { hold: true });
    expect(await firstChunkCollected(hook, callHeader)).toBe(true);
    // The calls still go out at the end with the first chunk's identity.
    const end = hook.onEnd();
    expect(end.chunks[0]).toMatchObject({ id: 'chatcmpl-s', model: 'm', created: 1 });
    expect(end.chunks[0]?.choices[0]?.delta.tool_calls?.[0]?.function?.name).toBe('get_weather');
  });
});

/**
 * Heap kept per open hook, averaged over many: a forced full GC before and after, so only what
 * the hooks hold counts. The bounds sit between the sizes before and after each cut, with room
 * for V8's own variation; they fail when a per-stream Set, Map or 17-slot array comes back.
 */
/**
 * Heap bytes each of `n` results of `make` keeps, the least of three measures: what the process
 * allocates beside them during one (code and feedback for a function optimized mid-loop, in a
 * worker whose earlier files left it another shape) only adds, and a result that keeps more
 * keeps it in every measure (a full run read 339 bytes once for the 253 the effects keep).
 * The measures stop at the first under `bound`, the caller's: the least of three is under it
 * exactly when one of them is (each measure takes four full GCs).
 */
function heapPerItem(make: () => unknown, bound: number, n = 4000): number {
  let least = Number.POSITIVE_INFINITY;
  for (let k = 0; k < 3 && least >= bound; k++) least = Math.min(least, heapPerItemOnce(make, n));
  return least;
}

function heapPerItemOnce(make: () => unknown, n: number): number {
  gc();
  gc();
  const before = process.memoryUsage().heapUsed;
  const items: unknown[] = new Array(n);
  for (let i = 0; i < n; i++) items[i] = make();
  gc();
  gc();
  const after = process.memoryUsage().heapUsed;
  expect(items.length).toBe(n);
  return (after - before) / n;
}

describe('what an open stream keeps per hook', () => {
  it('normalize: one named call keeps no Set of ids and no 17-slot call array', () => {
    const per = heapPerItem(() => {
      const hook = normalizeToolCallsPolicy.createStreamHook!(ctxWith(), undefined, request(), request());
      hook.onChunk(callHeader());
      return hook;
    }, 550);
    // 725 bytes with a Set of ids and a call array grown by push(); 386 without.
    expect(per).toBeLessThan(550);
  });

  it('normalize: a text-only stream keeps no per-choice state', () => {
    const per = heapPerItem(() => {
      const hook = normalizeToolCallsPolicy.createStreamHook!(ctxWith(), undefined, request(), request());
      hook.onChunk(chunk({ content: 'hello' }));
      return hook;
    }, 330);
    // 475 bytes with a choice state made for every chunk; 188 without.
    expect(per).toBeLessThan(330);
  });
});

describe('what an open stream keeps per request', () => {
  // Four policies that each rewrite nothing, note one effect and hook the stream.
  const hook: StreamHook = { onChunk: (c) => [c], onEnd: () => ({ chunks: [], effects: [] }) };
  const table: Policy[] = ['a', 'b', 'c', 'd'].map((name) => ({
    name,
    enabled: () => true,
    onRequest: (req) => ({ action: 'continue', request: req, effects: [{ policy: name, kind: 'seen' }] }),
    createStreamHook: () => hook,
  }));

  it('the request phase keeps its effects in an array sized to them', () => {
    const ctx = ctxWith();
    const original = request();
    const per = heapPerItem(() => runRequestPolicies(table, original, ctx).effects, 320);
    // 388 bytes (the array and four effect objects) grown by push (17 slots); 253 sized to them.
    expect(per).toBeLessThan(320);
  });

  it('the hook chain keeps its hooks in an array sized to them', () => {
    const ctx = ctxWith();
    const original = request();
    const memos = new Map<string, unknown>();
    const per = heapPerItem(() => createStreamChain(table, ctx, memos, original, original), 230);
    // 268 bytes with the hooks in an array grown by push (17 slots); 194 sized to them.
    expect(per).toBeLessThan(230);
  });
});
