/**
 * The one attempt loop, for every front door, streamed or not: request policies -> upstream
 * (with the tool_choice fallback once) -> error salvage -> response policies -> settle the
 * previous retry -> retry or finish -> classify. Two thin drivers consume an upstream response:
 * the JSON one judges a whole completion, the SSE one runs the policies' stream hooks chunk by
 * chunk into a StreamOutput. Everything else (what counts as a retry, how outcomes are settled,
 * usage, the final kind) is decided here once, so streamed and non-streamed answers cannot drift.
 */
import { noteDiscarded, noteTimings } from './prompt-cache.js';
import { completionShapeProblem } from '../../protocol/completion-shape.js';
import { ToolproofError } from '../../protocol/errors.js';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionRequest,
  Usage,
} from '../../protocol/openai.js';
import type { PolicyEffect } from '../../policies/types.js';
import { scanJsonValue } from '../../parsers/kit/json-scan.js';
import { isUtf8 } from 'node:buffer';
import { type OpenResult, openUpstream, readUpstreamBody, readUpstreamBytes } from './attempt.js';
import type { ChatCall, ChatDeps } from './context.js';
import { finalAnswerIn, recordPolicyEffects, settleRetry } from './effects.js';
import type { StreamOutput } from './output.js';
import { runRequestPolicies, runResponsePolicies, salvageUpstreamError } from './policy-runner.js';
import { type SeenOutput, streamAttempt } from './stream-driver.js';
import { addUsage, classifyFinal } from './trace.js';

export type ChatResult =
  | { kind: 'completion'; completion: ChatCompletion; usage?: Usage }
  /** Chat pass-through: the upstream's bytes (valid UTF-8), relayed untouched. */
  | { kind: 'raw'; status: number; body: Buffer; usage?: Usage };

/** What one judged attempt left for the loop to decide. */
export interface AttemptEnd {
  effects: PolicyEffect[];
  retry?: { request: ChatCompletionRequest; reason: string };
  /** Non-streamed: the completion the client gets if there is no retry. */
  completion?: ChatCompletion;
  /** Streamed: what already reached the client in this attempt. */
  seen?: SeenOutput;
  /** Streamed: chunks that may only go out once the loop decided against a retry. */
  release?: () => Promise<void>;
  usage?: Usage;
}

export function hasTools(request: ChatCompletionRequest): boolean {
  return Array.isArray(request.tools) && request.tools.length > 0;
}

/**
 * Chat requests without tools (and no forced recovery) are relayed byte for byte: nothing to
 * fix. Other front doors always get parsed chunks: they translate every one.
 */
export function isPassthrough(call: ChatCall, request: ChatCompletionRequest): boolean {
  if (call.api !== 'chat') return false;
  const s = call.route.settings;
  return s.recovery === 'off' || (s.recovery === 'auto' && !hasTools(request));
}

export function prepareRequest(call: ChatCall, deps: ChatDeps): ChatCompletionRequest {
  const phase = runRequestPolicies(call.policies, call.original, call.policyContext());
  recordPolicyEffects(call, deps, phase.effects);
  if (phase.error) throw phase.error;
  call.setPhase(phase);
  return phase.request;
}

/**
 * Reads only the top-level `usage` object of a relayed body (for the log line), without parsing
 * the whole response: backends put it last, so the last `"usage":` that opens an object is it.
 */
export function usageFromRaw(text: string): Usage | undefined {
  const key = text.lastIndexOf('"usage"');
  if (key < 0) return undefined;
  let i = key + 7;
  while (i < text.length && (text[i] === ' ' || text[i] === ':' || text[i] === '\n')) i++;
  const scanned = scanJsonValue(text, i);
  if (!scanned || scanned.end < 0) return undefined;
  try {
    const u = JSON.parse(text.slice(i, scanned.end)) as Usage;
    return u && typeof u === 'object' && typeof u.total_tokens === 'number' ? u : undefined;
  } catch {
    return undefined;
  }
}

const USAGE_KEY = Buffer.from('"usage"');

/** usageFromRaw on bytes: only the tail from the last `"usage"` on is decoded. */
export function usageFromBytes(body: Buffer): Usage | undefined {
  const key = body.lastIndexOf(USAGE_KEY);
  return key < 0 ? undefined : usageFromRaw(body.toString('utf8', key));
}

/** The usage a call ended with: summed over attempts, or read from the relayed body. */
export function callUsage(call: ChatCall): Usage | undefined {
  if (call.usage === undefined && call.relayedBody !== undefined)
    call.usage = usageFromBytes(call.relayedBody);
  return call.usage;
}

/**
 * A pass-through body as it goes to the client: the upstream's bytes, without decoding them and
 * encoding them again. Only a body that is not valid UTF-8 is decoded (its bad sequences become
 * U+FFFD) and encoded again, as every other response toolproof sends is text: the client gets
 * the same bytes either way.
 */
export function relayBytes(body: Buffer): Buffer {
  return isUtf8(body) ? body : Buffer.from(body.toString('utf8'), 'utf8');
}

function badResponse(call: ChatCall, message: string, cause?: unknown): ToolproofError {
  return new ToolproofError('TP_ERR_UPSTREAM_BAD_RESPONSE', {
    message: `The upstream ${call.route.client.label} ${message}`,
    ...(cause !== undefined ? { cause } : {}),
  });
}

/** Runs the response policies over one whole completion. */
export function judgeCompletion(
  call: ChatCall,
  completion: ChatCompletion,
  sent: ChatCompletionRequest,
): AttemptEnd {
  const effects = call.beginAttempt();
  const decision = runResponsePolicies(
    call.policies,
    completion,
    call.policyContext(),
    call.phase.memos,
    sent,
    call.original,
    effects,
  );
  if (decision.action === 'retry') {
    return {
      effects: decision.effects,
      retry: { request: decision.request, reason: decision.reason },
      completion: decision.failed,
    };
  }
  return { effects: decision.effects, completion: decision.response };
}

/** The non-streamed driver: reads the whole body and judges it. */
async function wholeAttempt(
  call: ChatCall,
  deps: ChatDeps,
  opened: Extract<OpenResult, { kind: 'ok' }>,
  passthrough: boolean,
): Promise<AttemptEnd | ChatResult> {
  if (passthrough) {
    const body = relayBytes(await readUpstreamBytes(opened.res, call.route.client.label));
    deps.dumpRaw?.(call.reqId, call.trace.attempts, body.toString('utf8'));
    // Its usage is only for the log line: read from the bytes when that line is written
    // (callUsage), not on every request (a scan and a JSON.parse each).
    call.relayedBody = body;
    return { kind: 'raw', status: opened.res.status, body };
  }
  const text = await readUpstreamBody(opened.res, call.route.client.label);
  deps.dumpRaw?.(call.reqId, call.trace.attempts, text);
  let completion: ChatCompletion;
  try {
    completion = JSON.parse(text) as ChatCompletion;
  } catch (err) {
    throw badResponse(call, 'sent a body that is not JSON.', err);
  }
  const problem = completionShapeProblem(completion);
  if (problem) throw badResponse(call, `sent ${problem}.`);
  noteTimings(call, (completion as { timings?: unknown }).timings);
  const end = judgeCompletion(call, completion, opened.request);
  return { ...end, ...(completion.usage ? { usage: completion.usage } : {}) };
}

/**
 * The loop. Returns the non-streamed result, or undefined when a stream was written to `out`.
 * Throws a ToolproofError when nothing reached the client yet.
 */
async function runAttempts(
  call: ChatCall,
  deps: ChatDeps,
  /** Streamed: the front door's output; absent: the JSON driver. */
  out?: StreamOutput,
): Promise<ChatResult | undefined> {
  let request = prepareRequest(call, deps);
  const passthrough = isPassthrough(call, request);
  let usage: Usage | undefined;
  // Non-streamed: final answers of attempts that were retried anyway. A streaming client has
  // already seen them (they stream live), so the non-streamed message keeps them too.
  const committed: ChatCompletion[] = [];
  try {
    for (;;) {
      const opened = await openUpstream(call, deps, request);
      let end: AttemptEnd;
      if (opened.kind === 'error') {
        const salvaged = passthrough ? null : salvageUpstreamError(call, opened.request, opened.body);
        if (!salvaged) {
          call.trace.finalKind = 'error';
          throw opened.error;
        }
        recordPolicyEffects(call, deps, salvaged.effects);
        end = judgeCompletion(call, salvaged.completion, opened.request);
        if (out) end = replayAsStream(end, out);
      } else if (out) {
        const streamed = await streamAttempt(call, deps, opened, out, passthrough);
        if (streamed.kind === 'relayed') {
          call.trace.finalKind = 'passthrough';
          usage = addUsage(usage, streamed.usage);
          call.usage = usage;
          await out.end({ ...streamed.summary, ...(usage ? { usage } : {}) });
          return undefined;
        }
        end = streamed;
      } else {
        const whole = await wholeAttempt(call, deps, opened, passthrough);
        if ('kind' in whole) {
          call.trace.finalKind = 'passthrough';
          return whole;
        }
        end = whole;
      }
      usage = addUsage(usage, end.usage);

      // The previous attempt's retry (if any) is settled by what this attempt produced: a turn
      // that still needs a retry, or that was returned invalid because retries ran out, failed.
      const invalid = end.retry !== undefined || end.effects.some((e) => e.kind === 'returned-invalid');
      settleRetry(call, deps, invalid ? 'failed' : 'fixed');
      const retrying = end.retry !== undefined && !call.signal.aborted;
      call.trace.finalAnswer = false; // the kind of answer is the last judged attempt's
      recordPolicyEffects(
        call,
        deps,
        end.retry && !retrying ? end.effects.filter((e) => e.kind !== 'retry') : end.effects,
      );
      if (end.retry && retrying) {
        noteDiscarded(call, end.usage);
        if (!out && end.completion && finalAnswerIn(end.effects)) committed.push(end.completion);
        call.retriesUsed++;
        request = end.retry.request;
        continue;
      }
      await end.release?.();
      call.usage = usage;
      if (out) {
        call.trace.finalKind = classifyFinal(
          end.seen ?? { calls: false, content: false },
          call.trace.finalAnswer,
        );
        await out.end({ ...call.streamIdentity, ...(usage ? { usage } : {}) });
        return undefined;
      }
      const final = withCommitted(committed, end.completion as ChatCompletion);
      if (usage) final.usage = usage;
      const msg = final.choices?.[0]?.message;
      call.trace.finalKind = classifyFinal(
        {
          calls: (msg?.tool_calls?.length ?? 0) > 0,
          content: typeof msg?.content === 'string' && msg.content.length > 0,
        },
        call.trace.finalAnswer,
      );
      return { kind: 'completion', completion: final, ...(usage ? { usage } : {}) };
    }
  } catch (err) {
    call.usage ??= usage;
    throw err;
  } finally {
    // A retry whose attempt never finished (upstream error, mid-stream failure, client gone).
    settleRetry(call, deps, call.signal.aborted ? 'aborted' : 'failed');
  }
}

/** Prefixes each choice's text with what earlier, retried attempts already committed. */
function withCommitted(committed: readonly ChatCompletion[], final: ChatCompletion): ChatCompletion {
  if (committed.length === 0) return final;
  const choices = final.choices.map((choice) => {
    let content = '';
    let reasoning = '';
    for (const c of committed) {
      const m = c.choices.find((x) => x.index === choice.index)?.message;
      if (typeof m?.content === 'string') content += m.content;
      if (typeof m?.reasoning_content === 'string') reasoning += m.reasoning_content;
    }
    const msg = choice.message;
    return {
      ...choice,
      message: {
        ...msg,
        content: content + (msg.content ?? '') || (msg.content ?? null),
        ...(reasoning ? { reasoning_content: reasoning + (msg.reasoning_content ?? '') } : {}),
      },
    };
  });
  return { ...final, choices };
}

/** A whole completion (salvaged from an error) replayed into a stream as ordinary chunks. */
function replayAsStream(end: AttemptEnd, out: StreamOutput): AttemptEnd {
  if (end.retry || !end.completion) return end;
  const chunks = completionToChunks(end.completion);
  const msg = end.completion.choices?.[0]?.message;
  return {
    ...end,
    seen: {
      calls: (msg?.tool_calls?.length ?? 0) > 0,
      content: typeof msg?.content === 'string' && msg.content.length > 0,
    },
    release: async () => {
      out.open();
      await out.chunks(chunks);
    },
  };
}

/** Non-streamed chat completion (every front door's non-streamed path). */
export async function completeChat(call: ChatCall, deps: ChatDeps): Promise<ChatResult> {
  return (await runAttempts(call, deps)) as ChatResult;
}

/**
 * Streamed chat completion into `out`. Every stream ends with its normal end or the API's
 * error event: a failure after the headers (upstream or toolproof's own) is written, never
 * swallowed; before the headers it is thrown for the route's ordinary error response.
 */
export async function streamChat(call: ChatCall, deps: ChatDeps, out: StreamOutput): Promise<void> {
  try {
    await runAttempts(call, deps, out);
  } catch (err) {
    const error = asToolproofError(err);
    if (!out.opened) throw error; // the error handler answers (and logs toolproof's own bugs)
    if (error.code === 'TP_ERR_INTERNAL') deps.onInternalError?.(call, err);
    call.trace.finalKind = 'error';
    call.streamError = error;
    if (!call.signal.aborted) await out.fail(error);
  }
}

/** Internal bugs keep their own code (and their cause): never reported as an upstream fault. */
export function asToolproofError(err: unknown): ToolproofError {
  if (err instanceof ToolproofError) return err;
  return new ToolproofError('TP_ERR_INTERNAL', { cause: err });
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
