/**
 * upstream-request (request side, LAST): what every rewritten request needs on its way to the
 * upstream, whatever rewrote it.
 * - The model's name on the upstream (models.<name>.upstreamModel, PolicyContext.upstreamModel).
 * - A rewritten stream asks for usage (`stream_options.include_usage`), as the JSON body always
 *   carries it: the cache and discarded-token figures then hold for streams too (the client gets
 *   usage only when it asked: server/front-doors/chat/output.ts). Added after the messages and
 *   tools, so no byte of the prompt moves. So does a stream whose key counts tokens
 *   (PolicyContext.streamUsage), rewritten or not.
 * A request no policy rewrote, no rename applies to and no key counts the tokens of is left as it
 * is: the client's bytes go upstream untouched. Last in the table so that it sees every other policy's rewrite.
 */
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import type { Policy } from '../types.js';

export const UPSTREAM_REQUEST_POLICY = 'upstream-request';

/**
 * A copy of `value`, keys in a spread's order. Object.assign rather than a spread (as
 * force-tool-use's forcedCopy): once optimized, a spread gave every copy a hidden class of its
 * own, and each read of the request on its way upstream (its serialization, tracing's) then
 * missed every inline cache: five absent settings read on such a copy cost ~1.5 µs. A "__proto__"
 * key (data from JSON.parse) would be the prototype setter for Object.assign: such an object is
 * copied by the spread.
 */
function copyOf<T extends object>(value: T): T {
  if (Object.hasOwn(value, '__proto__')) return { ...value };
  return Object.assign({}, value);
}

/** `request` as it goes upstream (the same object when nothing applies). */
export function upstreamRequest(
  request: ChatCompletionRequest,
  original: ChatCompletionRequest,
  upstreamModel: string | undefined,
  streamUsage = false,
): ChatCompletionRequest {
  if (request === original && upstreamModel === undefined && !streamUsage) return request;
  let out = request;
  if (upstreamModel !== undefined) {
    out = copyOf(request);
    out.model = upstreamModel;
  }
  if (out.stream === true && out.stream_options?.include_usage !== true) {
    const given: unknown = out.stream_options;
    const options = (typeof given === 'object' && given !== null ? copyOf(given) : {}) as NonNullable<
      ChatCompletionRequest['stream_options']
    >;
    options.include_usage = true;
    if (out === request) out = copyOf(request);
    out.stream_options = options;
  }
  return out;
}

export const upstreamRequestPolicy: Policy<never> = {
  name: UPSTREAM_REQUEST_POLICY,
  // Always on: it only applies what the route and the other policies already decided.
  enabled: () => true,
  onRequest(request, ctx, original) {
    return {
      action: 'continue',
      request: upstreamRequest(request, original, ctx.upstreamModel, ctx.streamUsage),
      effects: [],
    };
  },
};
