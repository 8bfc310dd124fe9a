/**
 * Turns a scripted action into what the backend would return: content, reasoning, parsed tool
 * calls and a finish reason, after tool_choice (required / named / none) and length limits.
 * Pure: no I/O, no clock.
 */
import type { ToolDef } from '../protocol/openai.js';
import { renderLeak } from './leak-formats.js';
import { sampleArguments } from './schema-args.js';
import { splitTokens } from './tokens.js';
import type { Behaviour, Personality, ScriptedCall, ScriptedError, TurnAction } from './types.js';

export interface GeneratedCall {
  name: string;
  arguments: string;
}

export interface Generation {
  reasoning: string | null;
  content: string;
  calls: GeneratedCall[];
  finish: 'stop' | 'length' | 'tool_calls';
  /** The request's stop string that ended the output (vLLM's choice.stop_reason), when one did. */
  stopMatched?: string;
  /** An error raised after generation started (status 200, error event in the stream). */
  midStreamError: ScriptedError | null;
  behaviour: Behaviour;
}

export type Outcome = { kind: 'ok'; generation: Generation } | { kind: 'error'; error: ScriptedError };

export interface GenerateContext {
  personality: Personality;
  tools: ToolDef[];
  toolChoice: unknown;
  ignoreRequired: boolean;
  /** max_tokens / max_completion_tokens, when the request set a positive one. */
  maxTokens: number | null;
  /** The request's parallel_tool_calls (vLLM keeps only the first call when false). */
  parallelToolCalls?: boolean;
  /** The request's response_format. */
  responseFormat?: unknown;
  /**
   * vLLM's bug (vllm-project/vllm#39929, #16313): a response_format beside tools constrains the
   * output to the format, and no tool call comes back whatever the model meant to call.
   */
  formatSuppressesTools?: boolean;
  /**
   * The request's `stop` strings. Both backends match them on the text the model writes, tool
   * calls included (a grammar-forced call's JSON too): the output ends before the first one,
   * which is not returned (../shared/wire llama-server chat_plain_stop_sequence: finish "stop").
   */
  stop?: readonly string[];
}

/**
 * Structured output: a json_schema is enforced by both backends (and wins over tools in
 * llama-server); json_object is enforced by vLLM only (llama-server's random model ignores it).
 */
function structuredContent(prose: string, ctx: GenerateContext): string | null {
  const rf = ctx.responseFormat;
  if (typeof rf !== 'object' || rf === null) return null;
  const { type, json_schema: js } = rf as { type?: unknown; json_schema?: { schema?: unknown } };
  if (type === 'json_schema') return JSON.stringify(sampleArguments(js?.schema));
  if (type === 'json_object' && ctx.personality === 'vllm') return JSON.stringify({ answer: prose });
  return null;
}

function argsObject(call: ScriptedCall): Record<string, unknown> {
  if (typeof call.arguments === 'string') {
    try {
      const parsed: unknown = JSON.parse(call.arguments);
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed))
        return parsed as Record<string, unknown>;
    } catch {
      // A deliberately broken argument string: nothing to recover here.
    }
    return {};
  }
  return call.arguments ?? {};
}

function argsText(call: ScriptedCall): string {
  return typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {});
}

function namedChoice(choice: unknown): string | null {
  if (typeof choice !== 'object' || choice === null) return null;
  const fn = (choice as { function?: { name?: unknown } }).function;
  return typeof fn?.name === 'string' ? fn.name : null;
}

/**
 * A final-answer tool's arguments for the scripted prose: `{"answer": prose}` for the plain answer
 * tool; for an answer tool whose parameters are the client's JSON schema, the prose when it is a
 * JSON answer (wrapped under `answer` when the schema is, e.g. an array), else a sample instance.
 */
function finalArguments(tool: ToolDef, prose: string): string {
  const params = tool.function?.parameters as
    | { properties?: Record<string, { type?: unknown }>; required?: unknown }
    | undefined;
  const keys = Object.keys(params?.properties ?? {});
  if (params?.properties?.answer?.type === 'string' && keys.length === 1)
    return JSON.stringify({ answer: prose });
  let parsed: unknown;
  try {
    parsed = JSON.parse(prose);
  } catch {
    return JSON.stringify(sampleArguments(params));
  }
  const wrapped = keys.length === 1 && keys[0] === 'answer';
  if (wrapped && !(parsed && typeof parsed === 'object' && !Array.isArray(parsed) && 'answer' in parsed))
    return JSON.stringify({ answer: parsed });
  return prose;
}

/** The calls a grammar-forced model would make when the script says prose. */
function forcedCalls(tools: ToolDef[], prose: string, only?: string): GeneratedCall[] {
  const candidates = only ? tools.filter((t) => t.function?.name === only) : tools;
  const finalTool = candidates.find((t) => t.function?.name?.startsWith('final_answer'));
  if (finalTool) return [{ name: finalTool.function.name, arguments: finalArguments(finalTool, prose) }];
  const first = candidates[0];
  if (!first) return [];
  return [
    { name: first.function.name, arguments: JSON.stringify(sampleArguments(first.function.parameters)) },
  ];
}

interface Budget {
  chars: number;
  tokens: number;
  cut: boolean;
}

/** The first of `stops` in `text`: where it begins and which it is (the earliest, then the longest). */
function firstStop(text: string, stops: readonly string[]): { at: number; matched: string } | null {
  let best: { at: number; matched: string } | null = null;
  for (const s of stops) {
    if (s === '') continue;
    const at = text.indexOf(s);
    if (at >= 0 && (best === null || at < best.at || (at === best.at && s.length > best.matched.length)))
      best = { at, matched: s };
  }
  return best;
}

/**
 * The output cut before the first stop string, content first, then each call's arguments in
 * order (a call cut there keeps its cut arguments; the calls after it were never written); null
 * when no stop string occurs.
 */
function stopAt(
  content: string,
  calls: GeneratedCall[],
  stops: readonly string[],
): { content: string; calls: GeneratedCall[]; matched: string } | null {
  if (stops.length === 0) return null;
  const inContent = firstStop(content, stops);
  if (inContent) return { content: content.slice(0, inContent.at), calls: [], matched: inContent.matched };
  for (let i = 0; i < calls.length; i++) {
    const call = calls[i]!;
    const hit = firstStop(call.arguments, stops);
    if (!hit) continue;
    const cut = { name: call.name, arguments: call.arguments.slice(0, hit.at) };
    return { content, calls: [...calls.slice(0, i), cut], matched: hit.matched };
  }
  return null;
}

function spend(text: string, budget: Budget): string {
  if (budget.cut) return '';
  let out = '';
  for (const piece of splitTokens(text)) {
    if (budget.tokens <= 0 || budget.chars <= 0) {
      budget.cut = true;
      break;
    }
    const take = piece.length > budget.chars ? piece.slice(0, budget.chars) : piece;
    out += take;
    budget.chars -= take.length;
    budget.tokens -= 1;
    if (take.length < piece.length) {
      budget.cut = true;
      break;
    }
  }
  return out;
}

export function generate(scripted: TurnAction, ctx: GenerateContext): Outcome {
  const action =
    scripted.whenRequired && ctx.toolChoice === 'required' && !ctx.ignoreRequired && ctx.tools.length > 0
      ? scripted.whenRequired
      : scripted;
  const behaviour: Behaviour = action;
  if ('error' in action && !action.error.midStream) return { kind: 'error', error: action.error };

  if (ctx.formatSuppressesTools && ctx.tools.length > 0) {
    const structured = structuredContent('say' in action ? action.say : 'ok', ctx);
    if (structured !== null)
      return applyChoiceAndLimits(action, { ...ctx, tools: [] }, structured, [], behaviour);
  }

  let content = '';
  let calls: GeneratedCall[] = [];
  let leakedCalls: GeneratedCall[] = [];
  if ('say' in action) content = action.say;
  else if ('raw' in action && typeof action.raw === 'string') content = action.raw;
  else if ('call' in action) calls = action.call.map((c) => ({ name: c.name, arguments: argsText(c) }));
  else if ('leak' in action) {
    const leak = action.leak;
    const rendered = renderLeak(
      leak.format,
      leak.calls.map((c) => ({ name: c.name, arguments: argsObject(c) })),
    );
    content = `${leak.before ?? ''}${rendered}${leak.after ?? ''}`;
    leakedCalls = leak.calls.map((c) => ({ name: c.name, arguments: argsText(c) }));
  }

  if ('say' in action) {
    const structured = structuredContent(action.say, ctx);
    if (structured !== null)
      return applyChoiceAndLimits(action, { ...ctx, tools: [] }, structured, [], behaviour);
  }
  return applyChoiceAndLimits(action, ctx, content, calls, behaviour, leakedCalls);
}

/** tool_choice, reasoning and length limits, applied to the raw output. */
function applyChoiceAndLimits(
  action: TurnAction,
  ctx: GenerateContext,
  rawContent: string,
  rawCalls: GeneratedCall[],
  behaviour: Behaviour,
  leakedCalls: GeneratedCall[] = [],
): Outcome {
  let content = rawContent;
  let calls = rawCalls;
  const tools = ctx.tools;
  const choice = ctx.toolChoice;
  const named = namedChoice(choice);
  if (tools.length === 0 || choice === 'none') {
    // Without tools (or with "none") the backend runs no tool parser: calls stay text.
    if (calls.length > 0) {
      content = renderLeak(
        'hermes',
        calls.map((c) => ({ name: c.name, arguments: argsObject({ name: c.name, arguments: c.arguments }) })),
      );
      calls = [];
    }
  } else if (choice === 'required' && !ctx.ignoreRequired) {
    // `raw` is the exact output (e.g. markup cut before the call's name): never rewritten.
    if (calls.length === 0 && !('raw' in action)) {
      calls = leakedCalls.length > 0 ? leakedCalls : forcedCalls(tools, content);
      content = '';
    }
  } else if (named && ctx.personality === 'vllm') {
    // vLLM turns a named tool_choice into a JSON-schema constraint on that tool's arguments.
    const own = calls.find((c) => c.name === named) ?? leakedCalls.find((c) => c.name === named);
    calls = own ? [own] : forcedCalls(tools, content, named);
    content = '';
  }

  // vLLM drops every call after the first when parallel_tool_calls is false; llama-server does not.
  if (ctx.personality === 'vllm' && ctx.parallelToolCalls === false) calls = calls.slice(0, 1);

  // llama-server's PEG parser strips leading whitespace from content when tools are active.
  if (ctx.personality === 'llama-server' && tools.length > 0 && choice !== 'none')
    content = content.trimStart();

  let reasoning: string | null = null;
  if (typeof action.think === 'string') {
    if (action.thinkAsText) content = `<think>${action.think}</think>\n\n${content}`;
    else reasoning = action.think;
  }

  const budget: Budget = {
    chars: action.truncateAt ?? Number.POSITIVE_INFINITY,
    tokens: ctx.maxTokens ?? Number.POSITIVE_INFINITY,
    cut: false,
  };
  // A stop string ends the text where it begins; the budget then spends what is left, so a stop
  // past the length limit is never reached (finish "length").
  const stopped = stopAt(content, calls, ctx.stop ?? []);
  if (stopped) ({ content, calls } = stopped);
  content = spend(content, budget);
  const kept: GeneratedCall[] = [];
  for (const call of calls) {
    if (budget.cut) break;
    kept.push({ name: call.name, arguments: spend(call.arguments, budget) });
  }
  calls = kept;

  const finish = budget.cut ? 'length' : stopped ? 'stop' : calls.length > 0 ? 'tool_calls' : 'stop';
  const midStreamError = 'error' in action ? action.error : null;
  const generation: Generation = { reasoning, content, calls, finish, midStreamError, behaviour };
  if (stopped && !budget.cut) generation.stopMatched = stopped.matched;
  return { kind: 'ok', generation };
}
