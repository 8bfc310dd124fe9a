/**
 * GLM-style key/value call bodies as K2-Horizon (`<ifm|…>`) and Hunyuan v3 / v4 write them:
 *   CALL_OPEN NAME [SEP] (KEY_OPEN k KEY_CLOSE [TYPE_OPEN t TYPE_CLOSE] VALUE_OPEN v VALUE_CLOSE)* CALL_CLOSE
 * One reader for every tag spelling; each search moves forward, so a body is read in one pass.
 */
import type { ParseContext, ParsedCall } from '../types.js';
import { readName, skipWs } from './json-scan.js';
import { coerceParamValue, createArgs, paramSchema } from './schema-values.js';
import { pushAll } from '../../protocol/append-all.js';

export type TagPair = readonly [open: string, close: string];

export interface KeyValueSpec {
  call: TagPair;
  /** Between the name and the first key (Hunyuan v3's `<tool_sep>`); optional when set. */
  sep?: string;
  key: TagPair;
  /** An inline type for the value (K2-Horizon's `<ifm|arg_type>`), used when the schema has none. */
  type?: TagPair;
  value: TagPair;
  /** Parameters the schema does not type: kept as text, or JSON-looking text decoded. */
  untyped: 'string' | 'json';
}

export type KeyValueBody = { calls: ParsedCall[] } | { error: string };

/** `OPEN text CLOSE` at i (after whitespace): the text and where it ends, or null. */
export function taggedAt(body: string, i: number, [open, close]: TagPair) {
  const j = skipWs(body, i);
  if (!body.startsWith(open, j)) return null;
  const end = body.indexOf(close, j + open.length);
  return end < 0 ? null : { text: body.slice(j + open.length, end), next: end + close.length };
}

/** One call's inside (between CALL_OPEN and CALL_CLOSE): `NAME [SEP] pairs`. */
export function readKeyValueCall(inner: string, ctx: ParseContext, spec: KeyValueSpec): KeyValueBody {
  let i = skipWs(inner, 0);
  const name = readName(inner, i);
  if (name === '') return { error: 'no function name' };
  const tool = ctx.tools.get(name);
  i = skipWs(inner, i + name.length);
  if (spec.sep !== undefined && inner.startsWith(spec.sep, i)) i = skipWs(inner, i + spec.sep.length);
  const args = createArgs();
  while (i < inner.length) {
    const key = taggedAt(inner, i, spec.key);
    if (!key) return { error: 'unexpected text in tool call' };
    const type = spec.type ? taggedAt(inner, key.next, spec.type) : null;
    const value = taggedAt(inner, type ? type.next : key.next, spec.value);
    if (!value) return { error: 'arg_key without arg_value' };
    const k = key.text.trim();
    // Two values for one key: which one did the model mean? Leave it as text.
    if (k === '' || Object.hasOwn(args, k)) return { error: 'bad or repeated argument name' };
    const schema = paramSchema(tool, k) ?? (type ? { type: type.text.trim() } : undefined);
    args[k] = coerceParamValue(value.text, schema, { untyped: spec.untyped });
    i = skipWs(inner, value.next);
  }
  return { calls: [{ name, arguments: args }] };
}

/**
 * A block's body: closed calls separated by whitespace, nothing else. `readCall` reads one
 * call's inside (a family may accept other bodies, e.g. JSON).
 */
export function readKeyValueBlock(
  body: string,
  ctx: ParseContext,
  spec: KeyValueSpec,
  readCall: (inner: string, ctx: ParseContext) => KeyValueBody = (inner, c) =>
    readKeyValueCall(inner, c, spec),
): KeyValueBody {
  const calls: ParsedCall[] = [];
  let i = skipWs(body, 0);
  while (i < body.length) {
    const call = taggedAt(body, i, spec.call);
    if (!call) return { error: 'unexpected text in tool calls block' };
    const r = readCall(call.text, ctx);
    if ('error' in r) return r;
    pushAll(calls, r.calls);
    i = skipWs(body, call.next);
  }
  return calls.length > 0 ? { calls } : { error: 'empty tool calls block' };
}
