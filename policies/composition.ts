/**
 * The composition of the policy table, pure: runs the policies in table order, threads values
 * from one to the next, keeps each policy's memo for its response side, and collects effects.
 * The server's pipeline and the policy tests run this one composition. A stream hook's
 * end-of-stream chunks pass through the hooks after it, so the chain behaves exactly like the
 * non-streamed composition.
 */
import { joined } from '../protocol/append-all.js';
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionRequest } from '../protocol/openai.js';
import type { ModelSettings } from '../protocol/settings.js';
import { materializeLight } from './light-delta.js';
import {
  type EffectRecord,
  type EffectShape,
  isPassThroughHook,
  type LightDelta,
  type LightFrame,
  type Policy,
  type PolicyContext,
  type ResponseDecision,
  type StreamHook,
} from './types.js';
import type { ToolproofError } from '../protocol/errors.js';
import { pushAll } from '../protocol/append-all.js';

/** Generic over the table's effects (registry.ts: PolicyEffect for the production table). */
export interface RequestPhase<E extends EffectShape = EffectShape> {
  request: ChatCompletionRequest;
  memos: Map<string, unknown>;
  effects: E[];
  error?: ToolproofError;
  /** A policy must see the response even where the server would relay it untouched (RequestDecision). */
  needsResponse?: boolean;
}

const activeCache = new WeakMap<readonly object[], WeakMap<ModelSettings, object[]>>();

/** The policies a model's (frozen) settings enable, in table order; computed once per settings object. */
export function activePolicies<P extends Policy<EffectShape>>(
  table: readonly P[],
  settings: ModelSettings,
): P[] {
  let bySettings = activeCache.get(table);
  if (!bySettings) activeCache.set(table, (bySettings = new WeakMap()));
  let list = bySettings.get(settings) as P[] | undefined;
  if (!list) bySettings.set(settings, (list = table.filter((p) => p.enabled(settings))));
  return list;
}

export function runRequestPolicies<E extends EffectShape>(
  policies: readonly Policy<E>[],
  original: ChatCompletionRequest,
  ctx: PolicyContext,
): RequestPhase<E> {
  let request = original;
  const memos = new Map<string, unknown>();
  // Sized to its elements (joined: push() reserves 17 slots, ~150 bytes, for 1-2): the phase
  // (and its effects) lives as long as the request.
  let effects: E[] = [];
  let needsResponse = false;
  for (const policy of policies) {
    if (!policy.onRequest) continue;
    const decision = policy.onRequest(request, ctx, original);
    if (decision.effects.length > 0) effects = joined(effects, decision.effects);
    if (decision.action === 'reject') return { request, memos, effects, error: decision.error };
    request = decision.request;
    if (decision.memo !== undefined) memos.set(policy.name, decision.memo);
    if (decision.needsResponse === true) needsResponse = true;
  }
  return needsResponse ? { request, memos, effects, needsResponse } : { request, memos, effects };
}

type Describer = (effect: EffectShape) => EffectRecord | undefined;
const describers = new WeakMap<readonly object[], Describer>();

/**
 * What an effect means, as the policy of `policies` that produced it declares (found by the
 * effect's own `policy` field): PolicyContext.describeEffect for a context that has none. One
 * function per policy list, so a stream's context costs no closure of its own.
 */
export function describerOf<E extends EffectShape>(policies: readonly Policy<E>[]): Describer {
  let d = describers.get(policies);
  if (!d) {
    const byName = new Map(policies.map((p) => [p.name, p]));
    d = (effect) => byName.get(effect.policy)?.describeEffect?.(effect as E);
    describers.set(policies, d);
  }
  return d;
}

export function runResponsePolicies<E extends EffectShape>(
  policies: readonly Policy<E>[],
  response: ChatCompletion,
  ctx: PolicyContext,
  memos: Map<string, unknown>,
  sent: ChatCompletionRequest,
  original: ChatCompletionRequest,
  /** Effects are appended here as each policy runs (later policies' memos may read them). */
  effects: E[] = [],
): ResponseDecision<E> {
  let current = response;
  if (!ctx.describeEffect) ctx = { ...ctx, describeEffect: describerOf(policies) };
  for (const policy of policies) {
    if (!policy.onResponse) continue;
    const decision = policy.onResponse(current, ctx, memos.get(policy.name), sent, original);
    pushAll(effects, decision.effects);
    if (decision.action === 'retry') return { ...decision, effects };
    current = decision.response;
  }
  return { action: 'continue', response: current, effects };
}

export interface StreamChain<E extends EffectShape = EffectShape> {
  push(chunk: ChatCompletionChunk): ChatCompletionChunk[];
  /**
   * The fast lane (policies/light-delta.ts): push(materializeLight(light, frame)), with
   * the answer kept light while every hook can. Returns the light delta that comes out, null
   * when nothing does, or the chunks of the full path once a hook could not take it light.
   */
  pushLight(light: LightDelta, frame: LightFrame): LightDelta | null | ChatCompletionChunk[];
  end(): {
    chunks: ChatCompletionChunk[];
    effects: E[];
    retry?: { request: ChatCompletionRequest; reason: string };
  };
  /** A hook knows the output so far cannot become a valid answer (StreamHook.unrecoverable). */
  unrecoverable(): boolean;
}

export function createStreamChain<E extends EffectShape>(
  policies: readonly Policy<E>[],
  ctx: PolicyContext,
  memos: Map<string, unknown>,
  sent: ChatCompletionRequest,
  original: ChatCompletionRequest,
  /** End-of-stream effects are appended here as each hook ends (see runResponsePolicies). */
  liveEffects: E[] = [],
): StreamChain<E> {
  const hooks: StreamHook<E>[] = [];
  // Hooks may ask whether the chain already knows the output is discarded (corrective-retry/stream.ts).
  let chain: HookChain<E> | undefined;
  const hookCtx: PolicyContext = {
    ...ctx,
    discardDecided: () => chain?.unrecoverable() ?? false,
    describeEffect: ctx.describeEffect ?? describerOf(policies),
  };
  for (const policy of policies) {
    if (!policy.createStreamHook) continue;
    const hook = policy.createStreamHook(hookCtx, memos.get(policy.name), sent, original);
    // A pass-through hook returns each chunk as it is and ends with nothing: leaving it out
    // changes no output, and saves a call per chunk.
    if (!isPassThroughHook(hook)) hooks.push(hook);
  }
  // slice() sizes the array to the hooks: the chain is held for the stream's life.
  chain = new HookChain(hooks.slice(), liveEffects);
  return chain;
}

/** A class rather than closures: each open stream holds one chain object, the methods are shared. */
class HookChain<E extends EffectShape> implements StreamChain<E> {
  constructor(
    private readonly hooks: StreamHook<E>[],
    private readonly liveEffects: E[],
  ) {}

  private from(start: number, chunks: ChatCompletionChunk[]): ChatCompletionChunk[] {
    const hooks = this.hooks;
    let cur = chunks;
    for (let i = start; i < hooks.length && cur.length > 0; i++) {
      const hook = hooks[i]!;
      // One chunk in (the usual case per delta): the hook's own array is the next input.
      if (cur.length === 1) {
        cur = hook.onChunk(cur[0]!);
        continue;
      }
      const next: ChatCompletionChunk[] = [];
      for (const c of cur) for (const o of hook.onChunk(c)) next.push(o);
      cur = next;
    }
    return cur;
  }

  push(chunk: ChatCompletionChunk): ChatCompletionChunk[] {
    return this.from(0, [chunk]);
  }

  unrecoverable(): boolean {
    for (const h of this.hooks) if (h.unrecoverable?.()) return true;
    return false;
  }

  pushLight(light: LightDelta, frame: LightFrame): LightDelta | null | ChatCompletionChunk[] {
    const hooks = this.hooks;
    let cur = light;
    for (let i = 0; i < hooks.length; i++) {
      const hook = hooks[i]!;
      const next = hook.onLight?.(cur, frame);
      // The hook left its state untouched: it gets the chunk the light delta stands for.
      if (next === undefined) return this.from(i, [materializeLight(cur, frame)]);
      if (next === null) return null;
      cur = next;
    }
    return cur;
  }

  end(): ReturnType<StreamChain<E>['end']> {
    const hooks = this.hooks;
    const out: ChatCompletionChunk[] = [];
    const effects: E[] = [];
    let retry: { request: ChatCompletionRequest; reason: string } | undefined;
    for (let i = 0; i < hooks.length; i++) {
      const end = hooks[i]!.onEnd();
      pushAll(effects, end.effects);
      pushAll(this.liveEffects, end.effects);
      if (end.retry && !retry) retry = end.retry;
      for (const c of this.from(i + 1, end.chunks)) out.push(c);
    }
    return retry ? { chunks: out, effects, retry } : { chunks: out, effects };
  }
}
