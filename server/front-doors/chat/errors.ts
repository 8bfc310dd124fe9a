/**
 * OpenAI's error wire shape, owned by the chat completions door and shared by the OpenAI-shaped
 * surfaces (Responses' bodies, the pass-through routes, the app's own routes and 404s):
 * `{"error":{"message","type","param","code"}}`, plus `error.upstream` (the upstream's own body)
 * when an upstream's error is relayed. Pure.
 */
import { type ToolproofError, upstreamBodyOf } from '../../../protocol/errors.js';
import type { OpenAIErrorBody } from '../../../protocol/openai.js';
import { SSE_DONE, sseData } from '../../sse.js';

export function openAIErrorBody(err: ToolproofError): OpenAIErrorBody {
  const body: OpenAIErrorBody = {
    error: { message: err.message, type: err.type, param: err.param, code: err.wireCode },
  };
  const upstream = upstreamBodyOf(err);
  if (upstream !== undefined) body.error.upstream = upstream;
  return body;
}

/**
 * Chat's stream error: the error body as a `data:` event, then `data: [DONE]` (what
 * pass-through clients read). The same for a failed attempt, a shutdown and a cut relay.
 */
export function chatErrorEvent(err: ToolproofError): string {
  return sseData(JSON.stringify(openAIErrorBody(err))) + SSE_DONE;
}
