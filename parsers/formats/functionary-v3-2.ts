/**
 * Functionary v3.2 (llama.cpp "Functionary v3.2"): every part of the reply is addressed to a
 * recipient, `>>>RECIPIENT\n…`. `all` is the user (plain content); any other recipient is a
 * tool and what follows is its JSON arguments (raw code for `python`):
 *   all\nLet me check.>>>get_weather\n{"city": "Paris"}>>>get_time\n{"timezone": "UTC"}
 * The prompt ends with `>>>`, so the first recipient comes without it: a reply starting with
 * `all\n` is read whole. A reply that starts directly with a tool name cannot be told apart from
 * prose without the tool list and is left alone.
 * Functionary v2 addresses a part with tokens instead:
 * `<|from|>assistant\n<|recipient|>get_weather\n<|content|>{"city": "NYC"}` (then `<|stop|>` or
 * the next part); read here too (waybarrios/vllm-mlx tests/test_tool_parsers.py,
 * FunctionaryToolParser).
 */
import { defineFamily } from '../engine/define.js';
import type { EnvelopeMatch, MatchResult } from '../engine/family.js';
import type { ParseContext, ParsedCall } from '../types.js';
import { finishMatch } from '../kit/envelope.js';
import { decodeJsonLenient } from '../kit/lenient-json.js';
import { readName, scanJsonValue, skipWs } from '../kit/json-scan.js';

const ARROW = '>>>';
const V2_PART = '<|from|>assistant\n<|recipient|>';
const V2_CONTENT = '<|content|>';
const V2_STOP = '<|stop|>';

/** A v2 part whose recipient name starts at i: a call's JSON arguments (or, for `all`, a control). */
function readV2Part(text: string, i: number, final: boolean): MatchResult {
  const name = readName(text, i);
  const head = i + name.length;
  const body = head + 1 + V2_CONTENT.length;
  if (body > text.length) {
    const seen = text.slice(head);
    return !final && `\n${V2_CONTENT}`.startsWith(seen) ? 'need-more' : null;
  }
  if (name === '' || !text.startsWith(`\n${V2_CONTENT}`, head)) return null;
  if (name === 'all') return { end: body, calls: [], control: true };
  const j = skipWs(text, body);
  if (j >= text.length) return final ? null : 'need-more';
  if (text[j] !== '{') return null;
  const scan = scanJsonValue(text, j, { stopAt: [V2_PART] });
  if (scan?.stoppedAt !== undefined) return null;
  if (!scan || scan.end < 0) return final ? null : 'need-more';
  const d = decodeJsonLenient(text.slice(j, scan.end));
  if (!d) return null;
  let end = scan.end;
  const k = skipWs(text, end);
  if (text.startsWith(V2_STOP, k)) end = k + V2_STOP.length;
  else if (!final && V2_STOP.startsWith(text.slice(k))) return 'need-more';
  return { end, calls: [{ name, arguments: d.value, ...(d.repairs.length ? { repairs: d.repairs } : {}) }] };
}

type Part =
  | { kind: 'content'; end: number }
  | { kind: 'call'; call: ParsedCall; end: number }
  | { kind: 'error'; error: string };

/**
 * Reads one recipient section whose name starts at i (just after `>>>`). `final` says whether
 * the text is complete; 'need-more' when the answer could still change.
 */
function readSection(text: string, i: number, final: boolean): Part | 'need-more' | null {
  const name = readName(text, i);
  const nl = i + name.length;
  if (nl >= text.length)
    return final ? (name === '' ? null : { kind: 'error', error: 'recipient without body' }) : 'need-more';
  // recall14: the name's line may end in CRLF (`>>>get_weather\r\n{…}`)
  const cr = text[nl] === '\r' ? 1 : 0;
  if (cr === 1 && nl + 1 >= text.length) return final ? null : 'need-more';
  if (name === '' || text[nl + cr] !== '\n') return null;
  const body = nl + cr + 1;
  if (name === 'all') return { kind: 'content', end: body };
  if (name === 'python') {
    const next = text.indexOf(ARROW, body);
    if (next < 0 && !final) return 'need-more';
    const end = next < 0 ? text.length : next;
    return { kind: 'call', call: { name, arguments: { code: text.slice(body, end).trim() } }, end };
  }
  const j = skipWs(text, body);
  if (j >= text.length) return final ? { kind: 'error', error: 'recipient without body' } : 'need-more';
  if (text[j] === '"') return readStringArguments(text, j, name, final);
  if (text[j] !== '{') return null;
  // the next `>>>` outside a string ends a section whose JSON never closed (and keeps many
  // such sections linear: no scan runs past the next one)
  const scan = scanJsonValue(text, j, { stopAt: [ARROW] });
  if (scan?.stoppedAt !== undefined) return { kind: 'error', error: 'arguments cut off' };
  if (!scan || scan.end < 0) return final ? { kind: 'error', error: 'arguments cut off' } : 'need-more';
  const d = decodeJsonLenient(text.slice(j, scan.end));
  if (!d) return { kind: 'error', error: 'arguments are not JSON' };
  return {
    kind: 'call',
    call: { name, arguments: d.value, ...(d.repairs.length ? { repairs: d.repairs } : {}) },
    end: scan.end,
  };
}

/**
 * The arguments object sent as one JSON string (`>>>NAME\n"{\"k\": 1}"`, double-encoded as
 * models double-encode `arguments`): the engine decodes it (repair string-arguments). A string
 * that holds no object is no call of this family.
 */
function readStringArguments(
  text: string,
  j: number,
  name: string,
  final: boolean,
): Part | 'need-more' | null {
  const scan = scanJsonValue(text, j, { stopAt: [ARROW] });
  if (scan?.stoppedAt !== undefined) return null;
  if (!scan || scan.end < 0) return final ? null : 'need-more';
  let value: unknown;
  try {
    value = JSON.parse(text.slice(j, scan.end));
  } catch {
    return null;
  }
  if (typeof value !== 'string' || !value.trimStart().startsWith('{')) return null;
  return { kind: 'call', call: { name, arguments: value }, end: scan.end };
}

function toMatch(p: Part, start: number): EnvelopeMatch {
  if (p.kind === 'error') return finishMatch({ error: p.error }, start, false);
  if (p.kind === 'content') return { end: p.end, calls: [], control: true };
  return { end: p.end, calls: [p.call] };
}

/** `all\n<content>>>>tool\n{…}…` read as one envelope: content plus calls. */
function matchWhole(text: string, _ctx: ParseContext): EnvelopeMatch | null {
  const s = skipWs(text, 0);
  if (!text.startsWith('all\n', s)) return null;
  const first = text.indexOf(ARROW, s + 4);
  if (first < 0) return null;
  const content = text.slice(s + 4, first);
  const calls: ParsedCall[] = [];
  let i = first;
  while (i < text.length) {
    if (!text.startsWith(ARROW, i)) {
      // text after a call that is not another section: not this format's shape
      if (skipWs(text, i) < text.length) return null;
      break;
    }
    const p = readSection(text, i + ARROW.length, true);
    if (p === null || p === 'need-more' || p.kind === 'error') return null;
    // A later `all` section would interleave content with calls, which one envelope cannot
    // say: fall back to reading section by section (the leading `all` then stays content).
    if (p.kind !== 'call') return null;
    calls.push(p.call);
    i = skipWs(text, p.end);
  }
  return calls.length > 0 ? { end: text.length, calls, content } : null;
}

export const functionaryV32 = defineFamily({
  name: 'functionary-v3-2',
  markers: [ARROW, V2_PART],
  priority: 46,
  backend: { llamacpp: 'Functionary v3.2' },
  wholeStarts: ['all\n'],
  matchWhole,
  match({ text, start, marker, final }): MatchResult {
    if (marker === V2_PART) return readV2Part(text, start + V2_PART.length, final);
    const p = readSection(text, start + ARROW.length, final);
    if (p === null || p === 'need-more') return p;
    return toMatch(p, start + ARROW.length);
  },
});
