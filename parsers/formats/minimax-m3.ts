/**
 * MiniMax-M3 (vLLM `minimax_m3`, llama.cpp "MiniMax-M3"): every tool tag carries the namespace
 * token `]<]minimax[>[`, and each argument is an element named after the parameter:
 *   ]<]minimax[>[<tool_call>
 *   ]<]minimax[>[<invoke name="NAME">
 *   ]<]minimax[>[<city>Paris]<]minimax[>[</city>
 *   ]<]minimax[>[<filter>]<]minimax[>[<unit>c]<]minimax[>[</unit>]<]minimax[>[</filter>
 *   ]<]minimax[>[<tags>]<]minimax[>[<item>a]<]minimax[>[</item>]<]minimax[>[</tags>
 *   ]<]minimax[>[</invoke>
 *   ]<]minimax[>[</tool_call>
 * Objects nest as child elements and lists as `<item>` children; leaf text is typed by the
 * declared schema (a declared string stays verbatim). Thinking is `<mm:think>…</mm:think>`.
 * A turn without thinking starts with a bare `</mm:think>` (the template's marker for "no
 * reasoning"; llama.cpp test-chat.cpp): at the very start of the output it is a control token.
 * Anywhere else it stays text.
 */
import { defineFamily } from '../engine/define.js';
import { type BodyResult, controlToken, matchReasoningSection } from '../kit/long-tail.js';
import type { ParseContext, ParsedCall } from '../types.js';
import { closedEnvelope } from '../kit/envelope.js';
import { readName, skipWs } from '../kit/json-scan.js';
import { isPlainObject } from '../kit/lenient-json.js';
import { alternativeFor, coerceParamValue, createArgs, fitsSchema } from '../kit/schema-values.js';

const NS = ']<]minimax[>[';
const OPEN = `${NS}<tool_call>`;
const CLOSE = `${NS}</tool_call>`;
const INVOKE = `${NS}<invoke name="`;
const INVOKE_END = `${NS}</invoke>`;
const THINK = '<mm:think>';
const NO_THINK = '</mm:think>';
const MAX_DEPTH = 32;

type Schema = Record<string, unknown> | undefined;

// through an anyOf / oneOf alternative of the right kind (`limit: integer | {max: integer}`)
function childSchema(schema: Schema, key: string): Schema {
  const props = alternativeFor(schema, 'object')?.['properties'];
  const s = isPlainObject(props) ? props[key] : undefined;
  return isPlainObject(s) ? s : undefined;
}

function itemSchema(schema: Schema): Schema {
  const s = alternativeFor(schema, 'array')?.['items'];
  return isPlainObject(s) ? s : undefined;
}

function mayBeString(schema: Schema): boolean {
  const t = schema?.['type'];
  return t === 'string' || (Array.isArray(t) && t.includes('string'));
}

/** Reads the value of an element whose opening tag ended at i; returns it and the index after `close`. */
function readValue(
  body: string,
  i: number,
  close: string,
  schema: Schema,
  depth: number,
): { value: unknown; end: number } | null {
  const j = skipWs(body, i);
  const nested = !mayBeString(schema) && body.startsWith(`${NS}<`, j) && !body.startsWith(`${NS}</`, j);
  if (!nested) {
    const at = body.indexOf(close, i);
    if (at < 0) return null;
    return { value: coerceParamValue(body.slice(i, at), schema), end: at + close.length };
  }
  if (depth > MAX_DEPTH) return null;
  // children: all `<item>` = a list, otherwise an object
  const isList = body.startsWith(`${NS}<item>`, j);
  const list: unknown[] = [];
  const obj = createArgs();
  let k = j;
  for (;;) {
    k = skipWs(body, k);
    if (body.startsWith(close, k)) return { value: isList ? list : obj, end: k + close.length };
    const el = readElement(body, k, isList ? itemSchema(schema) : undefined, schema, depth + 1);
    if (!el) return null;
    if (isList !== (el.tag === 'item')) return null;
    if (isList) list.push(el.value);
    else {
      if (Object.hasOwn(obj, el.tag)) return null;
      obj[el.tag] = el.value;
    }
    k = el.end;
  }
}

/** `NS<TAG>value NS</TAG>` at i. */
function readElement(
  body: string,
  i: number,
  itemSchemaOrNone: Schema,
  parent: Schema,
  depth: number,
): { tag: string; value: unknown; end: number } | null {
  if (!body.startsWith(`${NS}<`, i)) return null;
  const from = i + NS.length + 1;
  const tag = readName(body, from);
  if (tag === '' || body[from + tag.length] !== '>') return null;
  const schema = tag === 'item' ? itemSchemaOrNone : childSchema(parent, tag);
  const v = readValue(body, from + tag.length + 1, `${NS}</${tag}>`, schema, depth);
  return v ? { tag, value: v.value, end: v.end } : null;
}

/**
 * `NSvalueNS</TAG>` at i: a first parameter whose opening tag was dropped, its value right after
 * the namespace token and its closer naming it (MiniMax-M3-MXFP8 writes this deterministically,
 * vllm-project/vllm#51075: `…<invoke name="save_file">NSofferta.docxNS</filename>NS<content>…`).
 * The tag must be a parameter the schema declares and the value holds no namespace token; the
 * caller reads it only as the first argument, and keeps the call only when all of it fits.
 */
function elidedOpen(
  body: string,
  i: number,
  schema: Schema,
): { tag: string; value: unknown; end: number } | null {
  if (!body.startsWith(NS, i) || body.startsWith(`${NS}<`, i)) return null;
  const from = i + NS.length;
  const at = body.indexOf(NS, from);
  if (at < 0 || !body.startsWith(`${NS}</`, at)) return null;
  const tagFrom = at + NS.length + 2;
  const tag = readName(body, tagFrom);
  if (tag === '' || body[tagFrom + tag.length] !== '>') return null;
  const child = childSchema(schema, tag);
  if (child === undefined) return null;
  return { tag, value: coerceParamValue(body.slice(from, at), child), end: tagFrom + tag.length + 1 };
}

function readInvokes(body: string, ctx: ParseContext): BodyResult {
  const calls: ParsedCall[] = [];
  let i = skipWs(body, 0);
  while (i < body.length) {
    if (!body.startsWith(INVOKE, i)) return { error: 'unexpected text in tool call block' };
    const nameFrom = i + INVOKE.length;
    const q = body.indexOf('">', nameFrom);
    if (q < 0) return { error: 'unterminated invoke tag' };
    const name = body.slice(nameFrom, q);
    if (name === '' || /[\s<>"]/.test(name)) return { error: 'bad tool name' };
    const tool = ctx.tools.get(name);
    const args = createArgs();
    let k = q + 2;
    let elided = false;
    for (;;) {
      k = skipWs(body, k);
      if (body.startsWith(INVOKE_END, k)) break;
      let el = readElement(body, k, undefined, tool?.parameters, 0);
      if (!el && tool && Object.keys(args).length === 0) {
        el = elidedOpen(body, k, tool.parameters);
        elided = el !== null;
      }
      if (!el) return { error: 'unreadable argument' };
      if (Object.hasOwn(args, el.tag)) return { error: `duplicate argument ${JSON.stringify(el.tag)}` };
      args[el.tag] = el.value;
      k = el.end;
    }
    if (elided && !(tool && fitsSchema(args, tool)))
      return { error: 'a parameter without its opening tag, and arguments that do not fit' };
    calls.push(
      elided ? { name, arguments: args, repairs: ['missing-parameter-open'] } : { name, arguments: args },
    );
    i = skipWs(body, k + INVOKE_END.length);
  }
  return calls.length > 0 ? { calls } : { error: 'no call in block' };
}

const call = closedEnvelope({ open: OPEN, end: CLOSE, read: (body, ctx) => readInvokes(body, ctx) });

export const minimaxM3 = defineFamily({
  name: 'minimax-m3',
  markers: [THINK, OPEN, NO_THINK],
  priority: 40,
  backend: { vllm: 'minimax_m3', llamacpp: 'MiniMax-M3' },
  match(input) {
    if (input.marker === THINK) return matchReasoningSection(input, NO_THINK);
    if (input.marker === NO_THINK) return input.start === 0 ? controlToken(0, NO_THINK) : null;
    return call(input);
  },
});
