/**
 * OpenAI's freeform custom tools on chat completions (`tools: [{type: "custom", custom: {...}}]`),
 * which chat backends do not know: declared upstream as a function with one string argument
 * `input`, as the Responses door declares them (responses/tools.ts: the format becomes the
 * argument's pattern, checked after generation), and the model's calls of it returned as
 * `{type: "custom", custom: {name, input}}`. History and tool_choice are mapped the same way.
 * Pure.
 */
import { upstreamJsonProblem } from './completion-shape.js';
import { ToolproofError } from './errors.js';
import { isObject } from './is-object.js';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionRequest,
  ChatMessage,
  ToolCall,
  ToolCallDelta,
  ToolDef,
} from './openai.js';
import { fromCustom } from './responses/tools.js';

function invalid(param: string, message: string): ToolproofError {
  return new ToolproofError('TP_ERR_INVALID_FIELD', { param, message });
}

/** A custom call's input from the function arguments it was generated as. */
function inputOf(args: string): string {
  if (upstreamJsonProblem(args) !== undefined) return args;
  try {
    const v: unknown = JSON.parse(args);
    if (isObject(v) && typeof v.input === 'string') return v.input;
  } catch {
    // not JSON: the raw text is the input (nothing is lost)
  }
  return args;
}

function customCall(id: string | undefined, name: string, args: string): ToolCall {
  return { id, type: 'custom', custom: { name, input: inputOf(args) } } as unknown as ToolCall;
}

/** What the schema says of a missing field, for what it cannot say (custom tools need no `function`). */
function missing(field: string): ToolproofError {
  return invalid(field, `Missing required field "${field}".`);
}

/**
 * The request with its custom tools as functions, and their names; undefined: it has none.
 * Every other tool, and a named tool_choice, must carry `function` (a 400 naming it).
 */
export function translateCustomTools(
  body: ChatCompletionRequest,
): { chat: ChatCompletionRequest; custom: ReadonlySet<string> } | undefined {
  const tools = body.tools as unknown[] | undefined;
  const choice = body.tool_choice as unknown;
  if (isObject(choice) && choice.type !== 'custom' && !isObject(choice.function))
    throw missing('tool_choice.function');
  let customs = 0;
  if (Array.isArray(tools))
    tools.forEach((t, i) => {
      if (isObject(t) && t.type === 'custom') customs++;
      else if (!isObject(t) || !isObject(t.function)) throw missing(`tools.${i}.function`);
    });
  if (customs === 0) {
    if (isObject(choice) && choice.type === 'custom')
      throw invalid('tool_choice', 'tool_choice.custom.name must name a declared custom tool.');
    return undefined;
  }
  const custom = new Set<string>();
  const names = new Set<string>();
  const declared = (tools as unknown[]).map((t, i): ToolDef => {
    const param = `tools.${i}`;
    if (!isObject(t) || t.type !== 'custom') {
      const name = (t as ToolDef).function?.name;
      if (typeof name === 'string') names.add(name);
      return t as ToolDef;
    }
    if (!isObject(t.custom)) throw invalid(`${param}.custom`, `${param}.custom must be an object.`);
    const { name, description, format } = t.custom;
    // Chat nests the grammar ({type: "grammar", grammar: {syntax, definition}}); Responses does not.
    const flat =
      isObject(format) && isObject(format.grammar) ? { type: format.type, ...format.grammar } : format;
    const { def } = fromCustom({ name, description, format: flat }, `${param}.custom`);
    custom.add(def.function.name);
    return def;
  });
  for (const name of custom)
    if (names.has(name))
      throw invalid('tools', `"${name}" is declared both as a function and as a custom tool.`);
  const chat: ChatCompletionRequest = { ...body, tools: declared, messages: body.messages.map(fromHistory) };
  if (isObject(choice) && choice.type === 'custom') {
    const name = isObject(choice.custom) ? choice.custom.name : undefined;
    if (typeof name !== 'string' || !custom.has(name))
      throw invalid('tool_choice', 'tool_choice.custom.name must name a declared custom tool.');
    chat.tool_choice = { type: 'function', function: { name } };
  }
  return { chat, custom };
}

/** An assistant message's custom calls as the function calls the model made. */
function fromHistory(m: ChatMessage): ChatMessage {
  if (!Array.isArray(m.tool_calls) || !m.tool_calls.some((c) => (c as { type?: unknown }).type === 'custom'))
    return m;
  const calls = m.tool_calls.map((c): ToolCall => {
    const raw = c as unknown as { id: string; type?: unknown; custom?: unknown };
    if (raw.type !== 'custom' || !isObject(raw.custom)) return c;
    const { name, input } = raw.custom;
    return {
      id: raw.id,
      type: 'function',
      function: {
        name: typeof name === 'string' ? name : '',
        arguments: JSON.stringify({ input: typeof input === 'string' ? input : '' }),
      },
    };
  });
  return { ...m, tool_calls: calls };
}

/** The completion with calls of custom tools in their own shape. */
export function toCustomCalls(c: ChatCompletion, custom: ReadonlySet<string>): ChatCompletion {
  return {
    ...c,
    choices: c.choices.map((choice) => {
      const calls = choice.message.tool_calls;
      if (!calls?.some((t) => custom.has(t.function?.name))) return choice;
      return {
        ...choice,
        message: {
          ...choice.message,
          tool_calls: calls.map((t) =>
            custom.has(t.function?.name) ? customCall(t.id, t.function.name, t.function.arguments) : t,
          ),
        },
      };
    }),
  };
}

/**
 * The stream's side: a custom call's argument deltas are JSON, not its input, so each is held and
 * sent whole in the chunk that ends its choice (as the Responses door sends a custom call whole).
 */
export class CustomCallChunks {
  /**
   * choice -> call index -> the call held so far. By choice: a finishing choice sends only its
   * own, and a scan of every held call per finish cost choices x calls (n: 128 with 1,000 calls
   * each: 630 ms of the loop, x8.7 for x4 the choices).
   */
  private readonly held = new Map<number, Map<number, { id?: string; name: string; args: string }>>();

  constructor(private readonly custom: ReadonlySet<string>) {}

  /** The chunk as the client gets it; undefined when nothing of it is left to send. */
  map(chunk: ChatCompletionChunk): ChatCompletionChunk | undefined {
    let changed = false;
    const choices = chunk.choices.map((choice) => {
      const deltas = choice.delta.tool_calls;
      const kept: ToolCallDelta[] = [];
      let mine = this.held.get(choice.index);
      for (const d of deltas ?? []) {
        const held = mine?.get(d.index);
        if (held) held.args += d.function?.arguments ?? '';
        else if (d.function?.name !== undefined && this.custom.has(d.function.name)) {
          if (!mine) this.held.set(choice.index, (mine = new Map()));
          mine.set(d.index, { id: d.id, name: d.function.name, args: d.function.arguments ?? '' });
        } else kept.push(d);
      }
      const whole: ToolCallDelta[] = [];
      if (choice.finish_reason != null && mine) {
        for (const [index, h] of mine)
          whole.push({ index, ...(customCall(h.id, h.name, h.args) as object) } as ToolCallDelta);
        this.held.delete(choice.index);
      }
      if (kept.length === (deltas?.length ?? 0) && whole.length === 0) return choice;
      changed = true;
      const { tool_calls: _, ...rest } = choice.delta;
      const calls = [...kept, ...whole];
      return { ...choice, delta: calls.length > 0 ? { ...rest, tool_calls: calls } : rest };
    });
    if (!changed) return chunk;
    const empty = choices.every((c) => c.finish_reason == null && Object.keys(c.delta).length === 0);
    return empty && !chunk.usage ? undefined : { ...chunk, choices };
  }
}
