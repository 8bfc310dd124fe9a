/**
 * What one attempt amounts to, between the attempt loop (pipeline.ts) and its two drivers
 * (json-driver.ts, stream-driver.ts): the driver interface, what a driver reports of one
 * upstream response, the judge of a whole completion, and a whole completion replayed as
 * chunks. This module imports neither the loop nor a driver: the dependencies point one way,
 * loop -> drivers -> this.
 */
import type { ToolproofError } from '../../protocol/errors.js';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionRequest,
  Usage,
} from '../../protocol/openai.js';
import type { PolicyEffect } from '../../policies/registry.js';
import type { OpenResult } from './attempt.js';
import type { ChatCall } from './context.js';
import { runResponsePolicies } from '../../policies/composition.js';

export type ChatResult =
  | { kind: 'completion'; completion: ChatCompletion; usage?: Usage }
  /** Chat pass-through: the upstream's bytes (valid UTF-8), relayed untouched. */
  | { kind: 'raw'; status: number; body: Buffer; usage?: Usage };

export type OpenedResponse = Extract<OpenResult, { kind: 'ok' }>;

/** What reached (or reaches) the client, for the response-kind metric and the log line. */
export interface SeenOutput {
  calls: boolean;
  content: boolean;
  /** Names of the calls shown (the first MAX_SEEN_NAMES): the tools' metric labels. */
  names?: string[];
}

const MAX_SEEN_NAMES = 16;

function noteName(seen: SeenOutput, name: unknown): void {
  if (typeof name !== 'string' || name.length === 0) return;
  const names = (seen.names ??= []);
  if (names.length < MAX_SEEN_NAMES && !names.includes(name)) names.push(name);
}

/** What one upstream response amounted to, as a driver read it. Drivers report; the loop decides. */
export type AttemptReport =
  /** Pass-through: nothing to judge (streamed: relayed to its end; JSON: the bytes to return). */
  | { kind: 'relayed'; usage?: Usage }
  /** A whole completion, checked for shape: the loop judges it. */
  | { kind: 'completion'; completion: ChatCompletion; usage?: Usage }
  /** A stream the policies' stream hooks ran over to its end: their verdict. */
  | { kind: 'streamed'; end: AttemptEnd; usage?: Usage }
  /**
   * The upstream failed (an error status, or mid-stream). `body`: an error body the loop may
   * salvage an answer from; only present while nothing of this attempt reached the client.
   */
  | {
      kind: 'failed';
      error: ToolproofError;
      body?: unknown;
      midStream: boolean;
      usage?: Usage;
      /**
       * The answer's body failed after the upstream's headers (mid-stream, or a whole body's
       * read) and no call or answer text of this attempt reached the client (a role chunk may
       * have).
       */
      untouched?: boolean;
    };

/** What one judged attempt left for the loop to decide. */
export interface AttemptEnd {
  effects: PolicyEffect[];
  retry?: { request: ChatCompletionRequest; reason: string };
  /** A judged whole completion (JSON, or salvaged from an error): if retried, the failed one. */
  completion?: ChatCompletion;
  /** Streamed: what the stream hooks held to the end; it goes out only if there is no retry. */
  held?: readonly ChatCompletionChunk[];
}

/**
 * One way of framing a request's answer: a whole JSON body, or a stream. The loop calls read()
 * once per attempt, then exactly one of retried(), failed() or deliver() + finish().
 */
export interface AttemptDriver {
  /** Reads one upstream response that opened; a stream frames what may go out live. */
  read(opened: OpenedResponse, passthrough: boolean): Promise<AttemptReport>;
  /** The loop retries after this attempt. */
  retried(end: AttemptEnd): void;
  /** The attempt failed and nothing was salvaged: the loop throws `report.error` next. */
  failed(report: Extract<AttemptReport, { kind: 'failed' }>): Promise<void>;
  /** The loop settled on this attempt: its answer goes out. Returns what the client received. */
  deliver(end: AttemptEnd): Promise<SeenOutput>;
  /** The last word: the stream's end, or the non-streamed result. */
  finish(usage: Usage | undefined): Promise<ChatResult | undefined>;
}

/** Notes what one chunk shows the client. */
export function noteSeen(seen: SeenOutput, chunk: ChatCompletionChunk): void {
  for (const c of chunk.choices ?? []) {
    const calls = c.delta?.tool_calls;
    if (calls?.length) {
      seen.calls = true;
      for (const t of calls) noteName(seen, t.function?.name);
    }
    if (typeof c.delta?.content === 'string' && c.delta.content.length > 0) seen.content = true;
  }
}

/** What a whole completion shows the client (every choice, as a stream of it would). */
export function seenInCompletion(c: ChatCompletion): SeenOutput {
  const seen: SeenOutput = { calls: false, content: false };
  for (const choice of c.choices ?? []) {
    const msg = choice?.message;
    if ((msg?.tool_calls?.length ?? 0) > 0) {
      seen.calls = true;
      for (const t of msg!.tool_calls!) noteName(seen, t.function?.name);
    }
    if (typeof msg?.content === 'string' && msg.content.length > 0) seen.content = true;
  }
  return seen;
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
