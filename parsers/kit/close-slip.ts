/**
 * A closing tag a small model misspelled (`</tool_cal>`, `</functon>`, `</Tool_Call >`): the
 * expected tag's name within one edit, blanks, `_`, `-` and case aside. Read only as the last
 * thing in an envelope's text (the end of output), where nothing else can be meant by it.
 * Names under 4 characters have no slips (one edit is too much of them). Constant cost: a tag
 * over MAX_TAG code units is no slip. A call read through such a slip must name a declared tool
 * and fit its schema (slipGate), as every near miss does (docs/recall.md, issue 30).
 */
import type { ParseContext, ParsedCall } from '../types.js';
import { normalizeArguments } from './lenient-json.js';
import { decodeStructuredStrings, fitsSchema } from './schema-values.js';

/** The longest closing tag looked at, `</` and `>` included. */
const MAX_TAG = 40;

const fold = (name: string) => name.replace(/[\s_-]/g, '').toLowerCase();

/** One insertion, deletion or substitution at most turns `a` into `b`. */
function withinOneEdit(a: string, b: string): boolean {
  if (Math.abs(a.length - b.length) > 1) return false;
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  if (a.length === b.length) return a.slice(i + 1) === b.slice(i + 1);
  return a.length > b.length ? a.slice(i + 1) === b.slice(i) : a.slice(i) === b.slice(i + 1);
}

/** The name of a closing tag `</name>` (the end marker of a family), or null for other markers. */
export function closeTagName(marker: string): string | null {
  const m = /^<\/([A-Za-z][\w-]*)>$/.exec(marker);
  return m ? (m[1] as string) : null;
}

/**
 * Where a misspelled `</name>` closing `text` starts (only blanks after it), or -1. The exact
 * tag is no slip (the caller found it already).
 */
export function trailingCloseSlip(text: string, name: string): number {
  const end = text.trimEnd().length;
  if (text[end - 1] !== '>') return -1;
  const from = Math.max(0, end - MAX_TAG);
  const tail = text.slice(from, end);
  const rel = tail.lastIndexOf('</');
  if (rel < 0) return -1;
  const at = from + rel;
  const written = text.slice(at + 2, end - 1);
  if (written.includes('<') || written.includes('>')) return -1;
  return isNameSlip(written, name) ? at : -1;
}

/**
 * recall13: where a special token closing `text` with its `▁` (U+2581) written as `_` or a space
 * starts (only blanks after it), or -1 (`<｜tool_calls_end｜>` for `<｜tool▁calls▁end｜>`). Tokens
 * without `▁` have no such slip.
 */
export function trailingTokenSlip(text: string, token: string): number {
  if (!token.includes('\u2581')) return -1;
  const end = text.trimEnd().length;
  for (const sub of ['_', ' ']) {
    const written = token.replaceAll('\u2581', sub);
    if (end >= written.length && text.startsWith(written, end - written.length)) return end - written.length;
  }
  return -1;
}

/**
 * recall14: where the closing marker `close` starts when the output ends inside it (`</tool_ca`,
 * `<｜tool▁calls▁en`: a stop string or a detokenizer ate its end), or -1. At least two of its code
 * units, its first not blank, and nothing after them; a marker under 4 code units has no such cut.
 * One startsWith per length up to the marker's, so constant cost.
 */
export function trailingPartialClose(text: string, close: string): number {
  if (close.length < 4 || close.charCodeAt(0) <= 0x20) return -1;
  for (let k = Math.min(close.length - 1, text.length); k >= 2; k--) {
    if (text.startsWith(close.slice(0, k), text.length - k)) return text.length - k;
  }
  return -1;
}

/** Is `written` (a closing tag's name as written) one edit from `name`, but not `name` itself? */
export function isNameSlip(written: string, name: string): boolean {
  const want = fold(name);
  const got = fold(written);
  if (want.length < 4 || got === want || got === '') return false;
  return withinOneEdit(got, want);
}

/** Every call names a declared tool (exactly) and its arguments, typed by it, fit its schema. */
export function slipGate(calls: readonly ParsedCall[], ctx: ParseContext): boolean {
  return calls.every((c) => {
    const tool = typeof c.name === 'string' ? ctx.tools.get(c.name) : undefined;
    const args = tool ? normalizeArguments(c.arguments) : null;
    return (
      tool !== undefined &&
      args !== null &&
      fitsSchema(decodeStructuredStrings(args.value, tool) ?? args.value, tool)
    );
  });
}
