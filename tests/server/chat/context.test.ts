/**
 * ChatCall's hold on the client's body bytes (server/chat/context.ts): forwarded byte for byte
 * while the request goes upstream unchanged, dropped once the request policies rewrite it (an
 * open forced stream then holds no copy of the client's body).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import type { ChatCompletionRequest } from '../../../protocol/openai.js';
import { POLICIES } from '../../../policies/registry.js';
import { RequestAbort } from '../../../server/abort.js';
import type { PolicyEffect } from '../../../policies/registry.js';
import { ChatCall, type ChatDeps } from '../../../server/chat/context.js';
import { recordPolicyEffects } from '../../../server/chat/effects.js';
import { prepareCallRequest as prepareRequest } from '../../../server/chat/pipeline.js';
import { activePolicies } from '../../../policies/composition.js';
import { newTrace } from '../../../server/chat/trace.js';
import { loadConfig } from '../../../server/config.js';
import { FallbackMemory } from '../../../server/fallback-memory.js';
import { createMetrics } from '../../../server/metrics.js';
import { ToolLabels } from '../../../server/tool-labels.js';
import type { UpstreamClient } from '../../../server/upstream.js';

const weather = {
  type: 'function' as const,
  function: { name: 'get_weather', parameters: { type: 'object', properties: {} } },
};

function setup(body: ChatCompletionRequest, raw: Buffer | undefined) {
  const config = loadConfig({ TOOLPROOF_UPSTREAM_URL: 'http://127.0.0.1:9/v1' });
  const deps: ChatDeps = {
    config,
    metrics: createMetrics({ defaultMetrics: false }),
    memory: new FallbackMemory(),
    policies: POLICIES,
    toolLabels: new ToolLabels(),
  };
  const settings = config.defaults;
  const client = { label: 'fake' } as unknown as UpstreamClient;
  const call = new ChatCall(
    'req-1',
    body,
    raw,
    { name: 'm', settings, client },
    activePolicies(POLICIES, settings),
    new RequestAbort(),
    newTrace(),
    {},
    false,
  );
  return { call, deps };
}

// Spaces and a key order JSON.stringify would not write: the client's own bytes are recognisable.
const RAW_TEXT = '{ "messages": [{"content": "hi", "role": "user"}], "model": "m" }';

describe("the client's body bytes", () => {
  it('go upstream as they came while the policies leave the request alone', () => {
    const raw = Buffer.from(RAW_TEXT);
    const { call, deps } = setup(JSON.parse(RAW_TEXT) as ChatCompletionRequest, raw);
    expect(prepareRequest(call, deps)).toBe(call.original);
    expect(call.rawBody).toBe(raw);
  });

  it('are dropped once the request is rewritten (a forced request), and re-serialized if ever needed', () => {
    const body = { ...(JSON.parse(RAW_TEXT) as ChatCompletionRequest), tools: [weather] };
    const raw = Buffer.from(JSON.stringify(body, null, 1));
    const { call, deps } = setup(body, raw);
    expect(prepareRequest(call, deps)).not.toBe(call.original);
    expect(call.rawBody).not.toBe(raw);
    expect(JSON.parse(call.rawBody.toString())).toEqual(body);
  });

  it('are serialized on demand when a front door had none (a translated request)', () => {
    const body = JSON.parse(RAW_TEXT) as ChatCompletionRequest;
    const { call } = setup(body, undefined);
    expect(call.rawBody.toString()).toBe(JSON.stringify(body));
    expect(call.rawBody).toBe(call.rawBody);
  });
});

describe("the trace's effects", () => {
  it('are kept in an array sized to them (the trace lives as long as an open stream)', () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const { call, deps } = setup(JSON.parse(RAW_TEXT) as ChatCompletionRequest, undefined);
    const effects: PolicyEffect[] = [
      { policy: 'normalize-tool-calls', kind: 'missing-id', count: 1 },
      { policy: 'normalize-tool-calls', kind: 'missing-type', count: 1 },
    ];
    // As in a CI run where an earlier file in this worker had set Symbol.isConcatSpreadable on
    // some object: V8 then drops concat's exact-size fast path for the whole process, and the
    // array concat made grew as push's does (204 bytes a request). Sticky, like that file's.
    const spreadable: Record<symbol, unknown> = { [Symbol.isConcatSpreadable]: false };
    expect([0].concat(spreadable as never)).toHaveLength(2);
    const n = 4000;
    // The trace's array as recordPolicyEffects leaves it, or (the control) the same effects in
    // an array grown by push, as it was before the fix: 17 slots for 2.
    const fill = (kept: PolicyEffect[][], grown: boolean) => {
      for (let i = 0; i < kept.length; i++) {
        const trace = newTrace();
        recordPolicyEffects(Object.assign(Object.create(call) as ChatCall, { trace }), deps, effects);
        if (!grown) kept[i] = trace.effects;
        else {
          const g: PolicyEffect[] = [];
          for (const e of trace.effects) g.push(e);
          kept[i] = g;
        }
      }
      return kept;
    };
    const perRequest = (grown: boolean) => {
      const kept: PolicyEffect[][] = new Array(n);
      gc();
      gc();
      const before = process.memoryUsage().heapUsed;
      fill(kept, grown);
      gc();
      gc();
      const per = (process.memoryUsage().heapUsed - before) / n;
      expect(kept[n - 1]).toEqual(effects);
      return per;
    };
    // A warm-up of both loops, dropped: the code V8 compiles for a loop counts in heapUsed (a CI
    // run read 175 bytes a request against the 131 kept), not the traces'.
    fill(new Array(500), false);
    fill(new Array(500), true);
    // The least of three readings each, interleaved: what else lands in heapUsed during a reading
    // (a full run on a loaded box read 122-148 bytes for 96) only ever adds.
    let sized = Infinity;
    let grown = Infinity;
    for (let r = 0; r < 3; r++) {
      sized = Math.min(sized, perRequest(false));
      grown = Math.min(grown, perRequest(true));
    }
    // Warmed up and alone: 96 bytes a request sized to its two effects, 147 grown by push.
    expect(grown - sized).toBeGreaterThan(30);
  });
});

/** V8's %HaveSameMap: do two objects share one hidden class? */
function sameMap(a: unknown, b: unknown): boolean {
  setFlagsFromString('--allow-natives-syntax');
  return (new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: unknown, b: unknown) => boolean)(a, b);
}

/** The last two of 30,000 calls of `text` prepared in turn (V8 has optimized the path by then). */
function lastTwoPrepared(text: string): ChatCall[] {
  const { call: first, deps } = setup(JSON.parse(text) as ChatCompletionRequest, undefined);
  const seen: ChatCall[] = [];
  for (let i = 0; i < 30_000; i++) {
    const call = new ChatCall(
      'req',
      JSON.parse(text) as ChatCompletionRequest,
      undefined,
      first.route,
      first.policies,
      first.signal,
      newTrace(),
      {},
      false,
    );
    prepareRequest(call, deps);
    if (i >= 29_998) seen.push(call);
  }
  return seen;
}

describe("the request phase's hidden class", () => {
  it('stays one for every request once the request path runs hot (optimized)', () => {
    // An object spread in optimized code gave each copy a hidden class of its own (its map and
    // descriptors, ~200 bytes kept per open stream, and megamorphic access everywhere after).
    const text = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'q' }], tools: [weather] });
    const seen = lastTwoPrepared(text);
    expect(seen[1]?.phase.forcedRequired).toBe(true);
    expect(sameMap(seen[0]?.phase, seen[1]?.phase)).toBe(true);
    // The forced request (force-tool-use's copy of the client's) too: each open stream keeps it.
    expect(seen[1]?.phase.request.tool_choice).toBe('required');
    expect(sameMap(seen[0]?.phase.request, seen[1]?.phase.request)).toBe(true);
  });

  it('stays one for a streamed request too (upstream-request asks for usage on a copy)', () => {
    // upstream-request added stream_options to the forced copy with a spread: each streamed
    // request went upstream with a hidden class of its own, and every read of it (its
    // serialization, tracing's attributes) missed its inline caches (~1.5 µs for five settings).
    const text = JSON.stringify({
      model: 'm',
      messages: [{ role: 'user', content: 'q' }],
      tools: [weather],
      stream: true,
    });
    const seen = lastTwoPrepared(text);
    const [a, b] = [seen[0]!.phase.request, seen[1]!.phase.request];
    expect(b.tool_choice).toBe('required');
    expect(b.stream_options).toEqual({ include_usage: true });
    expect(Object.keys(b)).toEqual(['model', 'messages', 'tools', 'stream', 'tool_choice', 'stream_options']);
    expect(sameMap(a, b)).toBe(true);
  });
});
