/**
 * The non-streamed driver: reads a whole upstream body, checks its shape and hands the
 * completion to the loop (pipeline.ts) to judge; at the end, the client's message. It keeps the
 * final answers of attempts that were retried anyway: a streaming client has already seen them
 * (they stream live), so the non-streamed message keeps them too.
 */
import { isUtf8 } from 'node:buffer';
import type { IncomingHttpHeaders } from 'node:http';
import { noteTimings } from './prompt-cache.js';
import {
  askedChoices,
  askedChoicesOf,
  completionShapeProblem,
  upstreamJsonProblem,
} from '../../protocol/completion-shape.js';
import { ToolproofError } from '../../protocol/errors.js';
import { upstreamErrorMessage } from '../../protocol/error-body.js';
import type { ChatCompletion, Usage } from '../../protocol/openai.js';
import { scanJsonValue } from '../../parsers/kit/json-scan.js';
import { bodyErrorKind, readUpstreamBytes } from './attempt.js';
import {
  type AttemptDriver,
  type AttemptEnd,
  type AttemptReport,
  type ChatResult,
  type OpenedResponse,
  type SeenOutput,
  seenInCompletion,
} from './attempt-end.js';
import type { ChatCall, ChatDeps } from './context.js';
import { finalAnswerIn, recordUnaskedChoices } from './effects.js';
import { captureAttemptBody, captureAttemptEnd, captureAttemptError } from '../capture/recorder.js';

export class JsonDriver implements AttemptDriver {
  /** Final answers of attempts that were retried anyway (see the file's comment). */
  private readonly committed: ChatCompletion[] = [];
  private answer: ChatCompletion | undefined;
  /** Pass-through: the body as it goes to the client. */
  private raw: { status: number; body: Buffer } | undefined;

  constructor(
    private readonly call: ChatCall,
    private readonly deps: ChatDeps,
  ) {}

  async read(opened: OpenedResponse, passthrough: boolean): Promise<AttemptReport> {
    const call = this.call;
    let bytes: Buffer;
    try {
      bytes = await readUpstreamBytes(opened.res, call.route.client.label);
    } catch (err) {
      // A body cut, stalled or too large is the upstream's fault; an abort stays an abort.
      // Nothing of it reached the client: a cut is sent again as a stream's is (pipeline.ts
      // resendAfterCut), so both modes answer the same upstream behaviour alike.
      if (err instanceof ToolproofError && !call.signal.aborted) {
        captureAttemptEnd(call, err);
        return { kind: 'failed', error: err, midStream: false, untouched: true };
      }
      throw err;
    }
    if (call.capture) {
      captureAttemptBody(call, bytes);
      captureAttemptEnd(call);
    }
    if (passthrough) {
      // Not a completion at all (a reverse proxy's HTML page, plain text, nothing): the door's 502
      // in the OpenAI shape, as on the tool path, rather than those bytes labelled JSON.
      if (!isJsonObjectText(bytes)) return this.notAnObject(opened.res.status, opened.res.headers, bytes);
      const body = relayBytes(bytes);
      this.deps.dumpRaw?.(call.reqId, call.trace.attempts, body.toString('utf8'));
      // Its usage is only for the log line: read from the bytes when that line is written
      // (callUsage), not on every request (a scan and a JSON.parse each).
      call.relayedBody = body;
      this.raw = { status: opened.res.status, body };
      return { kind: 'relayed' };
    }
    const text = bytes.toString('utf8');
    this.deps.dumpRaw?.(call.reqId, call.trace.attempts, text);
    // Scanned before the parse: JSON.parse pays for nesting and distinct keys on the loop.
    const hazard = upstreamJsonProblem(bytes);
    if (hazard) return this.bad(`sent ${hazard}.`);
    let completion: ChatCompletion;
    try {
      completion = JSON.parse(text) as ChatCompletion;
    } catch (err) {
      return this.bad('sent a body that is not JSON.', err);
    }
    const problem = completionShapeProblem(completion);
    if (problem) return this.bad(`sent ${problem}.`);
    const asked = askedChoicesOf(completion.choices, askedChoices(call.original.n));
    if (asked.dropped > 0) {
      recordUnaskedChoices(call, this.deps, asked.dropped);
      if (asked.choices.length === 0) return this.bad('sent a response without choices.');
      completion.choices = asked.choices as ChatCompletion['choices'];
    }
    noteTimings(call, (completion as { timings?: unknown }).timings);
    return { kind: 'completion', completion, ...(completion.usage ? { usage: completion.usage } : {}) };
  }

  retried(end: AttemptEnd): void {
    if (end.completion && finalAnswerIn(end.effects)) this.committed.push(end.completion);
  }

  async failed(report: Extract<AttemptReport, { kind: 'failed' }>): Promise<void> {
    // Nothing was sent: the route answers with the error. A body that failed after its headers
    // (cut, stalled, too large) is counted here, as a stream's failure is by its driver; one
    // sent again is counted where it is (pipeline.ts resendAfterCut). It went uncounted.
    if (report.untouched !== true) return;
    this.deps.metrics.upstreamErrors
      .labels(this.call.route.name, this.call.route.client.label, bodyErrorKind(report.error))
      .inc();
  }

  async deliver(end: AttemptEnd): Promise<SeenOutput> {
    this.answer = withCommitted(this.committed, end.completion as ChatCompletion);
    return seenInCompletion(this.answer);
  }

  async finish(usage: Usage | undefined): Promise<ChatResult> {
    if (this.raw) return { kind: 'raw', ...this.raw };
    const final = this.answer as ChatCompletion;
    if (usage) final.usage = usage;
    return { kind: 'completion', completion: final, ...(usage ? { usage } : {}) };
  }

  /** A relayed body that is not a JSON object: the 502, the upstream's text under error.upstream. */
  private notAnObject(status: number, headers: IncomingHttpHeaders, bytes: Buffer): AttemptReport {
    const type = String(headers['content-type'] ?? '').slice(0, 100);
    const error = new ToolproofError('TP_ERR_UPSTREAM_BAD_RESPONSE', {
      message: `The upstream ${this.call.route.client.label} answered HTTP ${status} with a body that is not a JSON object (${type || 'no content type'}).`,
      detail: { kind: 'upstream', upstream: textOf(bytes) },
    });
    captureAttemptError(this.call, error);
    return { kind: 'failed', error, midStream: false };
  }

  private bad(message: string, cause?: unknown): AttemptReport {
    const error = new ToolproofError('TP_ERR_UPSTREAM_BAD_RESPONSE', {
      message: `The upstream ${this.call.route.client.label} ${message}`,
      ...(cause !== undefined ? { cause } : {}),
    });
    captureAttemptError(this.call, error);
    return { kind: 'failed', error, midStream: false };
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

/**
 * The start of a body shown to people, cut as an upstream error's text is (upstreamErrorMessage:
 * 4,000 characters), decoded only as far as those can reach.
 */
function textOf(bytes: Buffer): string {
  return upstreamErrorMessage(bytes.toString('utf8', 0, Math.min(bytes.length, 16_000)), '');
}

const isSpace = (b: number | undefined) => b === 32 || b === 10 || b === 13 || b === 9;

/**
 * Whether a body can be a JSON object, from its first and last bytes (whitespace aside): all the
 * pass-through reads of it, so a completion is still relayed unread. Text that is not JSON, an
 * empty body, `null`, a list or a string are not; a malformed object is relayed as it came.
 */
export function isJsonObjectText(bytes: Buffer): boolean {
  // A byte-order mark the read kept (a chunked body's) is relayed as it came, as ever.
  let i = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  let j = bytes.length - 1;
  while (i <= j && isSpace(bytes[i])) i++;
  while (j > i && isSpace(bytes[j])) j--;
  return i < j && bytes[i] === 0x7b && bytes[j] === 0x7d;
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
