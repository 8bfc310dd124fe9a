/**
 * Scenarios: what the scripted model does at each turn (turn = assistant messages so far).
 * Built-ins are functions; inline scenarios (option or `x-sim-scenario` header) are JSON.
 */
import type { ChatMessage, ContentPart } from '../protocol/openai.js';
import { readFileTask, workingDirectory, writeCall } from './file-task.js';
import { sampleArguments } from './schema-args.js';
import { hashString } from './tokens.js';
import {
  LEAK_FORMATS,
  type LeakFormat,
  type ScenarioFn,
  type ScenarioSpec,
  type ScriptedCall,
  type TurnAction,
  type TurnContext,
} from './types.js';

function messageText(content: ChatMessage['content']): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((p: ContentPart) => (typeof p?.text === 'string' ? p.text : ''))
      .filter(Boolean)
      .join('\n');
  }
  return '';
}

export function turnContext(messages: ChatMessage[], tools: TurnContext['tools']): TurnContext {
  let turn = 0;
  let lastUserText = '';
  let lastToolResult = '';
  for (const m of messages) {
    if (m?.role === 'assistant') turn++;
    if (m?.role === 'user') lastUserText = messageText(m.content);
    if (m?.role === 'tool') lastToolResult = messageText(m.content);
  }
  const last = messages[messages.length - 1];
  return { turn, tools, lastUserText, lastToolResult, afterToolResult: last?.role === 'tool', messages };
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

function finalAnswer(ctx: TurnContext): string {
  if (ctx.lastToolResult)
    return `Based on the tool result (${clip(ctx.lastToolResult, 120)}), here is your answer.`;
  return plainAnswer(ctx);
}

function plainAnswer(ctx: TurnContext): string {
  return ctx.lastUserText
    ? `Here is a short answer to "${clip(ctx.lastUserText, 120)}": it depends, but the simulator says yes.`
    : 'Hello! I am the toolproof backend simulator.';
}

function firstToolCall(ctx: TurnContext): { name: string; arguments: Record<string, unknown> } | undefined {
  const tool = ctx.tools[0];
  if (!tool?.function?.name) return undefined;
  return { name: tool.function.name, arguments: sampleArguments(tool.function.parameters, ctx.lastUserText) };
}

function leakScenario(format: LeakFormat): ScenarioFn {
  return (ctx) => {
    const call = firstToolCall(ctx);
    if (ctx.turn > 0 || !call) return { say: finalAnswer(ctx) };
    return { leak: { format, calls: [call] } };
  };
}

/** "create NAME containing TEXT": the agent's write tool with those arguments (file-task.ts). */
function fileTaskCall(ctx: TurnContext): { call?: ScriptedCall; final?: string } {
  const task = readFileTask(ctx.messages);
  if (!task) return {};
  const call = writeCall(task, ctx.tools, workingDirectory(ctx.messages));
  return call ? { call, ...(task.final ? { final: task.final } : {}) } : {};
}

const demo: ScenarioFn = (ctx) => {
  const task = fileTaskCall(ctx);
  const call = task.call ?? firstToolCall(ctx);
  if (!call) return { say: plainAnswer(ctx) };
  if (ctx.turn > 0 || ctx.afterToolResult) return { say: task.final ?? finalAnswer(ctx) };
  // A small model's three habits with tools, picked per question so a demo shows all of them.
  switch (hashString(ctx.lastUserText) % 3) {
    case 0:
      return { leak: { format: 'hermes', calls: [call], before: 'Let me check that for you.\n' } };
    case 1:
      return {
        say: `I called ${call.name} for you and it worked: everything looks fine. (No tool was actually called.)`,
        // Under "required" the same model has to pick a tool, and picks the real one.
        whenRequired: { call: [call] },
      };
    default:
      return { call: [call] };
  }
};

const BUILT_INS: Record<string, ScenarioFn> = {
  demo,
  prose: (ctx) => ({ say: ctx.turn > 0 ? finalAnswer(ctx) : plainAnswer(ctx) }),
  tools: (ctx) => {
    const call = firstToolCall(ctx);
    return ctx.turn > 0 || !call ? { say: finalAnswer(ctx) } : { call: [call] };
  },
  echo: (ctx) => ({ say: ctx.lastUserText }),
  ...Object.fromEntries(LEAK_FORMATS.map((f) => [`leak-${f}`, leakScenario(f)])),
};

export const BUILT_IN_SCENARIOS: readonly string[] = Object.freeze(Object.keys(BUILT_INS));

function fromScript(turns: TurnAction[]): ScenarioFn {
  if (turns.length === 0) throw new Error('scenario has no turns');
  return (ctx) => turns[Math.min(ctx.turn, turns.length - 1)] as TurnAction;
}

function isAction(value: unknown): value is TurnAction {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  return ['say', 'call', 'leak', 'raw', 'error', 'think'].some((k) => k in value);
}

/** Resolves a scenario option or header value. Throws with a readable message when it is unknown or malformed. */
export function resolveScenario(spec: ScenarioSpec): ScenarioFn {
  if (typeof spec === 'function') return spec;
  if (Array.isArray(spec)) return fromScript(spec);
  if (typeof spec === 'object') {
    if (Array.isArray(spec.turns)) return fromScript(spec.turns);
    if (isAction(spec)) return fromScript([spec]);
    throw new Error('scenario object needs a "turns" array');
  }
  const trimmed = spec.trim();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch (err) {
      throw new Error(`scenario is not valid JSON: ${(err as Error).message}`);
    }
    if (Array.isArray(parsed)) return fromScript(parsed as TurnAction[]);
    if (isAction(parsed)) return fromScript([parsed]);
    if (
      typeof parsed === 'object' &&
      parsed !== null &&
      Array.isArray((parsed as { turns?: unknown }).turns)
    ) {
      return fromScript((parsed as { turns: TurnAction[] }).turns);
    }
    throw new Error('inline scenario must be an action, an array of actions, or {"turns":[…]}');
  }
  const fn = BUILT_INS[trimmed];
  if (!fn) throw new Error(`unknown scenario "${trimmed}"; built-ins: ${BUILT_IN_SCENARIOS.join(', ')}`);
  return fn;
}
