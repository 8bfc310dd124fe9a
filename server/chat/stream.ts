/**
 * Streaming chat completion. Upstream SSE bytes -> events -> (policy stream chain: tool-call
 * normalisation, leak recovery, final_answer as live text, held-back validation) -> SSE to the
 * client, chunk by chunk with backpressure. Nothing buffers a whole stream. Every ending is
 * explicit: [DONE] after a normal end, or an error event then [DONE] after a mid-stream
 * failure (also when the upstream itself ended with an error event and no [DONE]).
 */
import { ToolproofError } from '../../protocol/errors.js';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionRequest,
  Usage,
} from '../../protocol/openai.js';
import { fromUpstreamError, parseUpstreamBody, toErrorBody } from '../error-handler.js';
import { SSE_DONE, SseParser, sseData } from '../sse.js';
import { toUpstreamError } from '../upstream.js';
import { openUpstream } from './attempt.js';
import { attemptMemos, classifyFinal, isPassthrough, prepareRequest } from './complete.js';
import type { ChatCall, ChatDeps } from './context.js';
import { recordPolicyEffects, settleRetry } from './effects.js';
import { recoverErrorCompletion } from './error-recovery.js';
import { createStreamChain, runResponsePolicies } from './policy-runner.js';
import { addUsage } from './trace.js';

export interface SseSink {
  readonly opened: boolean;
  /** Sends the status line and SSE headers (once). */
  open(): void;
  /** Resolves when the client can take more (backpressure). */
  write(data: string | Uint8Array): Promise<void>;
}

function chunkOf(base: { id: string; model: string; created: number }, usage: Usage): ChatCompletionChunk {
  return {
    id: base.id,
    object: 'chat.completion.chunk',
    created: base.created,
    model: base.model,
    choices: [],
    usage,
  };
}

/** A read whose events need no rewriting: no error event (those are normalized). */
function isPlainRelay(payloads: readonly string[]): boolean {
  for (const p of payloads) if (p.startsWith('{"error"') || p.startsWith('{ "error"')) return false;
  return true;
}

function usageOfChunk(payload: string): Usage | undefined {
  try {
    const u = (JSON.parse(payload) as { usage?: Usage | null }).usage;
    return u && typeof u === 'object' ? u : undefined;
  } catch {
    return undefined;
  }
}

/** What reached the client over a stream, for the response-kind metric and the log line. */
interface Seen {
  calls: boolean;
  content: boolean;
}

function note(seen: Seen, chunk: ChatCompletionChunk): void {
  for (const c of chunk.choices ?? []) {
    if (c.delta?.tool_calls?.length) seen.calls = true;
    if (typeof c.delta?.content === 'string' && c.delta.content.length > 0) seen.content = true;
  }
}

export async function streamChat(call: ChatCall, deps: ChatDeps, sink: SseSink): Promise<void> {
  let request: ChatCompletionRequest = prepareRequest(call, deps);
  const passthrough = isPassthrough(call, request);
  const policies = call.policies;
  const wantsUsage = call.original.stream_options?.include_usage === true;
  let usage: Usage | undefined;
  let last = { id: 'chatcmpl-toolproof', model: call.original.model, created: Math.floor(Date.now() / 1000) };
  const seen: Seen = { calls: false, content: false };

  const failMidStream = async (err: ToolproofError): Promise<void> => {
    if (!sink.opened) throw err;
    call.streamError = err;
    await sink.write(sseData(JSON.stringify(toErrorBody(err))));
    await sink.write(SSE_DONE);
  };

  for (;;) {
    const opened = await openUpstream(call, deps, request);
    if (opened.kind === 'error') {
      const recovered = passthrough ? null : recoverErrorCompletion(call, opened.request, opened.body);
      if (!recovered) {
        settleRetry(call, deps, 'failed');
        return failMidStream(opened.error);
      }
      // The hidden call arrives as one completion: run the non-streamed response policies and
      // replay their result as chunks, so the client still sees a normal stream.
      recordPolicyEffects(call, deps, recovered.effects);
      const decision = runResponsePolicies(
        policies,
        recovered.completion,
        call.policyContext(),
        attemptMemos(call),
        opened.request,
        call.original,
        call.attemptEffects,
      );
      recordPolicyEffects(
        call,
        deps,
        decision.effects.filter((e) => e.kind !== 'retry'),
      );
      const done = decision.action === 'retry' ? decision.failed : decision.response;
      call.trace.finalKind = classifyFinal(
        done,
        decision.effects.some((e) => e.policy === 'force-tool-use' && e.kind === 'final-answer'),
      );
      sink.open();
      for (const chunk of completionToChunks(done)) await sink.write(sseData(JSON.stringify(chunk)));
      if (wantsUsage && usage) await sink.write(sseData(JSON.stringify(chunkOf(last, usage))));
      await sink.write(SSE_DONE);
      return;
    }
    const { res } = opened;
    const contentType = String(res.headers['content-type'] ?? '');
    if (!contentType.includes('text/event-stream')) {
      res.body.destroy();
      return failMidStream(
        new ToolproofError('TP_ERR_UPSTREAM_BAD_RESPONSE', {
          message: `The upstream ${call.route.client.label} answered a streaming request with ${contentType || 'no content type'}, not an event stream.`,
        }),
      );
    }
    sink.open();
    const chain = passthrough
      ? null
      : createStreamChain(
          policies,
          call.policyContext(),
          attemptMemos(call),
          opened.request,
          call.original,
          call.attemptEffects,
        );
    const retrying = call.retriesUsed > 0;
    const parser = new SseParser();
    let midError: ToolproofError | undefined;
    let relayedDone = false;
    let lastPayload = '';

    // Events decoded from one upstream read are written to the client in one write (one
    // syscall, one TCP segment), not one write per event.
    let batch = '';
    // Diagnosis (rawDumpDir): the attempt's upstream events as received.
    const raw: string[] | undefined = deps.dumpRaw ? [] : undefined;
    const handle = (payload: string): void => {
      raw?.push(payload);
      if (midError) return;
      if (payload === '[DONE]') return;
      const maybeError = payload.includes('"error"');
      const maybeUsage = payload.includes('"usage"');
      if (chain === null && !maybeError && !maybeUsage) {
        // Pass-through fast path: the payload is relayed untouched, only re-framed.
        batch += sseData(payload);
        return;
      }
      let chunk: ChatCompletionChunk & { error?: unknown };
      try {
        chunk = JSON.parse(payload) as ChatCompletionChunk & { error?: unknown };
      } catch (err) {
        midError = new ToolproofError('TP_ERR_UPSTREAM_BAD_RESPONSE', {
          message: `The upstream ${call.route.client.label} sent an event that is not JSON.`,
          cause: err,
        });
        return;
      }
      if (chunk.error !== undefined && !Array.isArray(chunk.choices)) {
        midError = fromUpstreamError(500, parseUpstreamBody(payload), call.route.client.label);
        return;
      }
      if (typeof chunk.id === 'string')
        last = { id: chunk.id, model: chunk.model ?? last.model, created: chunk.created ?? last.created };
      if (chunk.usage && (!Array.isArray(chunk.choices) || chunk.choices.length === 0)) {
        usage = addUsage(usage, chunk.usage);
        return; // one summed usage chunk goes out at the very end
      }
      if (retrying) {
        // A retry continues the same client message: its opening role chunk is not repeated.
        const c0 = chunk.choices?.[0];
        if (c0?.delta?.role) {
          const { role: _role, ...rest } = c0.delta;
          chunk = { ...chunk, choices: [{ ...c0, delta: rest }, ...chunk.choices.slice(1)] };
        }
      }
      const out = chain ? chain.push(chunk) : [chunk];
      for (const c of out) {
        note(seen, c);
        batch += sseData(JSON.stringify(c));
      }
    };

    try {
      for await (const buf of res.body) {
        const startsClean = !parser.pending();
        const payloads = parser.push(buf as Buffer);
        if (chain === null && startsClean && !parser.pending() && isPlainRelay(payloads)) {
          // Pass-through fast path: this read holds whole events only and none needs toolproof,
          // so the upstream's own bytes go to the client as they are (its [DONE] included).
          for (const p of payloads) {
            raw?.push(p);
            if (p === '[DONE]') relayedDone = true;
            else lastPayload = p;
          }
          await sink.write(buf as Buffer);
          continue;
        }
        for (const payload of payloads) handle(payload);
        if (batch) {
          const text = batch;
          batch = '';
          await sink.write(text);
        }
        if (midError) break;
      }
      if (!midError) for (const payload of parser.finish()) handle(payload);
      if (batch) {
        const text = batch;
        batch = '';
        await sink.write(text);
      }
    } catch (err) {
      if (call.signal.aborted) throw err;
      const mapped = toUpstreamError(err, call.route.client.label);
      midError =
        mapped instanceof ToolproofError
          ? mapped
          : new ToolproofError('TP_ERR_UPSTREAM_UNREACHABLE', {
              message: `The upstream ${call.route.client.label} closed the stream early.`,
              cause: err,
            });
      if (mapped instanceof ToolproofError && mapped.code === 'TP_ERR_UPSTREAM_UNREACHABLE') {
        midError = new ToolproofError('TP_ERR_UPSTREAM_UNREACHABLE', {
          message: `The upstream ${call.route.client.label} closed the stream before it ended.`,
          cause: err,
        });
      }
    }
    if (raw) deps.dumpRaw?.(call.reqId, call.trace.attempts, raw.map(sseData).join(''));
    if (midError) {
      res.body.destroy();
      deps.metrics.upstreamErrors.labels(call.route.name, call.route.client.label, 'mid_stream').inc();
      // What the chain held back (e.g. text that might have begun a marker) is still the user's.
      if (chain) for (const c of chain.end().chunks) await sink.write(sseData(JSON.stringify(c)));
      call.trace.finalKind = 'error';
      return failMidStream(midError);
    }
    if (chain) {
      const end = chain.end();
      settleRetry(call, deps, end.retry ? 'failed' : 'fixed');
      const canRetry = call.retriesUsed < call.route.settings.maxRetries && !call.signal.aborted;
      recordPolicyEffects(
        call,
        deps,
        end.retry && !canRetry ? end.effects.filter((e) => e.kind !== 'retry') : end.effects,
      );
      for (const c of end.chunks) {
        note(seen, c);
        await sink.write(sseData(JSON.stringify(c)));
      }
      if (end.retry && canRetry) {
        call.retriesUsed++;
        request = end.retry.request;
        continue;
      }
      const finalAnswer = call.trace.effects.some(
        (e) => e.policy === 'force-tool-use' && e.kind === 'final-answer',
      );
      call.trace.finalKind =
        seen.calls && seen.content
          ? 'both'
          : seen.calls
            ? 'tool_calls'
            : finalAnswer
              ? 'final_answer'
              : 'content';
    } else {
      call.trace.finalKind = 'passthrough';
    }
    if (wantsUsage && usage) await sink.write(sseData(JSON.stringify(chunkOf(last, usage))));
    // Relayed raw, the usage chunk went to the client as it was: read it once for the log line.
    call.usage = usage ?? (lastPayload.includes('"usage"') ? usageOfChunk(lastPayload) : undefined);
    if (!relayedDone) await sink.write(SSE_DONE);
    return;
  }
}

/** A complete message replayed as OpenAI chunks (role, content, tool-call deltas, finish). */
export function completionToChunks(c: ChatCompletion): ChatCompletionChunk[] {
  const out: ChatCompletionChunk[] = [];
  const base = { id: c.id, object: 'chat.completion.chunk' as const, created: c.created, model: c.model };
  for (const choice of c.choices) {
    const msg = choice.message;
    out.push({
      ...base,
      choices: [{ index: choice.index, delta: { role: 'assistant', content: '' }, finish_reason: null }],
    });
    if (msg.reasoning_content) {
      out.push({
        ...base,
        choices: [
          { index: choice.index, delta: { reasoning_content: msg.reasoning_content }, finish_reason: null },
        ],
      });
    }
    if (msg.content) {
      out.push({
        ...base,
        choices: [{ index: choice.index, delta: { content: msg.content }, finish_reason: null }],
      });
    }
    (msg.tool_calls ?? []).forEach((tc, i) => {
      out.push({
        ...base,
        choices: [
          {
            index: choice.index,
            delta: {
              tool_calls: [
                {
                  index: i,
                  id: tc.id,
                  type: 'function',
                  function: { name: tc.function.name, arguments: tc.function.arguments },
                },
              ],
            },
            finish_reason: null,
          },
        ],
      });
    });
    out.push({ ...base, choices: [{ index: choice.index, delta: {}, finish_reason: choice.finish_reason }] });
  }
  return out;
}
