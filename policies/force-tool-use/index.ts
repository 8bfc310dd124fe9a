/**
 * force-tool-use: a small model given tool_choice "auto" often answers from memory (sometimes
 * claiming it ran the tool). When the client declared tools and said "auto" (or nothing), the
 * request goes upstream with one more tool, final_answer, and tool_choice "required": replying
 * in prose becomes impossible, replying at all means calling a tool. On the way back the
 * final_answer call is turned into an ordinary assistant message, so the client never sees it.
 *
 * Not forced:
 * - tool_choice "none", "required" or a named function: the client's explicit choice (a named
 *   one keeps final_answer declared for the prompt's bytes, keepsAnswerTool: docs/prefix.md);
 * - `response_format` (other than {type:"text"}): the client asked for a structured content
 *   answer. Guided decoding can enforce one grammar per request: a tool-call grammar and the
 *   response_format schema conflict (llama-server lets json_schema win over tools; vLLM would
 *   constrain the call, not the content), so forcing would break the format the client asked for.
 * - `logprobs: true` or `top_logprobs`: the logprobs would describe the final_answer call's JSON
 *   (`{"answer": "...`), not the text the client receives; they cannot be mapped back.
 *
 * A final_answer whose arguments hold no answer (force-tool-use/final-answer.ts has the rule: `answer`,
 * or the only key when it holds a string) stays a call while a corrective retry can follow, so
 * corrective-retry re-asks with 'final-answer-args' feedback; after that its raw arguments are
 * the content (never lost), counted `final-answer-raw`.
 *
 * When the upstream is known to reject "required" (ctx.requiredRejected), final_answer is still
 * added and tool_choice is "auto": the tool still gives the model a clean way to answer. With a
 * JSON answer format the schema then rides only on the answer tool (no response_format goes
 * upstream, below): a prose answer that is no valid answer for it is judged by corrective-retry
 * ('prose-not-in-schema') and re-asked for the answer tool, so the client's schema still holds.
 *
 * So is a last user turn that forbids tools in so many words (textOnlyTurn, effect
 * `text-only-turn`): an agent's compaction or summary turn keeps its tools for the prompt cache
 * and asks for text (Claude Code: "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools. ...
 * Tool calls will be REJECTED"). With "required" the model had to call some tool, a real one as
 * often as final_answer, and the agent rejected the call: its compaction failed, and so did every
 * later try. With "auto" it can do as asked. final_answer stays in the tools, so the prompt keeps
 * the bytes of the turns before it and the backend's prompt cache still holds. An agent's
 * compaction that declares its tools and asks for the summary without forbidding them
 * (compactionTurn: the Continue CLI 1.5's "Please provide a concise summary of our conversation
 * so far") is such a turn too: forced, the model called the task's next tool, the Continue CLI
 * ran that call inside its compaction and compacted again (two commands ran six times, and the
 * turns' prefix changed each time).
 */
import type {
  ChatCompletion,
  ChatCompletionRequest,
  Choice,
  ToolCall,
  ToolChoice,
} from '../../protocol/openai.js';
import { type CompileBudget, passThroughHook, type Policy, type PolicyContext } from '../types.js';
import { isPlainObject } from '../kit/canonical-arguments.js';
import { toolSetOf } from '../kit/tool-set.js';
import { compactionTurn } from '../kit/last-turn.js';
import { clientToolChoice } from '../kit/client-choice.js';
import { answerChars } from '../kit/answer-chars.js';
import {
  appendAnswer,
  type DecodedAnswer,
  decodeFinalAnswer,
  finalAnswerTool,
  leadingContent,
} from './final-answer.js';
import { createFinalAnswerStreamHook, createSchemaCheckHook } from './stream.js';
import { checkSchemaContent, decodeSchemaAnswer, schemaAnswerTool } from './schema-answer.js';
import type { AnswerFormat } from '../kit/answer-format.js';
import { ToolproofError } from '../../protocol/errors.js';
import {
  describeForceToolUseEffect,
  FINAL_ANSWER_INVALID_EFFECT,
  FINAL_ANSWER_RAW_EFFECT,
  FORCE_TOOL_USE_POLICY,
  type ForceToolUseEffect,
  finalAnswerEffect,
  forcedButProseEffect,
  forcedEffect,
  REQUIRED_AS_AUTO_EFFECT,
  schemaAnswerEffect,
  STOP_HELD_EFFECT,
  TEXT_ONLY_TURN_EFFECT,
} from './effects.js';
import { forceToolUseSettings } from './settings.js';
import { cutAtStop, heldStops } from './client-stop.js';

export interface ForceToolUseMemo {
  /** The synthetic tool's name as sent upstream; null when none was added. */
  finalAnswerName: string | null;
  forced: boolean;
  /** tool_choice as sent upstream (null when absent). */
  toolChoiceSent: ToolChoice | null;
  /**
   * The client asked for its answer in a JSON schema (or as a JSON object): forced, the answer
   * tool's arguments are the answer (schema-answer.ts); not forced, the content is checked.
   */
  answer?: AnswerFormat;
  /** The client's stop strings, held back from the upstream and applied to the answer (client-stop.ts). */
  stop?: readonly string[];
  /**
   * The client named a tool and final_answer only kept the prompt's bytes: a final_answer call
   * (a backend that does not enforce the name) goes on as a call while a corrective retry can
   * follow (judged 'wrong-tool'), and only after that becomes the content: never a call.
   */
  named?: true;
}

export function isForceToolUseMemo(value: unknown): value is ForceToolUseMemo {
  return isPlainObject(value) && typeof value.forced === 'boolean' && 'finalAnswerName' in value;
}

/**
 * Why a request is not forced, or null when it is. A JSON answer format (`answer`: json_schema or
 * json_object) is forced like any tool request: the answer tool's parameters are the schema.
 */
export function notForcedReason(request: ChatCompletionRequest, answer?: AnswerFormat): string | null {
  if (!Array.isArray(request.tools) || request.tools.length === 0) return 'no-tools';
  const choice = request.tool_choice;
  if (choice !== undefined && choice !== null && choice !== 'auto') return 'explicit-tool-choice';
  if (request.logprobs === true || (request.top_logprobs !== undefined && request.top_logprobs !== null)) {
    return 'logprobs';
  }
  const format = request.response_format;
  if (
    answer === undefined &&
    format !== undefined &&
    format !== null &&
    !(isPlainObject(format) && format.type === 'text')
  ) {
    return 'response-format';
  }
  return null;
}

/**
 * Does a turn whose client named a tool keep final_answer declared? Only where the same request
 * with "auto" would be forced with the plain final_answer (no JSON answer format, no logprobs):
 * then the tools are byte for byte those of the forced turns before and after it.
 */
function keepsAnswerTool(request: ChatCompletionRequest, answer: AnswerFormat | undefined): boolean {
  if (answer !== undefined || clientToolChoice(request).kind !== 'named') return false;
  return notForcedReason({ ...request, tool_choice: 'auto' }, answer) === null;
}

/**
 * The answer up to which a final_answer goes on as a call for corrective-retry to judge ('wrong-tool'
 * on a named turn, 'final-answer-args' when its arguments hold no answer): half of maxHeldBytes.
 * Past maxHeldBytes corrective-retry judges nothing and would hand the synthetic call to the
 * client; the half leaves room for what its count adds besides. Past it the answer is unwrapped
 * as it goes (the raw arguments as content when they hold no answer string).
 */
export function heldCallChars(ctx: PolicyContext): number {
  return Math.floor(ctx.settings.maxHeldBytes / 2);
}

function callName(call: unknown): string | undefined {
  const name = isPlainObject(call) && isPlainObject(call.function) ? call.function.name : undefined;
  return typeof name === 'string' ? name : undefined;
}

/**
 * Can an invalid final_answer call still be re-asked? Only while corrective retries remain and
 * the turn was not cut off by max_tokens (the same budget would cut the retry too). Otherwise
 * the call is unwrapped as well as it goes (last resort), so a final_answer never reaches the
 * client as a tool call.
 */
export function finalAnswerRetryable(ctx: PolicyContext, upstreamFinish: string | null | undefined): boolean {
  return ctx.retriesUsed < ctx.settings.maxRetries && upstreamFinish !== 'length';
}

/** Unwraps final_answer calls of one choice (see the module comment and force-tool-use/final-answer.ts). */
export function unwrapFinalAnswer(
  choice: Choice,
  memo: ForceToolUseMemo,
  effects: ForceToolUseEffect[],
  retryable = false,
  budget?: CompileBudget,
): Choice {
  const name = memo.finalAnswerName;
  const calls: ToolCall[] = Array.isArray(choice.message?.tool_calls) ? choice.message.tool_calls : [];
  const finals = name === null ? [] : calls.filter((c) => callName(c) === name);
  if (finals.length === 0) {
    if (memo.forced && calls.length === 0) {
      effects.push(forcedButProseEffect(memo.toolChoiceSent));
    }
    return memo.stop ? stoppedProse(choice, memo.stop, calls.length > 0) : choice;
  }
  const real = calls.filter((c) => callName(c) !== name);
  const answer = memo.answer;
  const decodedAll: DecodedAnswer[] = finals.map((f) => {
    if (!answer) return decodeFinalAnswer(f.function?.arguments);
    const d = decodeSchemaAnswer(f.function?.arguments, answer, budget);
    return { text: d.text, truncated: false, raw: d.raw, invalid: d.invalid, outcome: d.outcome };
  });
  if (retryable && (memo.named === true || decodedAll.some((d) => d.invalid))) {
    // Left as a call for corrective-retry to judge ('final-answer-args', or 'wrong-tool' when
    // the client named a tool); moved after the real calls, where the stream hook emits it too.
    if (memo.named !== true) effects.push(FINAL_ANSWER_INVALID_EFFECT);
    const ordered = [...real, ...finals].map((c, i) =>
      typeof c.index === 'number' ? { ...c, index: i } : c,
    );
    return { ...choice, message: { ...choice.message, tool_calls: ordered } };
  }
  let text = leadingContent(choice.message.content);
  let truncated = false;
  let raw = false;
  let field: string | undefined;
  for (const decoded of decodedAll) {
    text = appendAnswer(text, decoded.text);
    truncated ||= decoded.truncated;
    raw ||= decoded.raw;
    field ??= decoded.field;
  }
  const stopped = memo.stop && cutAtStop(text, memo.stop);
  const message = { ...choice.message, content: stopped ? stopped.text : text };
  if (real.length > 0) {
    message.tool_calls = real.map((c, i) => (typeof c.index === 'number' ? { ...c, index: i } : c));
  } else delete message.tool_calls;
  const upstream = choice.finish_reason ?? 'stop';
  // "length" from upstream always stays: the model was cut off, whatever the JSON looks like.
  truncated ||= upstream === 'length';
  const finish = truncated
    ? 'length'
    : real.length > 0
      ? upstream === 'stop'
        ? 'tool_calls'
        : upstream
      : 'stop';
  effects.push(finalAnswerEffect(real.length > 0, truncated, raw, field));
  if (raw) effects.push(FINAL_ANSWER_RAW_EFFECT);
  if (answer) for (const d of decodedAll) effects.push(schemaAnswerEffect(d.outcome ?? 'valid'));
  if (stopped) {
    // The answer ended at the client's stop string, before any cut the JSON shows.
    const ended = real.length > 0 ? 'tool_calls' : 'stop';
    return { ...choice, message, finish_reason: ended, stop_reason: stopped.matched };
  }
  return { ...choice, message, finish_reason: finish };
}

/** A forced turn's prose (the upstream answered without final_answer), ended at the client's stop. */
function stoppedProse(choice: Choice, stops: readonly string[], calls: boolean): Choice {
  const content = choice.message?.content;
  const stopped = typeof content === 'string' ? cutAtStop(content, stops) : undefined;
  if (!stopped) return choice;
  return {
    ...choice,
    message: { ...choice.message, content: stopped.text },
    finish_reason: calls ? 'tool_calls' : 'stop',
    stop_reason: stopped.matched,
  };
}

/**
 * A copy of the request, keys in the same order as a spread. Object.assign rather than a spread:
 * once optimized, a spread gave every copy a hidden class of its own (~200 bytes held by each
 * open stream). A "__proto__" key (data from JSON.parse) would be the prototype setter for
 * Object.assign: such a request is copied by the spread.
 */
function forcedCopy(request: ChatCompletionRequest): ChatCompletionRequest {
  if (Object.hasOwn(request, '__proto__')) return { ...request };
  return Object.assign({}, request);
}

export const forceToolUsePolicy: Policy<ForceToolUseEffect> = {
  name: FORCE_TOOL_USE_POLICY,
  settingsSchema: forceToolUseSettings,
  enabled: (settings) => settings.forceToolUse,
  describeEffect: describeForceToolUseEffect,

  onRequest(request, ctx, original) {
    // The request's tool facts: declared names, the synthetic tool's name, the answer format.
    const { finalAnswerName, answer } = toolSetOf(ctx, original);
    const skip = notForcedReason(request, answer);
    if (skip === 'explicit-tool-choice' && keepsAnswerTool(request, answer)) {
      // The client named a tool on a turn that would be forced otherwise: final_answer stays
      // declared (same bytes, same place), so the tools, at the top of every chat template's
      // prompt, are those of the forced turns around it and the backend's prefix cache holds.
      // The client's choice goes as sent: vLLM enforces it by guided decoding (only the named
      // tool can come back); where it is not enforced (llama-server reads it as "auto"), a
      // final_answer call is no answer on this turn (unwrapFinalAnswer, the stream hook).
      const rewritten = forcedCopy(request);
      rewritten.tools = [...(request.tools ?? []), finalAnswerTool(finalAnswerName)];
      const memo: ForceToolUseMemo = {
        finalAnswerName,
        forced: false,
        named: true,
        toolChoiceSent: request.tool_choice ?? null,
      };
      return { action: 'continue', request: rewritten, effects: [], memo };
    }
    if (skip !== null) {
      // The client's own "required" on an upstream that rejects it (llama-server's "Failed to
      // initialize samplers" on some templates): relayed, every later turn was refused too. It goes
      // as "auto"; what the client asked still holds on what it gets (corrective-retry judges the
      // client's "required" and re-asks a prose turn).
      const asAuto = ctx.requiredRejected && request.tool_choice === 'required';
      const sent = asAuto ? { ...request, tool_choice: 'auto' as const } : request;
      const memo: ForceToolUseMemo = {
        finalAnswerName: null,
        forced: false,
        toolChoiceSent: sent.tool_choice ?? null,
        // Left to the backend (no tools): its answer is still checked and counted.
        ...(answer && !answer.bad && skip === 'no-tools' ? { answer } : {}),
      };
      return {
        action: 'continue',
        request: sent,
        effects: asAuto ? [REQUIRED_AS_AUTO_EFFECT] : [],
        memo,
        ...(memo.answer ? { needsResponse: true } : {}),
      };
    }
    // Forced with the client's schema as the answer tool's parameters: a schema that is no JSON
    // schema object cannot be, and is the client's own error.
    if (answer?.bad)
      return {
        action: 'reject',
        error: new ToolproofError('TP_ERR_INVALID_FIELD', {
          param: 'response_format.json_schema.schema',
          message: answer.bad,
        }),
        effects: [],
      };
    const textOnly = answer === undefined && compactionTurn(request);
    const toolChoice = ctx.requiredRejected || textOnly ? 'auto' : 'required';
    const rewritten = forcedCopy(request);
    rewritten.tools = [
      ...(request.tools ?? []),
      answer ? schemaAnswerTool(finalAnswerName, answer.parameters) : finalAnswerTool(finalAnswerName),
    ];
    rewritten.tool_choice = toolChoice;
    // The client's stop strings would cut the call's JSON upstream: toolproof applies them.
    const stop = heldStops(request);
    if (stop) delete rewritten.stop;
    // vLLM: a response_format suppresses tool calls (vllm-project/vllm#39929, #16313); the answer
    // tool carries the schema instead.
    if (answer) delete rewritten.response_format;
    const memo: ForceToolUseMemo = {
      finalAnswerName,
      forced: true,
      toolChoiceSent: toolChoice,
      ...(answer ? { answer } : {}),
      ...(stop ? { stop } : {}),
    };
    const effects = [forcedEffect(toolChoice)];
    if (textOnly) effects.push(TEXT_ONLY_TURN_EFFECT);
    if (stop) effects.push(STOP_HELD_EFFECT);
    return { action: 'continue', request: rewritten, effects, memo };
  },

  onResponse(response: ChatCompletion, ctx, memo) {
    if (!isForceToolUseMemo(memo) || !Array.isArray(response.choices))
      return { action: 'continue', response, effects: [] };
    if (memo.finalAnswerName === null) {
      // Not forced, a JSON answer format: the backend's answer is checked and counted, unchanged.
      const answer = memo.answer;
      if (!answer) return { action: 'continue', response, effects: [] };
      const effects = response.choices.map((c) =>
        schemaAnswerEffect(checkSchemaContent(c?.message?.content, answer, ctx.compileBudget)),
      );
      return { action: 'continue', response, effects };
    }
    const effects: ForceToolUseEffect[] = [];
    // A final_answer goes on as a call only well within what corrective-retry judges.
    let judged: boolean | undefined;
    const withinJudged = () => (judged ??= answerChars(response) <= heldCallChars(ctx));
    const choices = response.choices.map((c) =>
      unwrapFinalAnswer(
        c,
        memo,
        effects,
        finalAnswerRetryable(ctx, c.finish_reason) && withinJudged(),
        ctx.compileBudget,
      ),
    );
    return { action: 'continue', response: { ...response, choices }, effects };
  },

  createStreamHook(ctx, memo) {
    if (!isForceToolUseMemo(memo)) return passThroughHook();
    if (memo.finalAnswerName === null)
      return memo.answer ? createSchemaCheckHook(memo.answer, ctx.compileBudget) : passThroughHook();
    return createFinalAnswerStreamHook({
      policy: FORCE_TOOL_USE_POLICY,
      finalAnswerName: memo.finalAnswerName,
      forced: memo.forced,
      toolChoiceSent: memo.toolChoiceSent,
      heldCallChars: heldCallChars(ctx),
      ...(memo.named ? { named: true } : {}),
      ...(memo.answer ? { answer: memo.answer, budget: ctx.compileBudget } : {}),
      ...(memo.stop ? { stop: memo.stop } : {}),
      // Whether the finish will be "length" is only known at the end: the hook checks that itself.
      retriesLeft: ctx.retriesUsed < ctx.settings.maxRetries,
    });
  },
};
