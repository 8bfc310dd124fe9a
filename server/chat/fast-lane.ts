/**
 * The stream's fast lane, on the wire side: recognising an upstream event that is one argument
 * fragment of a tool call without JSON.parse, and framing a piece of answer text for the client
 * without JSON.stringify of a chunk.
 *
 * An upstream serializes every event of a stream the same way; only the fragment changes. So
 * the first such event, parsed on the full path, is learned as a template: the text before and
 * after its fragment's string literal. A later event that starts and ends with that text, with
 * one valid JSON string literal between, parses to the template's chunk with that fragment:
 * substituting one JSON value for another cannot change the structure around it. Anything else
 * (another shape, another id, a finish_reason, usage, an error) misses and takes the full path.
 * A template is only learned when the upstream's text is exactly what JSON.stringify writes for
 * the parsed event, so the delta's text is known exactly, and is found only where it is
 * structure (learnArgsTemplate), never inside a string value.
 *
 * Pure: no I/O, no clock. Equivalence with the full path: tests/server/fast-lane.test.ts.
 */
import { materializeLight } from '../../policies/light-delta.js';
import type { ChatCompletionChunk } from '../../protocol/openai.js';
import { ownString } from '../../protocol/own-string.js';
import type { LightFrame } from '../../policies/types.js';
import type { StreamChain } from '../../policies/composition.js';

/** Templates learned per attempt at most (each costs a parse and a stringify of one event). */
const MAX_LEARNS = 8;

/** A string no template holds: the split point, written by JSON.stringify. */
const MARK = '\u0001toolproof-fast-lane\u0001';
const MARK_JSON = JSON.stringify(MARK);

/** Events like one learned: `head` + a JSON string literal (the fragment) + `tail`. */
interface ArgsTemplate {
  readonly head: string;
  readonly tail: string;
  /** The upstream's call index (the tool call's `index`). */
  readonly call: number;
  /** The chunk around the fragment, parsed once (a private copy: nothing else holds it). */
  readonly frame: LightFrame;
}

/** A framed answer chunk: `head` + JSON.stringify(text) + `tail`. */
interface FramedAnswer {
  readonly head: string;
  readonly tail: string;
}

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Exactly these own keys, in this order (the order the fast lane rebuilds them in). */
function keysAre(o: Obj, keys: readonly string[]): boolean {
  let i = 0;
  for (const k in o) {
    if (k !== keys[i]) return false;
    i++;
  }
  return i === keys.length;
}

/**
 * The call index and fragment of an event whose only content is one argument fragment:
 * `{..., choices: [{index, delta: {tool_calls: [{index, function: {arguments}}]}, finish_reason: null, ...}]}`
 * with no usage and no error. null for anything else (cheap: a few property reads).
 */
export function argsOnly(chunk: unknown): { call: number; fragment: string } | null {
  if (!isObj(chunk) || chunk.error !== undefined || chunk.usage != null || typeof chunk.id !== 'string')
    return null;
  const choices = chunk.choices;
  if (!Array.isArray(choices) || choices.length !== 1) return null;
  const c0: unknown = choices[0];
  if (!isObj(c0) || c0.finish_reason !== null || typeof c0.index !== 'number') return null;
  const delta = c0.delta;
  if (!isObj(delta) || !keysAre(delta, ['tool_calls'])) return null;
  const calls = delta.tool_calls;
  if (!Array.isArray(calls) || calls.length !== 1) return null;
  const tc: unknown = calls[0];
  if (!isObj(tc) || !keysAre(tc, ['index', 'function']) || !Number.isInteger(tc.index)) return null;
  const fn = tc.function;
  if (!isObj(fn) || !keysAre(fn, ['arguments']) || typeof fn.arguments !== 'string') return null;
  return { call: tc.index as number, fragment: fn.arguments };
}

/** `text` around the one MARK_JSON in it, or null. */
function splitAtMark(text: string): { head: string; tail: string } | null {
  const at = text.indexOf(MARK_JSON);
  if (at === -1 || text.indexOf(MARK_JSON, at + 1) !== -1) return null;
  return { head: ownString(text.slice(0, at)), tail: ownString(text.slice(at + MARK_JSON.length)) };
}

/**
 * A template from an args-only event (argsOnly(JSON.parse(payload))), or null when its text is
 * not JSON.stringify's. The split point is where JSON.stringify writes the event's delta,
 * `"delta":{"tool_calls":[{"index":N,"function":{"arguments":F}}]}` (argsOnly fixed its keys and
 * their order): when the payload is exactly JSON.stringify's text, that text occurs in it, only
 * as structure (a quote inside a string value is escaped), and when it occurs only once it is
 * the delta itself (a twin elsewhere makes the event slow).
 * Searching for it costs less than serializing a probe chunk around a marker and splicing.
 */
export function learnArgsTemplate(
  payload: string,
  args: { call: number; fragment: string },
): ArgsTemplate | null {
  // A "__proto__" key parses as data but spreads as data only with care: keep such events slow.
  if (payload.includes('__proto__')) return null;
  const chunk = JSON.parse(payload) as Obj & { choices: Obj[] };
  if (JSON.stringify(chunk) !== payload) return null;
  const lead = `"delta":{"tool_calls":[{"index":${args.call},"function":{"arguments":`;
  const literal = JSON.stringify(args.fragment);
  const at = payload.indexOf(lead);
  const from = at + lead.length;
  if (at === -1 || payload.indexOf(lead, from) !== -1) return null;
  if (payload.slice(from, from + literal.length + DELTA_END.length) !== literal + DELTA_END) return null;
  const c0 = chunk.choices[0]!;
  return {
    // Kept for the stream's life: not as views into the event (and the read) they came from.
    head: ownString(payload.slice(0, from)),
    tail: ownString(payload.slice(from + literal.length)),
    call: args.call,
    frame: { chunk: chunk as unknown as LightFrame['chunk'], choice: c0.index as number },
  };
}

const DELTA_END = '}}]}';

/** The fragment of an event that matches the template, or undefined (the full path then). */
export function matchArgs(t: ArgsTemplate, payload: string): string | undefined {
  const end = payload.length - t.tail.length;
  // slice + === (a memory compare) rather than startsWith, which V8 runs char by char: ~10x slower here.
  if (end - t.head.length < 2 || payload.slice(0, t.head.length) !== t.head || payload.slice(end) !== t.tail)
    return undefined;
  if (payload.charCodeAt(t.head.length) !== 34 || payload.charCodeAt(end - 1) !== 34) return undefined;
  if (plainText(payload, t.head.length + 1, end - 1)) return payload.slice(t.head.length + 1, end - 1);
  try {
    // One JSON string literal and nothing else, or it throws.
    const v: unknown = JSON.parse(payload.slice(t.head.length, end));
    return typeof v === 'string' ? v : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether text[from, to) is plain: no backslash, quote, control character or surrogate. Most
 * fragments are. In quotes, plain text is a JSON string literal of itself, and exactly what
 * JSON.stringify writes for it (it escapes nothing else).
 */
function plainText(text: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    if (c === 92 || c === 34 || c < 32 || (c >= 0xd800 && c <= 0xdfff)) return false;
  }
  return true;
}

/**
 * How an output frames answer text: `frame` applied to the answer chunk with a marker for its
 * text, split around it. null when the frame holds the marker elsewhere (never in practice).
 */
function framedAnswer(frame: (text: string) => string): FramedAnswer | null {
  return splitAtMark(frame(MARK));
}

/** Where the lane's output goes: chunks, or text already framed (only with a `frame` function). */
export interface LaneSink {
  chunk(c: ChatCompletionChunk): void;
  framed(text: string): void;
}

export interface FastLane {
  /**
   * An event that matches the learned template, through the chain light: true when handled
   * (its output went to `sink`), false when it must take the full path.
   */
  take(payload: string, sink: LaneSink): boolean;
  /** The identity chunk of the last event taken (id, model, created). */
  readonly frameChunk: ChatCompletionChunk | undefined;
  /** After the full path handled `chunk` (parsed from `payload`): learn it when it is args-only. */
  learn(payload: string, chunk: unknown): void;
}

/**
 * One attempt's lane. `frame` is the output's framing of one chunk (chat SSE), when it has one:
 * answer text is then spliced into the framed answer chunk instead of building and serializing it.
 */
export function createFastLane(
  chain: Pick<StreamChain, 'pushLight'>,
  frame: ((c: ChatCompletionChunk) => string) | null,
): FastLane {
  return new AttemptLane(chain, frame);
}

/** A class rather than closures: each open stream holds one lane object, the methods are shared. */
class AttemptLane implements FastLane {
  private template: ArgsTemplate | null = null;
  private answer: FramedAnswer | null = null;
  private learns = 0;

  constructor(
    private readonly chain: Pick<StreamChain, 'pushLight'>,
    private readonly frame: ((c: ChatCompletionChunk) => string) | null,
  ) {}

  get frameChunk(): ChatCompletionChunk | undefined {
    return this.template?.frame.chunk;
  }

  take(payload: string, sink: LaneSink): boolean {
    const t = this.template;
    if (!t) return false;
    const fragment = matchArgs(t, payload);
    if (fragment === undefined) return false;
    const r = this.chain.pushLight({ kind: 'args', call: t.call, fragment }, t.frame);
    if (r === null) return true;
    if (Array.isArray(r)) {
      for (const c of r) sink.chunk(c);
    } else if (r.kind === 'answer' && this.answer) {
      // Answer text that is the event's plain fragment (most of them): its literal is in the
      // payload already, quotes included (plainText), so it need not be written again.
      const end = payload.length - t.tail.length;
      const literal =
        r.text === fragment &&
        end - t.head.length === fragment.length + 2 &&
        plainText(payload, t.head.length + 1, end - 1)
          ? payload.slice(t.head.length, end)
          : JSON.stringify(r.text);
      sink.framed(this.answer.head + literal + this.answer.tail);
    } else sink.chunk(materializeLight(r, t.frame));
    return true;
  }

  learn(payload: string, chunk: unknown): void {
    if (this.learns >= MAX_LEARNS) return;
    const args = argsOnly(chunk);
    if (!args) return;
    this.learns++;
    const t = learnArgsTemplate(payload, args);
    if (!t) return;
    this.template = t;
    const frame = this.frame;
    this.answer = frame
      ? framedAnswer((text) => frame(materializeLight({ kind: 'answer', text }, t.frame)))
      : null;
  }
}
