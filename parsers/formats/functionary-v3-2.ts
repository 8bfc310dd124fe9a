/**
 * Functionary v3.2 (llama.cpp "Functionary v3.2"): every part of the reply is addressed to a
 * recipient, `>>>RECIPIENT\n…`. `all` is the user (plain content); any other recipient is a
 * tool and what follows is its JSON arguments (raw code for `python`):
 *   all\nLet me check.>>>get_weather\n{"city": "Paris"}>>>get_time\n{"timezone": "UTC"}
 * The prompt ends with `>>>`, so the first recipient comes without it: a reply starting with
 * `all\n` is read whole. A reply that starts directly with a tool name cannot be told apart from
 * prose without the tool list and is left alone.
 */
import { defineFamily } from '../engine/define.js';
import type { EnvelopeMatch, MatchResult } from '../engine/family.js';
import type { ParseContext, ParsedCall } from '../types.js';
import { finishMatch } from '../kit/envelope.js';
import { decodeJsonLenient } from '../kit/lenient-json.js';
import { readName, scanJsonValue, skipWs } from '../kit/json-scan.js';

const ARROW = '>>>';

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
  if (name === '' || text[nl] !== '\n') return null;
  const body = nl + 1;
  if (name === 'all') return { kind: 'content', end: body };
  if (name === 'python') {
    const next = text.indexOf(ARROW, body);
    if (next < 0 && !final) return 'need-more';
    const end = next < 0 ? text.length : next;
    return { kind: 'call', call: { name, arguments: { code: text.slice(body, end).trim() } }, end };
  }
  const j = skipWs(text, body);
  if (j >= text.length) return final ? { kind: 'error', error: 'recipient without body' } : 'need-more';
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
  markers: [ARROW],
  priority: 46,
  backend: { llamacpp: 'Functionary v3.2' },
  wholeStarts: ['all\n'],
  matchWhole,
  match({ text, start, final }): MatchResult {
    const p = readSection(text, start + ARROW.length, final);
    if (p === null || p === 'need-more') return p;
    return toMatch(p, start + ARROW.length);
  },
});
