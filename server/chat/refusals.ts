/**
 * What upstreams refused of their models (Policy.refusal: images, schema keywords), remembered per
 * upstream and model as the upstream knows it, for the route's fallbackTtlSeconds from its last
 * use: a later turn goes out already rewritten, with the same bytes as the turn that was refused
 * and sent again, and each turn that uses the memory keeps it another TTL (a session in use keeps
 * its bytes; a TTL counted from the refusal sent the whole schemas again mid-session, docs/prefix.md).
 * server/ knows no fact by name: each is a policy's.
 */
import type { Policy } from '../../policies/types.js';
import type { PolicyEffect } from '../../policies/registry.js';
import { createHash } from 'node:crypto';
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { StringSet } from '../../protocol/string-set.js';
import { type FallbackMemory, memoryModel } from '../fallback-memory.js';
import { promptDigests } from '../over-window.js';
import type { ResolvedRoute } from '../routing.js';

const NONE: ReadonlySet<string> = new Set();

/** A model name longer than this is held by its digest (the client picks it, up to the body limit). */
const LONG_MODEL = 256;

/**
 * The model's part of the memory's names: its upstream name, a long one as its SHA-256. Made once
 * a request: a lookup per image each held the whole name, which the memory hashed again each time
 * (8,000 image parts and a 256 KB model name: 2 GB hashed, 24 s of CPU; tests/redteam/refusal-memory-long-model).
 */
function modelPart(route: ResolvedRoute, model: unknown): string {
  const name = route.upstreamModel ?? String(model);
  return name.length > LONG_MODEL
    ? `\u0000sha256:${createHash('sha256').update(name).digest('base64')}`
    : name;
}

/** The memory's model key: the model's part, the fact, and the asking key (memoryModel). */
function keyOf(part: string, fact: string, key: string | undefined): string {
  return memoryModel(`${part}\u0000${fact}`, key);
}

/**
 * The facts `route`'s upstream refused of this model that are still remembered, each remembered
 * for another TTL from now: the request about to go uses it.
 */
export function rememberedRefusals(
  policies: readonly Policy<PolicyEffect>[],
  memory: FallbackMemory | undefined,
  route: ResolvedRoute,
  model: unknown,
  /** The asking key's name: what another key's requests taught is theirs (memoryModel). */
  key?: string,
): ReadonlySet<string> {
  if (!memory || memory.size === 0) return NONE;
  const part = modelPart(route, model);
  let facts: Set<string> | undefined;
  for (const p of policies) {
    const fact = p.refusal?.fact;
    if (fact === undefined || !memory.isActive(route.client.label, keyOf(part, fact, key))) continue;
    remember(memory, route, part, fact, key);
    (facts ??= new Set()).add(fact);
  }
  return facts ?? NONE;
}

/** Remember that `route`'s upstream refused `fact` of this model. */
export function rememberRefusal(
  memory: FallbackMemory | undefined,
  route: ResolvedRoute,
  model: unknown,
  fact: string,
  key?: string,
): void {
  if (memory) remember(memory, route, modelPart(route, model), fact, key);
}

function remember(
  memory: FallbackMemory,
  route: ResolvedRoute,
  part: string,
  fact: string,
  key: string | undefined,
): void {
  memory.remember(route.client.label, keyOf(part, fact, key), route.settings.fallbackTtlSeconds, route.name);
}

/** The memory's key of one refused value (UpstreamRefusal.values): long values are hashed by the memory. */
const valueFact = (fact: string, value: string): string => `${fact}\u0000value\u0000${value}`;

/**
 * The values of `request` (each policy's UpstreamRefusal.values.candidates) that `route`'s upstream
 * refused of this model before (an image URL it could not fetch), each remembered for another
 * TTL: the request about to go uses it. Looked up one by one: as many as the request carries.
 */
export function rememberedValues(
  policies: readonly Policy<PolicyEffect>[],
  memory: FallbackMemory | undefined,
  route: ResolvedRoute,
  request: ChatCompletionRequest,
  key?: string,
): StringSet {
  const out = new StringSet();
  if (!memory || memory.size === 0) return out;
  const part = modelPart(route, request.model);
  let held: string[] | undefined;
  const digests = () => (held ??= promptDigests(request));
  for (const p of policies) {
    const refusal = p.refusal;
    if (refusal?.values === undefined) continue;
    if (refusal.values.ofPrompt === true) {
      valuesOfPrompt(
        memory,
        route,
        part,
        refusal.fact,
        refusal.values.candidates(request),
        digests,
        key,
        out,
      );
      continue;
    }
    for (const value of refusal.values.candidates(request)) {
      const fact = valueFact(refusal.fact, value);
      if (!memory.isActive(route.client.label, keyOf(part, fact, key))) continue;
      remember(memory, route, part, fact, key);
      out.add(value);
    }
  }
  return out;
}

/**
 * Remember that `route`'s upstream refused `values` of this model (UpstreamRefusal.values: one
 * refusal may name every image of the request), the model's part made once for all of them.
 */
export function rememberRefusedValues(
  memory: FallbackMemory | undefined,
  route: ResolvedRoute,
  model: unknown,
  fact: string,
  values: readonly string[],
  key?: string,
): void {
  if (!memory || values.length === 0) return;
  const part = modelPart(route, model);
  for (const value of values) remember(memory, route, part, valueFact(fact, value), key);
}

/**
 * The memory's key of a prompt (its digest, server/over-window.ts promptDigests) that `fact`'s
 * values were refused of (UpstreamRefusal.values.ofPrompt); with none, the mark that some is held.
 */
const promptFact = (fact: string, digest = ''): string => `${fact}\u0000prompt\u0000${digest}`;

/**
 * The `candidates` refused of the latest prompt `request` begins with (`digests`, from its last
 * message back) that refused values of `fact`, into `out`, each kept another TTL. A request whose
 * messages begin with a refused one's, with the same tools, tool_choice and max tokens, is no
 * shorter: refused again for them. Hashed only while a mark is held for this model and key, and
 * one prompt read: as many lookups as the request has messages and candidates.
 */
function valuesOfPrompt(
  memory: FallbackMemory,
  route: ResolvedRoute,
  part: string,
  fact: string,
  candidates: readonly string[],
  digests: () => string[],
  key: string | undefined,
  out: StringSet,
): void {
  const label = route.client.label;
  if (candidates.length === 0 || !memory.isActive(label, keyOf(part, promptFact(fact), key))) return;
  const all = digests();
  for (let i = all.length - 1; i >= 0; i--) {
    const prompt = promptFact(fact, all[i]!);
    if (!memory.isActive(label, keyOf(part, prompt, key))) continue;
    for (const value of candidates) {
      if (!memory.isActive(label, keyOf(part, valueFact(prompt, value), key))) continue;
      remember(memory, route, part, valueFact(prompt, value), key);
      out.add(value);
    }
    remember(memory, route, part, prompt, key);
    remember(memory, route, part, promptFact(fact), key);
    return;
  }
}

/**
 * Remember that `route`'s upstream refused `values` of `request`'s prompt (the client's request:
 * UpstreamRefusal.values.ofPrompt), under the digest of its whole prompt, and the mark.
 */
export function rememberPromptValues(
  memory: FallbackMemory | undefined,
  route: ResolvedRoute,
  request: ChatCompletionRequest,
  fact: string,
  values: readonly string[],
  key?: string,
): void {
  const digest = promptDigests(request).at(-1);
  if (!memory || values.length === 0 || digest === undefined) return;
  const part = modelPart(route, request.model);
  const prompt = promptFact(fact, digest);
  for (const value of values) remember(memory, route, part, valueFact(prompt, value), key);
  remember(memory, route, part, prompt, key);
  remember(memory, route, part, promptFact(fact), key);
}
