/**
 * Is an upstream's non-streamed completion shaped so that toolproof can read it? Pure. The
 * pipeline and every front door's translation index into choices, messages and tool calls; a
 * backend (or a proxy in front of it) that sends `"choices":[null]` or `"tool_calls":"x"` must
 * become a 502 naming the field, not a TypeError answered as toolproof's own 500. Lenient
 * where the rest of toolproof already copes (null entries in tool_calls, arguments as an
 * object, odd content types): only what would throw is refused.
 */
import { isObject } from './is-object.js';
import { deeperThan } from './json-depth.js';
import { describeExcess, excessKeys, MAX_DISTINCT_KEYS, SCAN_FROM_CHARS } from './json-keys.js';

/**
 * The deepest nesting read from an upstream. JSON.parse takes 100k nested arrays in a field
 * nobody reads; JSON.stringify, writing the completion to the client, then overflowed the stack
 * (toolproof's own 500, or TP_ERR_INTERNAL in a stream). A real completion nests a tool call's
 * arguments a few levels below its choice, and clients' arguments are bounded at 128 levels.
 */
export const MAX_UPSTREAM_DEPTH = 512;
const TOO_DEEP = `a value nested deeper than ${MAX_UPSTREAM_DEPTH} levels`;

/**
 * What an upstream's JSON may name before it is parsed (json-keys.ts): JSON.parse pays for every
 * distinct key and every level of nesting on the event loop, and the upstream is no more trusted
 * than a client (14 MB of nested arrays in one event held the loop 11 s, 700k distinct keys 8 s,
 * before the depth check after the parse could refuse it). Keys made of digits are counted apart:
 * `prompt_logprobs` name token ids, up to a vocabulary's worth.
 */
const UPSTREAM_LIMITS = Object.freeze({
  topLevel: MAX_DISTINCT_KEYS,
  distinct: MAX_DISTINCT_KEYS,
  indexKeys: 300_000,
  depth: MAX_UPSTREAM_DEPTH,
});

/**
 * Why an upstream's JSON text (a body, or one event's payload) must not be parsed, as a
 * sentence fragment ("a value nested deeper than 512 levels"); undefined when it may. A text
 * shorter than SCAN_FROM_CHARS is not scanned: it costs the parse little whatever its shape.
 */
export function upstreamJsonProblem(text: string | Buffer): string | undefined {
  if (text.length < SCAN_FROM_CHARS) return undefined;
  const excess = excessKeys(typeof text === 'string' ? Buffer.from(text, 'utf8') : text, UPSTREAM_LIMITS);
  return excess ? describeExcess(excess) : undefined;
}

/**
 * A message's or delta's text fields. `content` that is neither a string, null nor a list of
 * parts (a number, an object) is the upstream's fault, refused by name: written as text it
 * would be invented ("42", "[object Object]"), dropped it would be lost. A reasoning
 * (`reasoning_content`, `reasoning`) that is not a string is removed from the message, as if
 * absent: it is commentary beside the answer, and toolproof has no text to give for it. The same
 * rule for a whole message and a delta, so streamed and not agree. The only change these checks
 * make to what they are given.
 */
function textProblem(m: Record<string, unknown>, at: string): string | undefined {
  const content = m.content;
  if (content !== undefined && content !== null && typeof content !== 'string' && !Array.isArray(content))
    return `${at}.content that is not a string`;
  if (m.reasoning_content != null && typeof m.reasoning_content !== 'string') delete m.reasoning_content;
  if (m.reasoning != null && typeof m.reasoning !== 'string') delete m.reasoning;
  return undefined;
}

/** The first field toolproof cannot read, as a sentence fragment, or undefined when all is readable. */
export function completionShapeProblem(completion: unknown): string | undefined {
  if (!isObject(completion) || !Array.isArray(completion.choices) || completion.choices.length === 0)
    return 'a response without choices';
  if (deeperThan(completion, MAX_UPSTREAM_DEPTH)) return TOO_DEEP;
  for (const [i, choice] of completion.choices.entries()) {
    if (!isObject(choice)) return `choices[${i}] that is not an object`;
    const message = choice.message;
    if (message === undefined) continue;
    if (!isObject(message)) return `choices[${i}].message that is not an object`;
    const text = textProblem(message, `choices[${i}].message`);
    if (text) return text;
    const calls = message.tool_calls;
    if (calls === undefined || calls === null) continue;
    if (!Array.isArray(calls)) return `choices[${i}].message.tool_calls that is not an array`;
    for (const [j, call] of calls.entries()) {
      if (call === null) continue;
      if (!isObject(call) || !isObject(call.function) || typeof call.function.name !== 'string')
        return `choices[${i}].message.tool_calls[${j}] without a function name`;
    }
  }
  return undefined;
}

/**
 * The same for one streamed chunk: its choices, deltas and tool-call deltas are indexed
 * into by every stream hook and translator. A chunk without choices (usage, an error) passes;
 * choices that are there but not an array do not.
 * `calls` (per stream, kept by the caller) holds the calls already opened, as `choice:call`
 * keys, created at the first call: the delta that opens a call must name its function, as a
 * whole message's call must (a stream's later deltas of that call carry only arguments).
 */
export function chunkShapeProblem(
  chunk: Record<string, unknown>,
  calls?: OpenedCalls,
  /** The event's length in characters: one shorter than two per level cannot be too deep (no walk). */
  length = Number.POSITIVE_INFINITY,
): string | undefined {
  if (length > 2 * MAX_UPSTREAM_DEPTH && deeperThan(chunk, MAX_UPSTREAM_DEPTH)) return TOO_DEEP;
  if (chunk.choices === undefined || chunk.choices === null) return undefined;
  // Every reader iterates `choices ?? []`: an object or a string there threw a TypeError (500).
  if (!Array.isArray(chunk.choices)) return 'choices that is not an array';
  for (const [i, choice] of chunk.choices.entries()) {
    if (!isObject(choice)) return `choices[${i}] that is not an object`;
    const delta = choice.delta;
    if (delta === undefined || delta === null) continue;
    if (!isObject(delta)) return `choices[${i}].delta that is not an object`;
    const text = textProblem(delta, `choices[${i}].delta`);
    if (text) return text;
    const deltas = delta.tool_calls;
    if (deltas === undefined || deltas === null) continue;
    if (!Array.isArray(deltas)) return `choices[${i}].delta.tool_calls that is not an array`;
    for (const [j, call] of deltas.entries()) {
      if (!isObject(call)) return `choices[${i}].delta.tool_calls[${j}] that is not an object`;
      if (!calls) continue;
      const key = `${String(choice.index)}:${String(call.index)}`;
      if (calls.opened?.has(key)) continue;
      if (!isObject(call.function) || typeof call.function.name !== 'string')
        return `choices[${i}].delta.tool_calls[${j}] without a function name`;
      (calls.opened ??= new Set()).add(key);
    }
  }
  return undefined;
}

/** Where a stream keeps the calls it opened (a Set only once there is a call). */
export interface OpenedCalls {
  opened?: Set<string>;
}

/** A whole stream that ended without a single choice (what a whole response without choices is). */
export const NO_CHOICES = 'a stream without choices';

/** The most choices a request may ask for (`n`): OpenAI's own limit. */
export const MAX_CHOICES = 128;

/** How many choices the client asked for: its `n` when a positive integer, 1 by default, at most MAX_CHOICES. */
export function askedChoices(n: unknown): number {
  return typeof n === 'number' && Number.isInteger(n) && n >= 1 ? Math.min(n, MAX_CHOICES) : 1;
}

/**
 * The choices the client asked for: those whose `index` is in 0..limit-1 (a choice without an
 * integer index counts by its position). An upstream that answers with more (40k choices in
 * one chunk cost seconds of event loop, a recovery engine each) has them dropped, the same way
 * whole and streamed. Returns the list itself when nothing is dropped. Pure; shapes are checked
 * before (completionShapeProblem, chunkShapeProblem).
 */
export function askedChoicesOf<T>(
  choices: readonly T[],
  limit: number,
): { choices: readonly T[]; dropped: number } {
  let dropped = 0;
  for (let i = 0; i < choices.length; i++) if (!isAsked(choices[i], i, limit)) dropped++;
  if (dropped === 0) return { choices, dropped };
  const kept: T[] = [];
  for (let i = 0; i < choices.length; i++) if (isAsked(choices[i], i, limit)) kept.push(choices[i] as T);
  return { choices: kept, dropped };
}

function isAsked(choice: unknown, position: number, limit: number): boolean {
  const index = isObject(choice) ? choice.index : undefined;
  const at = typeof index === 'number' && Number.isInteger(index) ? index : position;
  return at >= 0 && at < limit;
}
