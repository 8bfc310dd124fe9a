/**
 * tool-names (request, response, stream): a backend built on mistral_common (vLLM with the
 * Mistral tokenizer) refuses any function name outside `^[a-zA-Z0-9_-]{1,64}$` with "Function name
 * was <name> but must be a-z, A-Z, 0-9, or contain underscores and dashes, with a maximum length
 * of 64." (mistral_common's request validator, on the tools and on the history's calls). An agent
 * with an MCP tool named past 64 characters (Claude Code's `mcp__plugin_<server>__<tool>`) sends
 * it every turn: every turn was refused. Once the upstream refused that way (Policy.refusal: the
 * request is prepared again and sent once more; the fact is remembered per upstream and model),
 * each such name goes upstream as its alias (kit/tool-name-alias.ts: the same alias every turn,
 * docs/prefix.md) in `tools`, the history's calls, tool messages' `name` and a named
 * `tool_choice`; the answer's calls to an alias come back under the client's name, streamed or
 * not, before the policies that judge them read them. Its response side runs after leak-recovery,
 * which reads calls against the tools as sent: a call the model leaks as text names the alias it
 * was shown, and is renamed with the structured ones (before, it reached corrective-retry as a
 * call to a tool the client never declared, and was re-asked away). Portable names are left as
 * they are. A leaked call that names the client's own unportable name (the model never saw it)
 * is not read as a call.
 */
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionRequest,
  ChatMessage,
  ToolCall,
} from '../../protocol/openai.js';
import { isPlainObject } from '../kit/canonical-arguments.js';
import { PORTABLE_TOOL_NAME, toolNameAlias } from '../kit/tool-name-alias.js';
import { passThroughHook, type Policy, type StreamHook, wasRefused } from '../types.js';
import { describeToolNamesEffect, TOOL_NAMES_POLICY, type ToolNamesEffect } from './effects.js';
import { errorBodyHead } from '../kit/error-text.js';

const TOOL_NAMES_FACT = 'tool-names';

/** mistral_common's words (its message names the refused name first, of any length). */
const REFUSES = /but must be a-z, A-Z, 0-9, or contain underscores and dashes, with a maximum length of 64/;

/** What goes back: alias -> the client's name. */
interface ToolNamesMemo {
  back: Map<string, string>;
}

function isMemo(memo: unknown): memo is ToolNamesMemo {
  return isPlainObject(memo) && memo.back instanceof Map;
}

/** Every tool name the request carries (tools, history calls, tool messages, a named choice). */
function namesOf(request: ChatCompletionRequest, visit: (name: string) => void): void {
  for (const t of request.tools ?? []) {
    const fn = isPlainObject(t) ? t.function : undefined;
    if (isPlainObject(fn) && typeof fn.name === 'string') visit(fn.name);
  }
  for (const m of Array.isArray(request.messages) ? request.messages : []) {
    if (!isPlainObject(m)) continue;
    if (m.role === 'tool' && typeof m.name === 'string') visit(m.name);
    if (Array.isArray(m.tool_calls))
      for (const c of m.tool_calls)
        if (isPlainObject(c) && isPlainObject(c.function) && typeof c.function.name === 'string')
          visit(c.function.name);
  }
  const choice: unknown = request.tool_choice;
  if (isPlainObject(choice) && isPlainObject(choice.function) && typeof choice.function.name === 'string')
    visit(choice.function.name);
}

/** Whether an error refused `sent` for a tool name. Reads at most 4,000 characters of the body. */
export function refusesToolNames(status: number, body: unknown, sent: ChatCompletionRequest): boolean {
  if (status !== 400 && status !== 422 && status !== 500) return false;
  let unportable = false;
  namesOf(sent, (n) => {
    unportable ||= !PORTABLE_TOOL_NAME.test(n);
  });
  if (!unportable) return false;
  return REFUSES.test(errorBodyHead(body, 4000));
}

/** The aliases of the request's unportable names (client's name -> alias); empty when none. */
function aliasesOf(request: ChatCompletionRequest): Map<string, string> {
  const portable = new Set<string>();
  const out = new Map<string, string>();
  namesOf(request, (n) => {
    if (PORTABLE_TOOL_NAME.test(n)) portable.add(n);
    else if (!out.has(n)) out.set(n, toolNameAlias(n));
  });
  // An alias that is already some other tool's name would merge two tools: that name stays as it is.
  for (const [name, alias] of out) if (portable.has(alias)) out.delete(name);
  return out;
}

function renamedMessage(m: ChatMessage, to: Map<string, string>): ChatMessage {
  let out = m;
  if (m.role === 'tool' && typeof m.name === 'string' && to.has(m.name))
    out = { ...m, name: to.get(m.name)! };
  if (Array.isArray(m.tool_calls) && m.tool_calls.some((c) => to.has(c?.function?.name as string))) {
    out = {
      ...out,
      tool_calls: m.tool_calls.map((c) => {
        const alias = to.get(c?.function?.name as string);
        return alias === undefined ? c : { ...c, function: { ...c.function, name: alias } };
      }),
    };
  }
  return out;
}

function renamed(request: ChatCompletionRequest, to: Map<string, string>): ChatCompletionRequest {
  const out: ChatCompletionRequest = { ...request };
  if (Array.isArray(request.tools))
    out.tools = request.tools.map((t) => {
      const alias =
        isPlainObject(t) && isPlainObject(t.function) ? to.get(t.function.name as string) : undefined;
      return alias === undefined ? t : { ...t, function: { ...t.function, name: alias } };
    });
  if (Array.isArray(request.messages)) out.messages = request.messages.map((m) => renamedMessage(m, to));
  const choice: unknown = request.tool_choice;
  if (isPlainObject(choice) && isPlainObject(choice.function)) {
    const alias = to.get(choice.function.name as string);
    if (alias !== undefined)
      out.tool_choice = {
        ...choice,
        function: { ...choice.function, name: alias },
      } as typeof request.tool_choice;
  }
  return out;
}

function callsBack(calls: ToolCall[], back: Map<string, string>): ToolCall[] {
  if (!calls.some((c) => back.has(c?.function?.name as string))) return calls;
  return calls.map((c) => {
    const name = back.get(c?.function?.name as string);
    return name === undefined ? c : { ...c, function: { ...c.function, name } };
  });
}

/** The stream side: a call delta naming an alias is given the client's name (vLLM sends a name whole). */
function createNamesBackHook(back: Map<string, string>): StreamHook<ToolNamesEffect> {
  return {
    onChunk(chunk: ChatCompletionChunk) {
      const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
      if (!choices.some((c) => c?.delta?.tool_calls?.some((t) => back.has(t?.function?.name as string))))
        return [chunk];
      return [
        {
          ...chunk,
          choices: choices.map((c) => {
            const tcs = c?.delta?.tool_calls;
            if (!Array.isArray(tcs)) return c;
            return {
              ...c,
              delta: {
                ...c.delta,
                tool_calls: tcs.map((t) => {
                  const name = back.get(t?.function?.name as string);
                  return name === undefined ? t : { ...t, function: { ...t.function, name } };
                }),
              },
            };
          }),
        },
      ];
    },
    // A light delta is arguments or answer text: it names no tool.
    onLight: (delta) => delta,
    onEnd: () => ({ chunks: [], effects: [] }),
  };
}

export const toolNamesPolicy: Policy<ToolNamesEffect> = {
  name: TOOL_NAMES_POLICY,
  // Always on: it acts only once the upstream refused a name (ctx.refused).
  enabled: () => true,
  describeEffect: describeToolNamesEffect,
  refusal: {
    fact: TOOL_NAMES_FACT,
    decision: 'tool-names-refused',
    refused: (status, body, sent) => refusesToolNames(status, body, sent),
    describe: (status) =>
      `the upstream refused a tool name (status ${status}): names outside a-z, A-Z, 0-9, _ and - or past 64 characters sent again under aliases`,
  },
  onRequest(request, ctx) {
    if (!wasRefused(ctx, TOOL_NAMES_FACT)) return { action: 'continue', request, effects: [] };
    const to = aliasesOf(request);
    if (to.size === 0) return { action: 'continue', request, effects: [] };
    const back = new Map<string, string>();
    for (const [name, alias] of to) back.set(alias, name);
    return {
      action: 'continue',
      request: renamed(request, to),
      effects: [{ policy: TOOL_NAMES_POLICY, kind: 'tool-names-aliased', count: to.size }],
      memo: { back } satisfies ToolNamesMemo,
    };
  },
  onResponse(response: ChatCompletion, _ctx, memo) {
    if (!isMemo(memo) || !Array.isArray(response.choices))
      return { action: 'continue', response, effects: [] };
    const choices = response.choices.map((c) => {
      const calls = c?.message?.tool_calls;
      if (!Array.isArray(calls)) return c;
      const mapped = callsBack(calls, memo.back);
      return mapped === calls ? c : { ...c, message: { ...c.message, tool_calls: mapped } };
    });
    return { action: 'continue', response: { ...response, choices }, effects: [] };
  },
  createStreamHook(_ctx, memo) {
    return isMemo(memo) ? createNamesBackHook(memo.back) : passThroughHook();
  },
};
