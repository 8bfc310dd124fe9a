/**
 * The one attempt loop, for every front door, streamed or not: request policies -> upstream
 * (with the tool_choice fallback once) -> error salvage -> response policies -> settle the
 * previous retry -> retry or finish -> classify. A driver (attempt-end.ts) frames: the JSON one
 * reads a whole completion, the SSE one runs the policies' stream hooks chunk by chunk into a
 * StreamOutput. Everything else (salvage, judging, what counts as a retry, how outcomes are
 * settled, usage, the final kind) is decided here once, so streamed and non-streamed answers
 * cannot drift.
 */
import { noteDiscarded } from './prompt-cache.js';
import { captureDecision, captureRetry } from '../capture/recorder.js';
import type { DocumentLookup } from '../../protocol/document-text.js';
import { ToolproofError } from '../../protocol/errors.js';
import type { DocumentReader } from '../documents/document-reader.js';
import type { ChatCompletionRequest, Usage } from '../../protocol/openai.js';
import { openUpstream } from './attempt.js';
import {
  type AttemptDriver,
  type AttemptEnd,
  type AttemptReport,
  type ChatResult,
  judgeCompletion,
  type SeenOutput,
} from './attempt-end.js';
import { askedChoices } from '../../protocol/completion-shape.js';
import type { ChatCall, ChatDeps } from './context.js';
import { recordPolicyEffects, settleRetry } from './effects.js';
import { usageFromBytes } from './json-driver.js';
import { type Framing, jsonFraming, sseFraming } from './choices.js';
import type { StreamOutput } from './output.js';
import { prepareRequest } from './prepare.js';
import { salvageUpstreamError } from './policy-runner.js';
import { addUsage, classifyFinal } from './trace.js';

export type { ChatResult } from './attempt-end.js';

function hasTools(request: ChatCompletionRequest): boolean {
  return Array.isArray(request.tools) && request.tools.length > 0;
}

/**
 * Chat requests without tools (and no forced recovery) are relayed byte for byte: nothing to
 * fix. Other front doors always get parsed chunks: they translate every one.
 */
function isPassthrough(call: ChatCall, request: ChatCompletionRequest): boolean {
  if (call.api !== 'chat' || call.phase.needsResponse === true) return false;
  const s = call.route.settings;
  return s.recovery === 'off' || (s.recovery === 'auto' && !hasTools(request));
}

/** The first attempt's request: the one prepareRequest (prepare.ts), its effects recorded. */
export function prepareCallRequest(call: ChatCall, deps: ChatDeps): ChatCompletionRequest {
  // Once per call: a front door may prepare before it reports what its translation left out.
  if (call.prepared) return call.phase.request;
  call.prepared = true;
  const phase = prepareRequest(call.policies, call.original, call.policyContext());
  recordPolicyEffects(call, deps, phase.effects);
  if (phase.error) throw phase.error;
  call.setPhase(phase);
  return phase.request;
}

/** The usage a call ended with: summed over attempts, or read from the relayed body. */
export function callUsage(call: ChatCall): Usage | undefined {
  if (call.usage === undefined && call.relayedBody !== undefined)
    call.usage = usageFromBytes(call.relayedBody);
  return call.usage;
}

/** What one choice's attempts came to: relayed untouched, or delivered (what the client got). */
type ChoiceEnd = { kind: 'relayed' } | { kind: 'delivered'; seen: SeenOutput; sent: ChatCompletionRequest };

/** Token usage summed over every attempt of the request, every choice's. */
interface UsageTotal {
  usage: Usage | undefined;
  /** The first attempt that asked fewer choices than the client's `n`: choice 0's own. */
  firstSingle?: number;
}

/**
 * The loop. The driver frames; every decision is taken here. Returns the driver's last word
 * (the non-streamed result, or undefined when a stream was written). Throws a ToolproofError
 * when the attempt failed and nothing was salvaged. A request that went upstream asking fewer
 * choices than the client's `n` (the upstream answers one a request, and a policy said so) has
 * each choice it still owes asked by a request of its own, one after another, each through the
 * same loop as a single choice (forced tool use, leak recovery, its own corrective retries), and
 * the answers joined with choices 0..n-1 and their usage summed.
 */
async function runAttempts(
  call: ChatCall,
  deps: ChatDeps,
  framing: Framing,
): Promise<ChatResult | undefined> {
  // Documents are read first, off the event loop (a PDF may take seconds): the policies are pure.
  if (deps.documents && call.route.settings.documents)
    call.documents = await readDocuments(call, deps.documents);
  const request = prepareCallRequest(call, deps);
  const passthrough = isPassthrough(call, request);
  const asked = askedChoices(call.original.n);
  const total: UsageTotal = { usage: undefined };
  try {
    const first = await attemptChoice(call, deps, framing.driver, request, passthrough, asked, total);
    if (first.kind === 'relayed') {
      call.usage = total.usage;
      call.trace.finalKind = 'passthrough';
      return await framing.driver.finish(total.usage);
    }
    const seen = first.seen;
    if (askedChoices(first.sent.n) >= asked) {
      call.usage = total.usage;
      call.trace.finalKind = classifyFinal(seen, call.trace.finalAnswer);
      return await framing.driver.finish(total.usage);
    }
    // The choices still owed, one request each, all from the model that answered the first.
    call.fallbacksLeft = undefined;
    noteChoice(call, 0, asked, total.firstSingle ?? call.trace.attempts);
    // Each choice's attempts judge the kind of its own answer: any choice's final answer counts.
    let finalAnswer = call.trace.finalAnswer;
    // And each its own retries: a choice returned invalid after them is one the request failed,
    // whatever a later choice's retry did (the record reads the last retry's outcome).
    let retriesBefore = 0;
    for (let index = 1; index < asked; index++) {
      const retries = call.trace.retries;
      if (retries.length > retriesBefore && retries.at(-1)?.outcome === 'failed')
        call.trace.choiceReturnedInvalid = true;
      retriesBefore = retries.length;
      noteChoice(call, index, asked, call.trace.attempts + 1);
      call.retriesUsed = 0; // each choice has its own corrective retries
      call.roleSent = false; // and opens its own message
      call.rolesSent.clear();
      const driver = framing.choice(index);
      const end = await attemptChoice(call, deps, driver, call.phase.request, false, 1, total);
      if (end.kind !== 'delivered') throw new ToolproofError('TP_ERR_INTERNAL'); // never relayed
      seen.calls ||= end.seen.calls;
      seen.content ||= end.seen.content;
      finalAnswer ||= call.trace.finalAnswer;
    }
    call.trace.finalAnswer = finalAnswer;
    call.usage = total.usage;
    call.trace.finalKind = classifyFinal(seen, call.trace.finalAnswer);
    return await framing.join(total.usage);
  } catch (err) {
    call.trace.finalKind = 'error';
    call.usage ??= total.usage;
    throw err;
  } finally {
    // A retry whose attempt never finished (upstream error, mid-stream failure, client gone).
    settleRetry(call, deps, call.signal.aborted ? 'aborted' : 'failed');
  }
}

/**
 * Which choice of a request asked one choice a request the attempts from `from` on serve (until
 * the next choice's): a decision (the inspector labels each attempt by it) and a span event.
 */
function noteChoice(call: ChatCall, index: number, asked: number, from: number): void {
  call.span?.event('toolproof.choice', { 'toolproof.choice.index': index, 'toolproof.attempt': from });
  captureDecision(
    call,
    'choice-asked',
    `choice ${index} (of ${asked}: indexes 0-${asked - 1}) asked by a request of its own, from attempt ${from}`,
    { index, of: asked, fromAttempt: from },
  );
}

/**
 * One choice's attempts: sent, read, salvaged, judged, retried until one is delivered (or relayed
 * untouched, or it fails: thrown). `asked`: the choices this answer is to hold.
 */
async function attemptChoice(
  call: ChatCall,
  deps: ChatDeps,
  driver: AttemptDriver,
  first: ChatCompletionRequest,
  passthrough: boolean,
  asked: number,
  total: UsageTotal,
): Promise<ChoiceEnd> {
  let request = first;
  for (;;) {
    const opened = await openUpstream(call, deps, request);
    if (total.firstSingle === undefined && askedChoices(opened.request.n) < asked)
      total.firstSingle = call.trace.attempts;
    // Choices asked one request each are joined by toolproof: never relayed as they came.
    const relay = passthrough && askedChoices(opened.request.n) >= asked;
    const report: AttemptReport =
      opened.kind === 'error'
        ? { kind: 'failed', error: opened.error, body: opened.body, midStream: false }
        : await driver.read(opened, relay);
    if (opened.kind === 'ok') call.span?.attemptRead(report);
    if (report.kind === 'relayed') {
      total.usage = addUsage(total.usage, report.usage);
      return { kind: 'relayed' };
    }
    let end: AttemptEnd;
    if (report.kind === 'failed' && !relay && resendAfterCut(call, deps, report)) {
      driver.retried({ effects: [] }); // what the cut attempt held never goes out
      request = opened.request;
      continue;
    }
    if (report.kind === 'failed') {
      const salvaged = relay ? undefined : salvage(call, deps, report.body, opened.request);
      if (!salvaged) {
        await driver.failed(report);
        throw report.error;
      }
      end = salvaged;
    } else if (report.kind === 'streamed')
      end = report.end; // the stream hooks' verdict
    else end = judgeCompletion(call, report.completion, opened.request);
    total.usage = addUsage(total.usage, report.usage);

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
      if (call.capture) captureRetry(call, end.retry.reason, opened.request, end.retry.request);
      noteDiscarded(call, report.usage);
      driver.retried(end);
      call.retriesUsed++;
      request = end.retry.request;
      continue;
    }
    const seen = await driver.deliver(end);
    // Calls that went out checked make their tools' names labels (tool-labels.ts).
    if (!invalid && seen.names) deps.toolLabels.passed(seen.names);
    return { kind: 'delivered', seen, sent: opened.request };
  }
}

/**
 * The request's PDFs, read. A client that leaves while they are read stops the reads only it
 * waited for, and its record says why it has no attempt (said at once: the record and the log
 * line are written as the response closes, before the rejection reaches here).
 */
function readDocuments(call: ChatCall, reader: DocumentReader): Promise<DocumentLookup | undefined> {
  return reader.prepare(call.original, call.signal, call.trace.key, () =>
    captureDecision(
      call,
      'documents-stopped',
      'the client left while its documents were being read: the reads stopped, nothing went upstream',
    ),
  );
}

/**
 * A stream the upstream cut (a connection reset, a backend restarted mid-answer) before any call
 * or answer text of it reached the client is sent again, once per request: the client has seen at
 * most the opening role chunk, so nothing goes out twice (the resent attempt continues the same
 * message). Relayed, the cut reached the client as an error event inside a 200 stream, which
 * chat clients (the AI SDK: opencode, Kilo) do not retry as they retry a 5xx: the run ended.
 * Only a cut: an error the upstream itself sent (an error event, a status) is its answer. A whole
 * body cut after its headers is sent again alike (json-driver.ts), so streamed and non-streamed
 * answer the same upstream alike; a close before the headers is upstream.ts's to judge (replays).
 */
function resendAfterCut(
  call: ChatCall,
  deps: ChatDeps,
  report: Extract<AttemptReport, { kind: 'failed' }>,
): boolean {
  if (report.untouched !== true || call.trace.resentAfterCut) return false;
  if (report.error.code !== 'TP_ERR_UPSTREAM_CUT_OFF' || call.signal.aborted) return false;
  call.trace.resentAfterCut = true;
  // The backend was reached and began to answer: a cut, never `unreachable` (that is a
  // connection refused or reset before any response), streamed or not.
  const kind = report.midStream ? 'mid_stream' : 'cut_off';
  deps.metrics.upstreamErrors.labels(call.route.name, call.route.client.label, kind).inc();
  call.span?.event('toolproof.resent_after_cut', {
    'toolproof.attempt': call.trace.attempts,
    'toolproof.upstream': call.route.client.label,
  });
  captureDecision(
    call,
    'resent-after-cut',
    `the upstream's ${report.midStream ? 'stream' : 'answer body'} was cut before any of the answer reached the client (${report.error.message}): sent again`,
  );
  return true;
}

/**
 * An answer read out of an upstream error body (the first policy that can wins: leak recovery
 * owns llama-server's "Failed to parse input"), judged like any completion.
 */
function salvage(
  call: ChatCall,
  deps: ChatDeps,
  body: unknown,
  sent: ChatCompletionRequest,
): AttemptEnd | undefined {
  const salvaged = body === undefined ? null : salvageUpstreamError(call, sent, body);
  if (!salvaged) return undefined;
  recordPolicyEffects(call, deps, salvaged.effects);
  return judgeCompletion(call, salvaged.completion, sent);
}

/** Non-streamed chat completion (every front door's non-streamed path). */
export async function completeChat(call: ChatCall, deps: ChatDeps): Promise<ChatResult> {
  return (await runAttempts(call, deps, jsonFraming(call, deps))) as ChatResult;
}

/**
 * Streamed chat completion into `out`. Every stream ends with its normal end or the API's
 * error event: a failure after the headers (upstream or toolproof's own) is written, never
 * swallowed; before the headers it is thrown for the route's ordinary error response.
 */
export async function streamChat(call: ChatCall, deps: ChatDeps, out: StreamOutput): Promise<void> {
  try {
    await runAttempts(call, deps, sseFraming(call, deps, out));
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
function asToolproofError(err: unknown): ToolproofError {
  if (err instanceof ToolproofError) return err;
  return new ToolproofError('TP_ERR_INTERNAL', { cause: err });
}
