/**
 * stream-logprobs (request side): llama-server refuses `logprobs` on a streamed request that
 * carries tools, whatever the tool_choice, with its 400 "logprobs is not supported with tools +
 * stream" (tools/server/server-common.cpp, oaicompat_chat_params_parse; builds before the
 * std::invalid_argument answer it with a 500; recorded: /work/shared/wire/llama-server,
 * random-hermes__bad_logprobs_tools_stream). An agent that streams with tools and asks for
 * logprobs sends both again every turn, so every turn was refused. Once the upstream refused that
 * way (Policy.refusal: the request is prepared again and sent once more; the fact is remembered
 * per upstream and model), such a request goes without `logprobs` and `top_logprobs`: the
 * answer comes without logprobs (`logprobs: null`, as a backend that computes none answers),
 * effect `logprobs-dropped`, decision `logprobs-refused`. Non-streamed requests keep them (the
 * backend takes them there), and so does a request without tools. Only those two fields change:
 * the prompt's bytes are the client's (docs/prefix.md).
 *
 * After force-tool-use: a request that asked for logprobs is not forced, streamed or not, so
 * the two give the same answer (bar the logprobs).
 */
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { type Policy, wasRefused } from '../types.js';
import {
  describeStreamLogprobsEffect,
  STREAM_LOGPROBS_POLICY,
  type StreamLogprobsEffect,
} from './effects.js';
import { errorBodyHead } from '../kit/error-text.js';

/** The refusal's fact: the upstream takes no logprobs on a streamed request with tools. */
const STREAM_LOGPROBS_FACT = 'stream-logprobs';

/** llama-server's words, new builds (400) and old (500, std::runtime_error). */
const REFUSES = /logprobs is not supported with tools \+ stream/;

const DROPPED: StreamLogprobsEffect = Object.freeze({
  policy: STREAM_LOGPROBS_POLICY,
  kind: 'logprobs-dropped',
  count: 1,
}) as StreamLogprobsEffect;

/**
 * A streamed request with tools that asks for logprobs: what llama-server refuses. `top_logprobs`
 * without `logprobs: true` is the client's own error (llama-server: "top_logprobs requires
 * logprobs to be set to true"), relayed as it is.
 */
export function asksStreamLogprobs(request: ChatCompletionRequest): boolean {
  return (
    request.stream === true &&
    Array.isArray(request.tools) &&
    request.tools.length > 0 &&
    request.logprobs === true
  );
}

/** Whether an error refused `sent` for its logprobs. Reads at most 2,000 characters of the body. */
export function refusesStreamLogprobs(status: number, body: unknown, sent: ChatCompletionRequest): boolean {
  if ((status !== 400 && status !== 500) || !asksStreamLogprobs(sent)) return false;
  return REFUSES.test(errorBodyHead(body, 2000));
}

export const streamLogprobsPolicy: Policy<StreamLogprobsEffect> = {
  name: STREAM_LOGPROBS_POLICY,
  // Always on: it acts only once the upstream refused (ctx.refused).
  enabled: () => true,
  describeEffect: describeStreamLogprobsEffect,
  refusal: {
    fact: STREAM_LOGPROBS_FACT,
    decision: 'logprobs-refused',
    refused: (status, body, sent) => refusesStreamLogprobs(status, body, sent),
    describe: (status) =>
      `the upstream takes no logprobs on a streamed request with tools (status ${status}): sent again without logprobs`,
  },
  onRequest(request, ctx) {
    if (!asksStreamLogprobs(request) || !wasRefused(ctx, STREAM_LOGPROBS_FACT))
      return { action: 'continue', request, effects: [] };
    const { logprobs: _l, top_logprobs: _t, ...rest } = request;
    return { action: 'continue', request: rest as ChatCompletionRequest, effects: [DROPPED] };
  },
};
