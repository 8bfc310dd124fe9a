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

/** The memory's name of one refused prompt (`digest`), or with none, of the mark that some is held. */
function keyOf(route: ResolvedRoute, model: unknown, digest: string, key: string | undefined): string {
  return memoryModel(`${route.upstreamModel ?? String(model)}\u0000over-window\u0000${digest}`, key);
}

/**
 * Hashing a request costs about 4 ms a megabyte of prompt: only requests to a model and key that
 * had a prompt refused for its length within the TTL pay it (one lookup of this mark otherwise).
 */
const MARK = '';

/** Remember that `route`'s upstream refused `request` (the client's) as over its model's window. */
export function rememberOverWindow(
  memory: FallbackMemory | undefined,
  route: ResolvedRoute,
  request: ChatCompletionRequest,
  key?: string,
): void {
  const digest = promptDigests(request).at(-1);
  if (!memory || digest === undefined) return;
  const ttl = route.settings.fallbackTtlSeconds;
  memory.remember(route.client.label, keyOf(route, request.model, digest, key), ttl, route.name);
  memory.remember(route.client.label, keyOf(route, request.model, MARK, key), ttl, route.name);
}

/**
 * Whether `request` begins with a prompt `route`'s upstream refused as over the window (that one
 * remembered another TTL: the session in use keeps it). Looked up from the last message back: the
 * refused prompt is most often the previous turn's.
 */
export function overWindowBefore(
  memory: FallbackMemory | undefined,
  route: ResolvedRoute,
  request: ChatCompletionRequest,
  key?: string,
): boolean {
  if (!memory || memory.size === 0) return false;
  const mark = keyOf(route, request.model, MARK, key);
  if (!memory.isActive(route.client.label, mark)) return false;
  const digests = promptDigests(request);
  for (let i = digests.length - 1; i >= 0; i--) {
    const name = keyOf(route, request.model, digests[i]!, key);
    if (!memory.isActive(route.client.label, name)) continue;
    memory.remember(route.client.label, name, route.settings.fallbackTtlSeconds, route.name);
    memory.remember(route.client.label, mark, route.settings.fallbackTtlSeconds, route.name);
    return true;
  }
  return false;
}
