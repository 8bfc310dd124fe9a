/**
 * Prompts an upstream refused as over its model's window, remembered so that the same session's
 * later turns are cut from the start instead of refused once more each (kit/overflow.ts: a prompt
 * under six bytes a token of the window cannot be known over it before the backend says so, and
 * each later turn, which only appends, was sent whole, refused, and sent again cut).
 *
 * What is remembered is exact, not an estimate: the digest of the client's request as it was
 * refused (its tools, tool_choice and max tokens, then its messages in order). A later request
 * whose messages begin with that prompt's, with the same tools and max tokens, holds it whole, so
 * its prompt is at least as long: over the window too. Another session, a compaction request (no
 * tools) or a changed max_tokens (vLLM counts it against the window) match no digest and are
 * judged on their own. Per upstream, model and key, for the route's fallbackTtlSeconds from its
 * last use (fallback-memory.ts).
 *
 * Beside it, the UTF-8 bytes a token the refusal's count of that prompt gave (its own text, its
 * own tokenizer): the session's first such count is the one its later turns judge a turn over the
 * window by (policies/truncation cutTurnsOverWindow), so a later refusal, whose count of a longer
 * prompt gives another ratio, cannot turn a decision of an earlier turn (docs/prefix.md, 11).
 */
import { createHash } from 'node:crypto';
import type { ChatCompletionRequest } from '../protocol/openai.js';
import { type FallbackMemory, memoryModel } from './fallback-memory.js';
import type { ResolvedRoute } from './routing.js';

/**
 * The digest of `request`'s prompt up to and including each of its messages, in order: one pass
 * (a running SHA-256, copied at each message), linear in the request's size.
 */
export function promptDigests(request: ChatCompletionRequest): string[] {
  const hash = createHash('sha256');
  hash.update(
    JSON.stringify([
      request.tools ?? null,
      request.tool_choice ?? null,
      request.max_tokens ?? null,
      request.max_completion_tokens ?? null,
    ]) ?? '',
  );
  const messages: unknown = request.messages;
  if (!Array.isArray(messages)) return [];
  const out: string[] = [];
  for (const m of messages) {
    hash.update(JSON.stringify(m) ?? 'null');
    hash.update('\u0000');
    out.push(hash.copy().digest('base64'));
  }
  return out;
}

/** What is remembered of a refused prompt: that it was over, or the bytes a token its count gave. */
type Kind = 'over-window' | 'bytes-per-token';

/** The memory's name of one refused prompt (`digest`), or with none, of the mark that some is held. */
function keyOf(
  route: ResolvedRoute,
  model: unknown,
  digest: string,
  key: string | undefined,
  kind: Kind = 'over-window',
): string {
  return memoryModel(`${route.upstreamModel ?? String(model)}\u0000${kind}\u0000${digest}`, key);
}

/**
 * Hashing a request costs about 4 ms a megabyte of prompt: only requests to a model and key that
 * had a prompt refused for its length within the TTL pay it (one lookup of this mark otherwise).
 */
const MARK = '';

/** Remember `value` (or none) under the digest of `request`'s whole prompt, and the mark. */
function rememberPrompt(
  memory: FallbackMemory | undefined,
  route: ResolvedRoute,
  request: ChatCompletionRequest,
  key: string | undefined,
  kind: Kind,
  value?: number,
): void {
  const digest = promptDigests(request).at(-1);
  if (!memory || digest === undefined) return;
  const ttl = route.settings.fallbackTtlSeconds;
  memory.remember(route.client.label, keyOf(route, request.model, digest, key, kind), ttl, route.name, value);
  memory.remember(route.client.label, keyOf(route, request.model, MARK, key, kind), ttl, route.name);
}

/** Remember that `route`'s upstream refused `request` (the client's) as over its model's window. */
export function rememberOverWindow(
  memory: FallbackMemory | undefined,
  route: ResolvedRoute,
  request: ChatCompletionRequest,
  key?: string,
): void {
  rememberPrompt(memory, route, request, key, 'over-window');
}

/**
 * Remember the UTF-8 bytes a token (policies/kit/overflow.ts measuredBytesPerToken) that
 * `route`'s upstream's count of `request` (the client's, refused as over the window) gave, so the
 * session's later turns, which begin with it, judge their turns by the same ratio (bytesBefore).
 */
export function rememberBytesPerToken(
  memory: FallbackMemory | undefined,
  route: ResolvedRoute,
  request: ChatCompletionRequest,
  bytesPerToken: number,
  key?: string,
): void {
  rememberPrompt(memory, route, request, key, 'bytes-per-token', bytesPerToken);
}

/** What the memory holds of the prompts `request` begins with (refusedBefore). */
export interface RefusedBefore {
  /** It begins with a prompt the upstream refused as over the window (and cut). */
  over: boolean;
  /** The bytes a token the count of the latest refused prompt it begins with gave. */
  bytesPerToken?: number;
}

/**
 * The latest of `request`'s prompts (`digests`, from the last message back: the refused prompt is
 * most often the previous turn's) remembered as `kind`, kept another TTL (the session in use
 * keeps it); undefined when none is.
 */
function latest(
  memory: FallbackMemory,
  route: ResolvedRoute,
  request: ChatCompletionRequest,
  key: string | undefined,
  kind: Kind,
  digests: () => string[],
): { value: number | undefined } | undefined {
  const mark = keyOf(route, request.model, MARK, key, kind);
  if (!memory.isActive(route.client.label, mark)) return undefined;
  const all = digests();
  for (let i = all.length - 1; i >= 0; i--) {
    const name = keyOf(route, request.model, all[i]!, key, kind);
    if (!memory.isActive(route.client.label, name)) continue;
    const value = memory.valueOf(route.client.label, name);
    const ttl = route.settings.fallbackTtlSeconds;
    memory.remember(route.client.label, name, ttl, route.name, value);
    memory.remember(route.client.label, mark, ttl, route.name);
    return { value };
  }
  return undefined;
}

/**
 * What the memory holds of the prompts `request` begins with: whether one was refused as over the
 * window (a later request whose messages begin with it, with the same tools and max tokens, is
 * over it too), and the bytes a token its count gave. Hashed once, and only when a mark is held.
 */
export function refusedBefore(
  memory: FallbackMemory | undefined,
  route: ResolvedRoute,
  request: ChatCompletionRequest,
  key?: string,
): RefusedBefore {
  if (!memory || memory.size === 0) return { over: false };
  let held: string[] | undefined;
  const digests = () => (held ??= promptDigests(request));
  const over = latest(memory, route, request, key, 'over-window', digests) !== undefined;
  const bytes = latest(memory, route, request, key, 'bytes-per-token', digests)?.value;
  return { over, ...(bytes !== undefined ? { bytesPerToken: bytes } : {}) };
}

/** Whether `request` begins with a prompt `route`'s upstream refused as over the window. */
export function overWindowBefore(
  memory: FallbackMemory | undefined,
  route: ResolvedRoute,
  request: ChatCompletionRequest,
  key?: string,
): boolean {
  return refusedBefore(memory, route, request, key).over;
}
