/**
 * One upstream round trip for a chat completion, and the "fallback once" rule around it:
 * a forced request whose tool_choice "required" the upstream rejects (or that fails with a
 * 5xx before any byte reached the client) is sent again once with "auto", and the upstream +
 * model pair is remembered so later requests skip the failed round trip.
 */
import { performance } from 'node:perf_hooks';
import type { ToolproofError } from '../../protocol/errors.js';
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { shouldFallback } from '../../policies/tool-choice-fallback.js';
import { fromUpstreamError, parseUpstreamBody } from '../error-handler.js';
import type { UpstreamResponse } from '../upstream.js';
import type { ChatCall, ChatDeps } from './context.js';
import { recordPolicyEffects } from './effects.js';
import { runRequestPolicies } from './policy-runner.js';

const MAX_ERROR_BODY = 1024 * 1024;

export async function readText(res: UpstreamResponse, limit = MAX_ERROR_BODY): Promise<string> {
  // Unbounded reads (successful bodies) use undici's own consumer: no async iterator per body.
  if (limit === Number.POSITIVE_INFINITY) return res.body.text();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body) {
    size += (chunk as Buffer).length;
    if (size > limit) {
      res.body.destroy();
      break;
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export function serializeRequest(call: ChatCall, request: ChatCompletionRequest): string | Buffer {
  if (request === call.original && !call.route.upstreamModel) return call.rawBody;
  return JSON.stringify(call.route.upstreamModel ? { ...request, model: call.route.upstreamModel } : request);
}

export async function sendOnce(
  call: ChatCall,
  deps: ChatDeps,
  request: ChatCompletionRequest,
): Promise<UpstreamResponse> {
  call.trace.attempts++;
  const started = performance.now();
  try {
    const res = await call.route.client.request({
      method: 'POST',
      path: '/chat/completions',
      body: serializeRequest(call, request),
      headers: call.forwardHeaders,
      signal: call.signal,
    });
    deps.metrics.hot
      .upstreamDuration(call.route.name, 'chat', call.route.client.label)
      .observe((performance.now() - started) / 1000);
    return res;
  } catch (err) {
    if (!call.signal.aborted) {
      const kind = (err as ToolproofError).code === 'TP_ERR_UPSTREAM_TIMEOUT' ? 'timeout' : 'unreachable';
      deps.metrics.upstreamErrors.labels(call.route.name, call.route.client.label, kind).inc();
    }
    throw err;
  }
}

export type OpenResult =
  | { kind: 'ok'; res: UpstreamResponse; request: ChatCompletionRequest }
  | { kind: 'error'; status: number; body: unknown; error: ToolproofError; request: ChatCompletionRequest };

/**
 * Sends `request`; on a required-rejection applies the fallback once. Error responses are
 * read and returned (not thrown) so the caller can still recover calls hidden in them.
 */
export async function openUpstream(
  call: ChatCall,
  deps: ChatDeps,
  request: ChatCompletionRequest,
): Promise<OpenResult> {
  let current = request;
  for (;;) {
    const res = await sendOnce(call, deps, current);
    if (res.status < 400) return { kind: 'ok', res, request: current };
    const text = await readText(res);
    const body = parseUpstreamBody(text);
    deps.metrics.upstreamErrors
      .labels(call.route.name, call.route.client.label, res.status >= 500 ? 'status_5xx' : 'status_4xx')
      .inc();
    const canFallback = call.phase.forcedRequired && !call.trace.fallback;
    if (canFallback && shouldFallback({ status: res.status, body, bytesSentToClient: 0 })) {
      call.trace.fallback = true;
      const upstream = call.route.client.label;
      deps.memory.remember(upstream, call.route.name, call.route.settings.fallbackTtlSeconds);
      deps.metrics.toolChoiceFallbacks.labels(upstream, call.route.name).inc();
      deps.metrics.toolChoiceFallbackActive.labels(upstream, call.route.name).set(1);
      const phase = runRequestPolicies(call.policies, call.original, {
        ...call.policyContext(),
        requiredRejected: true,
      });
      recordPolicyEffects(
        call,
        deps,
        phase.effects.filter((e) => e.policy === 'force-tool-use'),
      );
      call.setPhase(phase);
      current = phase.request;
      continue;
    }
    return {
      kind: 'error',
      status: res.status,
      body,
      error: fromUpstreamError(res.status, body, call.route.client.label),
      request: current,
    };
  }
}
