/**
 * Shared readers for the long-tail families (MiniMax, Granite, Functionary, Command R7B, Gemma,
 * DSML, Step3, Kimi K3, ...), built on the kit. Each returns what a family's `match` needs and
 * keeps the prefix-stability contract of engine/family.ts: 'need-more' whenever more text could
 * change the answer, a final answer otherwise. All scans are indexOf / single forward passes.
 */
import type { EnvelopeMatch, MatchInput, MatchResult } from '../engine/family.js';
import type { DeclaredTool, ParseContext, ParsedCall } from '../types.js';
import { callFromObject, decodeBody, finishMatch, peekNonWs } from './envelope.js';
import { expectLiteral, scanJsonValue, skipWs } from './json-scan.js';
import { decodeJsonLenient, isPlainObject } from './lenient-json.js';
import { coerceParamValue, createArgs, paramSchema } from './schema-values.js';
import { pushAll } from '../../protocol/append-all.js';

export type BodyResult = { calls: ParsedCall[] } | { error: string };

/** Maps one decoded JSON element to a call; null = not a call of this family's shape. */
export type ToCall = (v: unknown) => ParsedCall | null;

/**
 * Reads a JSON body holding one call object, an array of them, or several objects one after
 * another (MiniMax M1 writes one per line). Fences (```json) are accepted.
 */
export function callsFromJson(body: string, toCall: ToCall, allowMissingClose: boolean): BodyResult {
  const start = skipWs(body, 0);
  if (body[start] === '{') {
    const first = scanJsonValue(body, start);
    // Several objects back to back: read each one on its own.
    if (first && first.end > 0 && skipWs(body, first.end) < body.length) {
      return objectSequence(body, start, toCall, allowMissingClose);
    }
  }
  // An unclosed value cannot decode without the missing-brace repair: say so without paying
  // for a JSON.parse exception (hostile inputs repeat this per marker).
  if (!allowMissingClose && (body[start] === '{' || body[start] === '[')) {
    const scan = scanJsonValue(body, start);
    if (!scan || scan.end < 0) return { error: 'body is not JSON' };
  }
  const d = decodeBody(body, allowMissingClose);
  if (!d) return { error: 'body is not JSON' };
  const items = Array.isArray(d.value) ? d.value : [d.value];
  return mapCalls(items, toCall, d.repairs);
}

function objectSequence(body: string, start: number, toCall: ToCall, allowMissingClose: boolean): BodyResult {
  const calls: ParsedCall[] = [];
  let i = start;
  while (i < body.length) {
    // one surplus closing brace after the last object (Qwen2.5-Coder-14B closes its call twice)
    if (calls.length > 0 && body[i] === '}' && skipWs(body, i + 1) === body.length) {
      for (const c of calls) c.repairs = [...(c.repairs ?? []), 'extra-close-brace'];
      return { calls };
    }
    if (body[i] !== '{') return { error: 'unexpected text between call objects' };
    const scan = scanJsonValue(body, i);
    const end = scan && scan.end > 0 ? scan.end : body.length;
    const d = decodeJsonLenient(body.slice(i, end), {
      allowMissingClose: allowMissingClose && end === body.length,
    });
    if (!d) return { error: 'call object is not JSON' };
    const r = mapCalls([d.value], toCall, d.repairs);
    if ('error' in r) return r;
    pushAll(calls, r.calls);
    i = skipWs(body, end);
    // tolerate a separating comma between objects
    if (body[i] === ',') i = skipWs(body, i + 1);
  }
  return { calls };
}

function mapCalls(items: unknown[], toCall: ToCall, repairs: readonly string[]): BodyResult {
  if (items.length === 0) return { error: 'no call in envelope' };
  const calls: ParsedCall[] = [];
  for (const it of items) {
    const c = toCall(it);
    if (!c) return { error: 'not a call object' };
    calls.push(repairs.length > 0 ? { ...c, repairs: [...(c.repairs ?? []), ...repairs] } : c);
  }
  return { calls };
}

export const defaultToCall: ToCall = callFromObject;

export interface JsonAfterOptions {
  /** First characters (after whitespace) that make the marker this family's, e.g. '[' or '{['. */
  opens: string;
  /** An optional closing literal consumed right after the JSON (whitespace allowed before it). */
  closer?: string;
  toCall?: ToCall;
  /** Where the JSON starts when the marker itself ends with its opening bracket (`functools[`). */
  bodyStart?: (input: MatchInput) => number;
}

/**
 * `MARKER <json>` with no end marker of its own (Granite, Granite-20B-FC, Phi-4-mini, GigaChat):
 * the envelope ends where the JSON value ends, plus an optional closer.
 */
export function matchJsonAfter(input: MatchInput, o: JsonAfterOptions): MatchResult {
  const { text, start, marker, final } = input;
  const toCall = o.toCall ?? defaultToCall;
  const from = o.bodyStart ? o.bodyStart(input) : start + marker.length;
  const j = peekNonWs(text, from, final);
  if (j === 'need-more') return 'need-more';
  if (j === 'end') return { end: text.length, calls: [], error: 'empty envelope', truncated: true };
  if (!o.opens.includes(text[j] ?? '')) return null;
  // Stopping at our own marker keeps hostile input linear: a value still open when the next
  // marker comes is cut off, and must not be scanned again to the end from every marker.
  const scan = scanJsonValue(text, j, { stopAt: o.closer ? [o.closer, marker] : [marker] });
  if (!scan || scan.end < 0) {
    if (scan?.stoppedAt !== undefined && !(o.closer && text.startsWith(o.closer, scan.stoppedAt))) {
      return { end: scan.stoppedAt, calls: [], error: 'cut off by the next marker' };
    }
    if (scan?.stoppedAt !== undefined && o.closer) {
      // the closer came before the JSON closed: repair a missing brace only right before it
      const at = scan.stoppedAt;
      return finishMatch(callsFromJson(text.slice(j, at), toCall, true), at + o.closer.length, false);
    }
    if (!final) return 'need-more';
    return finishMatch(callsFromJson(text.slice(j), toCall, true), text.length, true);
  }
  let end = scan.end;
  if (o.closer) {
    const k = skipWs(text, scan.end);
    if (k >= text.length && !final) return 'need-more';
    const lit = expectLiteral(text, k, o.closer, final);
    if (lit === 'need-more') return 'need-more';
    if (lit === 'yes') end = k + o.closer.length;
  }
  return finishMatch(callsFromJson(text.slice(j, scan.end), toCall, false), end, false);
}

export { unlessReopened } from './envelope.js';

/** A lone control token (`<|START_RESPONSE|>`): removed, never a call. */
export function controlToken(start: number, marker: string): EnvelopeMatch {
  return { end: start + marker.length, calls: [], control: true };
}

/**
 * An end-of-answer token written out as text (Apriel's `[END FINAL RESPONSE]`, Ling's
 * `<|role_end|>`): removed only when nothing but whitespace follows it to the end of output;
 * anywhere else it is quoted prose and stays. Holds at most the whitespace after it.
 */
export function trailingControlToken({ text, start, marker, final }: MatchInput): MatchResult {
  if (skipWs(text, start + marker.length) < text.length) return null;
  return final ? { end: text.length, calls: [], control: true } : 'need-more';
}

/**
 * `OPEN reasoning CLOSE` sections (`<|START_THINKING|>`, `<seed:think>`): the text goes to
 * reasoning. An unclosed section at the end of output is reasoning to the end.
 */
export function matchReasoningSection(input: MatchInput, close: string): MatchResult {
  const { text, start, marker, final, find } = input;
  const from = start + marker.length;
  const at = find(close, from);
  if (at < 0) {
    if (!final) return 'need-more';
    return { end: text.length, calls: [], reasoning: text.slice(from), control: true };
  }
  return { end: at + close.length, calls: [], reasoning: text.slice(from, at), control: true };
}

/**
 * How an XML-ish argument value is typed: 'schema' by the declared schema (undeclared: text),
 * 'schema-json' the same but an undeclared parameter's JSON-looking text is decoded (a
 * declared string stays text even when it reads `null`), 'json' decoded first.
 */
export type ValueMode = 'string' | 'json' | 'schema' | 'schema-json';

export interface XmlCallSpec {
  /** `<invoke name="` — the call's name follows. */
  callOpen: string;
  /** What ends the name, e.g. `"`. */
  callNameEnd: string;
  /** What ends the call's opening tag after any attributes, e.g. `>`; '' = the name end does. */
  callHeadEnd: string;
  callClose: string;
  argOpen: string;
  argNameEnd: string;
  /** Ends the argument's opening tag after its attributes (`>`, `<|sep|>`, `<arg_value>`). */
  argHeadEnd: string;
  argClose: string;
  /** Typing from the argument tag's attributes (DSML `string="true"`, Kimi K3 `type="string"`). */
  valueMode?: (attrs: string) => ValueMode;
  /** Skips format noise before a call (Step3's per-call tokens); returns the new index. */
  skipNoise?: (body: string, i: number) => number;
  /** Where the value starting at `from` ends (its argClose); default: the first argClose. */
  findValueEnd?: (body: string, from: number) => number;
  /** Unwraps a raw value (MiniCPM's CDATA) before typing. */
  unwrapValue?: (raw: string) => string;
  /** A call may hold one JSON object instead of argument tags (DSML, as SGLang reads it). */
  jsonArgs?: boolean;
  /** Rewrites a call's finished arguments (DSML's stray `arguments` wrapper). */
  finishArgs?: (args: Record<string, unknown>, tool: DeclaredTool | undefined) => Record<string, unknown>;
}

function typeArg(raw: string, mode: ValueMode, schema: Record<string, unknown> | undefined): unknown {
  if (mode === 'string') return raw;
  if (mode === 'schema-json') return coerceParamValue(raw, schema, { untyped: 'json' });
  if (mode === 'json') {
    const d = decodeJsonLenient(raw);
    if (d) return d.value;
  }
  return coerceParamValue(raw, schema, { untyped: 'string' });
}

/**
 * Reads `callOpen NAME … callClose` calls back to back from `body` (whitespace and the spec's
 * noise between them). Anything else, a duplicate argument or an unclosed tag is an error: the
 * envelope then stays as text.
 */
export function readXmlCalls(body: string, spec: XmlCallSpec, ctx: ParseContext): BodyResult {
  const calls: ParsedCall[] = [];
  let i = skipWs(body, 0);
  for (;;) {
    if (spec.skipNoise) i = skipWs(body, spec.skipNoise(body, i));
    if (i >= body.length) break;
    if (!body.startsWith(spec.callOpen, i)) return { error: 'unexpected text in tool call block' };
    const r = readXmlCall(body, i, spec, ctx);
    if ('error' in r) return r;
    calls.push(r.call);
    i = skipWs(body, r.end);
  }
  return calls.length > 0 ? { calls } : { error: 'no call in block' };
}

function readXmlCall(
  body: string,
  i: number,
  spec: XmlCallSpec,
  ctx: ParseContext,
): { call: ParsedCall; end: number } | { error: string } {
  const nameFrom = i + spec.callOpen.length;
  const nameTo = body.indexOf(spec.callNameEnd, nameFrom);
  if (nameTo < 0) return { error: 'unterminated call tag' };
  const name = body.slice(nameFrom, nameTo).trim();
  if (name === '' || /[\s<>"]/.test(name)) return { error: 'bad tool name' };
  let pos = nameTo + spec.callNameEnd.length;
  if (spec.callHeadEnd !== '') {
    const head = body.indexOf(spec.callHeadEnd, pos);
    if (head < 0 || body.slice(pos, head).includes('<')) return { error: 'unterminated call tag' };
    pos = head + spec.callHeadEnd.length;
  }
  const tool = ctx.tools.get(name);
  if (spec.jsonArgs && body[skipWs(body, pos)] === '{') {
    const close = body.indexOf(spec.callClose, pos);
    if (close < 0) return { error: 'unclosed call' };
    const d = decodeJsonLenient(body.slice(pos, close));
    if (!d || !isPlainObject(d.value)) return { error: 'call body is not a JSON object' };
    const args = spec.finishArgs ? spec.finishArgs(d.value, tool) : d.value;
    return { call: { name, arguments: args }, end: close + spec.callClose.length };
  }
  const args = createArgs();
  for (;;) {
    pos = skipWs(body, pos);
    if (body.startsWith(spec.callClose, pos)) {
      const finished = spec.finishArgs ? spec.finishArgs(args, tool) : args;
      return { call: { name, arguments: finished }, end: pos + spec.callClose.length };
    }
    if (!body.startsWith(spec.argOpen, pos)) return { error: 'unexpected text in call' };
    const keyFrom = pos + spec.argOpen.length;
    const keyTo = body.indexOf(spec.argNameEnd, keyFrom);
    if (keyTo < 0) return { error: 'unterminated argument tag' };
    const key = body.slice(keyFrom, keyTo).trim();
    if (key === '' || key.includes('<')) return { error: 'bad argument name' };
    const head = body.indexOf(spec.argHeadEnd, keyTo + spec.argNameEnd.length);
    if (head < 0) return { error: 'unterminated argument tag' };
    const attrs = body.slice(keyTo + spec.argNameEnd.length, head);
    if (attrs.includes('<') || attrs.includes('>')) return { error: 'unexpected text in argument tag' };
    const valueFrom = head + spec.argHeadEnd.length;
    const valueTo = spec.findValueEnd
      ? spec.findValueEnd(body, valueFrom)
      : body.indexOf(spec.argClose, valueFrom);
    if (valueTo < 0) return { error: 'unclosed argument' };
    // Two values for one key: which one did the model mean? Leave it as text.
    if (Object.hasOwn(args, key)) return { error: `duplicate argument ${JSON.stringify(key)}` };
    let raw = body.slice(valueFrom, valueTo);
    if (spec.unwrapValue) raw = spec.unwrapValue(raw);
    args[key] = typeArg(raw, spec.valueMode?.(attrs) ?? 'schema', paramSchema(tool, key));
    pos = valueTo + spec.argClose.length;
  }
}

/** `{NAME: {args}}` objects (Apertus). */
export const nameKeyedToCall: ToCall = (v) => {
  if (!isPlainObject(v)) return null;
  const keys = Object.keys(v);
  if (keys.length !== 1) return null;
  const name = keys[0] ?? '';
  return name === '' ? null : { name, arguments: v[name] };
};
