/**
 * An envelope's opening or closing written twice (recall12, docs/recall.md): a small model that
 * restarts a call it had begun (`<tool_call><tool_call>\n{…}</tool_call>`,
 * `<function=f><function=f>{…}</function>`, a gpt-oss header twice) or repeats the tokens that
 * closed it (`…<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜tool▁call▁end｜><｜tool▁calls▁end｜>`,
 * `…</function>\n</tool_call></function>\n</tool_call>`, `<|call|><|call|>`). The family reads
 * the call; the repeat is envelope text, removed with it when its calls are taken (repairs
 * `doubled-open-tag`, `doubled-close-tag`) and kept byte for byte with it when they are not (the
 * engine keeps an envelope's raw text as content when the safety rules refuse it).
 *
 * For every family, around its own `match` (scanner.ts), so no family spells its closers twice:
 * - a restart: the family's marker again within MAX_REPEAT after its marker, the text from the
 *   first marker to the second (blanks at its end aside) the start of the second envelope, which
 *   the family reads as calls, and the first undecided ('need-more') on the text before the second
 *   marker: the model had begun that envelope, not finished another. Taken only where the family
 *   read no call at the first marker.
 * - a closing repeat: right after an envelope read as calls (no blank between), a copy of the run
 *   of tags that ends it, any of its tag-boundary suffixes (the longest that is there), once.
 *   A family that already took a repeated close (`absorbRepeatedClose`) is left as it read.
 *
 * Prefix-stable (family.ts): each answer depends only on text the first marker's window and the
 * second envelope hold, and 'need-more' stands while a marker or a copy is cut by the end of the
 * text. Linear: the window is MAX_REPEAT code units, searched with the scanner's memoised find.
 */
import { scanJsonValue } from '../kit/json-scan.js';
import type { EnvelopeMatch, MatchInput, MatchResult } from './family.js';

/** How far the copied text may run: the longest opener or closing run in the formats (a gpt-oss header is ~80). */
const MAX_REPEAT = 256;
/** Shorter markers (`[`, `{`) open prose and lists too often for a doubled one to mean a restart. */
const MIN_MARKER = 4;

type Match = (input: MatchInput) => MatchResult;

const isBlank = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

const readsCalls = (m: MatchResult): m is EnvelopeMatch =>
  m !== null && m !== 'need-more' && m.error === undefined && m.calls.length > 0;

const withRepair = (m: EnvelopeMatch, repair: string): EnvelopeMatch => ({
  ...m,
  calls: m.calls.map((c) => ({ ...c, repairs: [...(c.repairs ?? []), repair] })),
});

/**
 * The restart's reading of the envelope at the next marker, kept for the scanner's own ask at that
 * marker, which comes next in the same pass (the same buffer, so the same answer): without it each
 * marker of a run of restarts (`<tool_call>x<tool_call>x…`) would be read twice. Valid for one
 * buffer only: the scanner clears it whenever its buffer may have changed (each run).
 */
export class RestartMemo {
  private readonly kept = new Map<
    Match,
    { start: number; length: number; final: boolean; marker: string; m: MatchResult }
  >();
  clear(): void {
    if (this.kept.size > 0) this.kept.clear();
  }
  read(match: Match, input: MatchInput): MatchResult {
    const k = this.kept.get(match);
    if (
      k?.start === input.start &&
      k.length === input.text.length &&
      k.final === input.final &&
      k.marker === input.marker
    )
      return k.m;
    return match(input);
  }
  keep(match: Match, input: MatchInput, m: MatchResult): void {
    this.kept.set(match, {
      start: input.start,
      length: input.text.length,
      final: input.final,
      marker: input.marker,
      m,
    });
  }
}

/** The family's match with the opening or the closing of its envelope written twice read too. */
export function matchRepeated(match: Match, input: MatchInput, memo = new RestartMemo()): MatchResult {
  const m = memo.read(match, input);
  if (m === 'need-more') return m;
  if (readsCalls(m)) return tail(m, input);
  if (input.marker.length < MIN_MARKER) return m;
  const r = restart(match, input, memo);
  if (r === 'need-more') return r;
  return r === null ? m : tail(r, input);
}

/** What may follow a call's envelope and goes with it: a copy of its closing run, then an end-of-turn token. */
function tail(m: EnvelopeMatch, input: MatchInput): MatchResult {
  const c = closingRepeat(m, input);
  return c === 'need-more' || c === null ? c : endOfTurn(c, input);
}

/**
 * End-of-turn tokens a template writes after a call, written out by a detokenizer that keeps special
 * tokens (Mistral's `</s>`, Llama 3's `<|eom_id|>` / `<|eot_id|>`, ChatML's `<|im_end|>`, GLM-4's
 * `<|observation|>`, Granite's `<|end_of_text|>`, DeepSeek's `<｜end▁of▁sentence｜>`).
 */
const END_OF_TURN = [
  '</s>',
  '<|eot_id|>',
  '<|eom_id|>',
  '<|im_end|>',
  '<|end|>',
  '<|endoftext|>',
  '<|end_of_text|>',
  '<|observation|>',
  '<｜end▁of▁sentence｜>',
];
/** Blanks allowed on each side of the token: past them the token is no end of this call's turn. */
const MAX_BLANKS = 64;

function skipBlanks(text: string, from: number): number {
  let j = from;
  while (j < text.length && j - from <= MAX_BLANKS && isBlank(text.charCodeAt(j))) j++;
  return j;
}

/**
 * recall12 (repair `end-of-turn-token`): one end-of-turn token right after a call's envelope that
 * ends the output (blanks around it allowed) goes with the call. Anywhere else it is the text it
 * was (an HTML `</s>` in prose, a token quoted). Undecided while the output may still end there:
 * at most the blanks and the token after the envelope.
 */
function endOfTurn(m: EnvelopeMatch, input: MatchInput): MatchResult {
  if (m.truncated) return m;
  const { text, final } = input;
  const j = skipBlanks(text, m.end);
  if (j - m.end > MAX_BLANKS) return m;
  const token = END_OF_TURN.find((t) => text.startsWith(t, j));
  if (token === undefined) {
    if (final) return m;
    const rest = text.slice(j);
    return END_OF_TURN.some((t) => t.length > rest.length && t.startsWith(rest)) ? 'need-more' : m;
  }
  const k = skipBlanks(text, j + token.length);
  if (k - (j + token.length) > MAX_BLANKS || k < text.length) return m;
  if (!final) return 'need-more';
  return { ...withRepair(m, 'end-of-turn-token'), end: text.length };
}

/** The family on the text cut at `at` (not final): what it said before anything from `at` on came. */
function before(match: Match, input: MatchInput, at: number): MatchResult {
  const text = input.text.slice(0, at);
  return match({
    ...input,
    text,
    final: false,
    find: (lit, from) => {
      const r = input.find(lit, from);
      return r >= 0 && r + lit.length > at ? -1 : r;
    },
    // the cut text is at most MAX_REPEAT past the marker: its own walk, never deeper than MAX_NESTING
    jsonEnd: (from) => scanJsonValue(text, from)?.end ?? -1,
  });
}

/** The envelope restarted at the family's next marker, 'need-more', or null (no restart). */
function restart(match: Match, input: MatchInput, memo: RestartMemo): MatchResult {
  const { text, start, marker, final } = input;
  const from = start + marker.length;
  const limit = from + MAX_REPEAT;
  const r = input.find(marker, from);
  if (r < 0 || r > limit) {
    if (final) return null;
    // a marker cut by the end of the text may still complete inside the window
    for (let p = Math.max(from, text.length - marker.length + 1); p < text.length && p <= limit; p++) {
      if (marker.startsWith(text.slice(p)) && before(match, input, p) === 'need-more') return 'need-more';
    }
    return null;
  }
  let x = r;
  while (x > from && isBlank(text.charCodeAt(x - 1))) x--;
  const copy = text.slice(start, x);
  // an opening holds no closing tag: a copy with one is a whole envelope before the next (two calls
  // written alike), not a restart, and asking the family about it is work for nothing
  if (copy.includes('</')) return null;
  const have = text.length - r;
  // the cheap test first: the text after the second marker must repeat the first one's
  if (have >= copy.length ? !text.startsWith(copy, r) : !copy.startsWith(text.slice(r))) return null;
  if (have < copy.length) return before(match, input, r) !== 'need-more' || final ? null : 'need-more';
  // the second envelope first: the scanner asks it next anyway (the memo keeps it), and where it
  // reads no call (a hostile `<tool_call>x` run) the family is never asked about the cut text
  // (recall14: one ask a marker there instead of two)
  const at = { ...input, start: r };
  const again = match(at);
  memo.keep(match, at, again);
  if (again !== 'need-more' && !readsCalls(again)) return null;
  if (before(match, input, r) !== 'need-more') return null;
  return again === 'need-more' ? again : withRepair(again, 'doubled-open-tag');
}

/** `m` with a copy of the tags that close it, written right after it, taken into it. */
function closingRepeat(m: EnvelopeMatch, input: MatchInput): MatchResult {
  if (m.truncated || m.calls.some((c) => c.repairs?.includes('doubled-close-tag'))) return m;
  const { text, start, final } = input;
  const e = m.end;
  // every copy opens with '<': nothing to take unless one is there or may still come
  if (e < text.length ? text.charCodeAt(e) !== 0x3c : final) return m;
  const floor = Math.max(start + 1, e - MAX_REPEAT);
  let best = 0;
  let pending = false;
  let j = e;
  for (;;) {
    while (j > floor && isBlank(text.charCodeAt(j - 1))) j--;
    if (j <= floor || text[j - 1] !== '>') break;
    let lt = j - 2;
    while (lt >= floor && text[lt] !== '<' && text[lt] !== '>') lt--;
    if (lt < floor || text[lt] !== '<') break;
    const run = text.slice(lt, e);
    if (text.startsWith(run, e)) best = run.length;
    else if (!final && text.length - e < run.length && run.startsWith(text.slice(e))) pending = true;
    j = lt;
  }
  if (pending) return 'need-more';
  return best === 0 ? m : { ...withRepair(m, 'doubled-close-tag'), end: e + best };
}
