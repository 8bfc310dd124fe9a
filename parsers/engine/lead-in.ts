/**
 * The lead-in gate (issue 30, docs/recall.md "A sentence, then the call"): a call in a
 * whole-output shape (a fenced or bare JSON call, an XML-ish element named after a declared tool,
 * an improvised wrapper) that ENDS the output after a short announcing lead-in ("I'll look that
 * up.") is read; the lead-in stays content byte for byte. The whole-output gate keeps refusing
 * the same call after an explanation ("For example:", "You can call it like this:"), inside or
 * after a code sample, as one of two alternatives, or followed by more prose.
 *
 * It sits between the scanner and the bare-`</think>` watch and sees the scanner's events as one
 * character stream (text, and the raw text of envelopes the families did not read):
 * - while the output is no more than PREFACE_MAX code units past its first non-blank character, each
 *   boundary (a line break, or sentence punctuation then a blank, or CJK sentence punctuation)
 *   followed by a candidate start (`{`, `[{`, a ```json / ```tool_call / ```tool_code / ```xml /
 *   bare fence, a declared name in the improvised family's frames, one of the whole families'
 *   fixed starts) is a candidate; text before the first one streams live;
 * - the first candidate decides: when the text before it passes the lead-in rules (`announces`),
 *   the candidate and everything after it are held to the end of output (at most maxHeld, as a
 *   whole-output hold is); otherwise nothing is held from here on;
 * - at the end, the held tail is offered to the whole-output families as if it were the whole
 *   output (the improvised reader last, and only when the families' envelopes did not read all
 *   of it as calls). It is read only when every call names a declared tool, its arguments fit
 *   the schema (`fitsSchema`), and nothing but whitespace or a closing token the family strips
 *   follows. Else the held events go on as they came.
 * An envelope a family read as a call, a pass-through envelope, a refused envelope before the
 * candidate, call-shaped text that starts no candidate (`}`, `>`, a `<` mid-line), or passing
 * PREFACE_MAX ends the watch: those outputs are read exactly as before. A bare JSON call may also
 * follow a longer preface of paragraphs (`announcesAfterPreface`).
 *
 * Every decision depends on the text only (boundaries look back, candidates look at most LOOK
 * characters ahead, the hold cap counts code units), so every chunking decides the same.
 */
import type { EnvelopeMatch, FamilyParser } from './family.js';
import { NameStartMatcher, someNameStartsWith } from './name-starts.js';
import type { ScanEvent, ScanPlan } from './scanner.js';
import { skipWs } from '../kit/json-scan.js';
import { normalizeArguments } from '../kit/lenient-json.js';
import { decodeStructuredStrings, fitsSchema } from '../kit/schema-values.js';
import type { ParseContext } from '../types.js';

/** The longest lead-in (code units from its first non-blank character to the candidate). */
export const LEAD_MAX = 400;
/**
 * The longest prose preface before a bare JSON call (recall10, `announcesAfterPreface`): its
 * last paragraph announces as a short lead-in does, and no part of it explains.
 */
export const PREFACE_MAX = 2000;
/** A paragraph break: a line holding only blanks. */
const PARAGRAPH_BREAK = /\n[ \t\r]*\n/g;

/** Fence languages a call may carry after a lead-in (not python, javascript, bash…: code samples). */
const FENCE_LANGS = new Set(['', 'json', 'tool_call', 'tool_code', 'xml', 'function_call']);
/**
 * A reasoning fence opening the output (```thinking, as Gemma 3 writes its chain of thought when a
 * prompt asks for it there, gamemaker1/gemma3-function-calling-benchmarks): it is the model's
 * own deliberation, not an example, so the lead-in rules skip it (its text stays content, byte
 * for byte) and a call may follow it. At most REASONING_FENCE_MAX code units; longer, the watch
 * stops (the output is read as before).
 */
const REASONING_FENCE = /^```(?:thinking|thoughts?|reasoning)[ \t]*\n/i;
const REASONING_FENCE_MAX = 4096;
/** The end (after its closing ```) of a reasoning fence opening `t`, or -1. */
function reasoningFenceEnd(t: string): number {
  if (!REASONING_FENCE.test(t)) return -1;
  const close = t.indexOf('\n```', t.indexOf('\n'));
  if (close < 0) return -1;
  const end = close + 4;
  // the closing fence stands alone on its line
  const after = t.charCodeAt(end);
  return Number.isNaN(after) || after === 0x0a || after === 0x0d || after === 0x20 || after === 0x09
    ? end
    : -1;
}
/**
 * A reasoning block opening the output as Open WebUI renders a model's reasoning into content,
 * and Z.ai's web chat (GLM-4.5 to GLM-5) streams it (recall24):
 *   <details type="reasoning" done="true" duration="3">
 *   <summary>Thought for 3 seconds</summary>
 *   > …
 *   </details>
 * It is the model's own deliberation, so it is skipped as a reasoning fence is; its text stays
 * content byte for byte. The opener is exactly `<details type="reasoning"` with only quoted
 * attributes after it, the closer the first `</details>` that starts a line and ends one. A lone
 * `</details>` line first in the output is such a block's close whose opening went to the
 * reasoning channel (a client that splits Z.ai's thinking phase off; izaart95-jpg/GLM-Free-API#38).
 * At most REASONING_DETAILS_MAX code units; longer, the watch stops.
 */
const DETAILS_OPEN = /^<details type="reasoning"(?:[ \t]+[a-z_-]{1,16}="[^"<>\n]{0,64}"){0,8}[ \t]*>/;
const DETAILS_CLOSE = '</details>';
const REASONING_DETAILS_MAX = 16384;
/** What may open a details block (a prefix of `<details type="reasoning"`, or of its close). */
const DETAILS_START = '<details type="reasoning"';
/** Is the line ended at `at` (blanks, then a line break or the end)? -1: no; else the break's end. */
function lineEndAfter(t: string, at: number): number {
  let j = at;
  while (t.charCodeAt(j) === 0x20 || t.charCodeAt(j) === 0x09 || t.charCodeAt(j) === 0x0d) j++;
  if (j === t.length) return j;
  return t.charCodeAt(j) === 0x0a ? j + 1 : -1;
}
/**
 * The end of a reasoning details block (or a lone close) opening `t` (its close at most
 * REASONING_DETAILS_MAX in): the index after its `</details>`, -1 when `t` holds none, -2 when
 * `t` opens with no such block. The lead-in's walk finds the same end incrementally (detailsEnd).
 */
function reasoningDetailsEnd(t: string): number {
  if (t.startsWith(DETAILS_CLOSE)) {
    return lineEndAfter(t, DETAILS_CLOSE.length) >= 0 ? DETAILS_CLOSE.length : -2;
  }
  const open = DETAILS_OPEN.exec(t);
  if (!open) return -2;
  let at = open[0].length;
  for (;;) {
    const c = t.indexOf(DETAILS_CLOSE, at);
    if (c < 0 || c > REASONING_DETAILS_MAX) return -1;
    if (t.charCodeAt(c - 1) === 0x0a && lineEndAfter(t, c + DETAILS_CLOSE.length) >= 0)
      return c + DETAILS_CLOSE.length;
    at = c + 1;
  }
}
/** The end of a reasoning preface (a fence or a details block) opening `t` whole, or -1. */
function reasoningPrefaceEnd(t: string): number {
  const fence = reasoningFenceEnd(t);
  if (fence >= 0) return fence;
  const d = reasoningDetailsEnd(t);
  return d >= 0 ? d : -1;
}
/** Longest fence language read (a longer first line is no call fence). */
const MAX_LANG = 16;
/** Blanks allowed between `[` and `{` of a call list. */
const MAX_LIST_GAP = 16;
/** Longest tag or attribute name read in `<tag attr="NAME"` (a longer one is no call element). */
const MAX_TAG = 32;
/** Attribute names that name the tool of an element (`tool=`, `name=`, …); never `class`, `href`… */
const NAMING_ATTRS = 'tool|name|function|tool_name|function_name';
/**
 * An element whose first attribute names a declared tool: `<call_record tool="read">` (Gemini 3
 * Pro in oh-my-pi, can1357/oh-my-pi#92). Group 1: the value so far; group 2: its close.
 */
const NAMED_ELEMENT = new RegExp(
  `^<[A-Za-z_][\\w-]{0,${MAX_TAG - 1}}[ \\t\\n]{1,4}(?:${NAMING_ATTRS})="([^"<>]*)(")?`,
);
/** A prefix of such an element, cut by the end of what was seen. */
const NAMED_ELEMENT_PREFIX = new RegExp(
  `^<(?:[A-Za-z_][\\w-]{0,${MAX_TAG - 1}}(?:[ \\t\\n]{1,4}(?:[a-z_]{0,13}=?)?)?)?$`,
);

/**
 * Words that make a lead-in an explanation, an example, an offer or a refusal rather than an
 * announced action (case-insensitive, whole words). Each was seen in front of a call-shaped
 * example in the corpora (tests/fixtures/parsers/wild*.json) or is named by issue 30.
 */
export const EXPLAINING = new RegExp(
  [
    'for example',
    'for instance',
    'examples?',
    'e\\.g\\.?',
    'eg\\.',
    'i\\.e\\.?',
    'such as',
    'like (?:this|so|that)',
    'as follows',
    "here(?:'s| is) how",
    'how (?:to|you|it)',
    'format',
    'syntax',
    'template',
    'samples?',
    'usage',
    'pseudo-?code',
    'would',
    'could',
    'might',
    "you(?:'d|'ll| can| could| should| would| might| may| need| must| will| want| have to)",
    'if you',
    'can you',
    'do you',
    'please (?:run|use|execute|call|try|paste|copy)',
    'try (?:this|running|using)',
    'run this',
    'use this',
    'instead',
    'alternatively',
    'either',
    'options?',
    'cannot',
    "can't",
    'can not',
    'unable',
    'not able',
    'manually',
  ]
    .map((w) => `\\b${w}\\b`)
    .join('|'),
  'i',
);
/** The same, in the other languages seen in the corpora (no word boundaries in CJK). */
export const EXPLAINING_OTHER =
  /例如|比如|示例|例子|举例|例えば|par exemple|zum beispiel|z\. ?b\.|por ejemplo|per esempio|например/i;
/** Characters of call-shaped or marked-up text: a lead-in holds none. */
const CALL_SHAPED = /[{}[\]<>]|```/;
/** An identifier right before `(`: a call-shaped mention when it is a declared tool. */
const CALLED = /([A-Za-z_][\w.-]*)\s?\(/g;
/** What a lead-in may not end with: a question, or a sentence still going on. */
const OPEN_END = new Set(['?', '？', ',', '，', ';', '；', '(', '-', '–', '—']);
/** Sentence punctuation that ends a lead-in before a blank. */
const SENTENCE_END = new Set(['.', ':', '!', '…', '。', '：', '！']);
/** CJK sentence punctuation that ends a lead-in with no blank after it. */
const CJK_END = new Set(['。', '：', '！']);

/**
 * Does `lead` (everything before the candidate) announce an action? Non-empty, at most LEAD_MAX
 * code units once trimmed, no call-shaped text, no explaining words, no question or unfinished
 * sentence at its end, and no declared tool written as a call.
 */
export function announces(lead: string, ctx: ParseContext): boolean {
  let t = lead.trim();
  const fence = reasoningPrefaceEnd(t);
  if (fence >= 0) {
    t = t.slice(fence).trim();
    if (t === '') return true;
  }
  if (t === '' || t.length > LEAD_MAX) return false;
  if (CALL_SHAPED.test(t) || EXPLAINING.test(t) || EXPLAINING_OTHER.test(t)) return false;
  if (OPEN_END.has(t[t.length - 1] as string)) return false;
  // a purpose clause as a heading ("To query the weather for a city:") introduces an instruction
  if (/^to\s/i.test(t)) return false;
  for (const m of t.matchAll(CALLED)) if (ctx.tools.has(m[1] as string)) return false;
  return true;
}

/**
 * A long preface before a bare JSON call object or list (recall10): several paragraphs of the
 * model's own prose (what it found, what it will do), then a last paragraph that announces the
 * call. Read only when the text is at most PREFACE_MAX code units, holds a paragraph break, its
 * last paragraph passes `announces` (at most LEAD_MAX, no question, no unfinished sentence, no
 * purpose heading), and the WHOLE preface holds no call-shaped text and no explaining word (an
 * explanation anywhere before makes the object a sample). One paragraph longer than LEAD_MAX
 * stays a lead-in too long.
 */
export function announcesAfterPreface(lead: string, ctx: ParseContext): boolean {
  const t = lead.trim();
  if (t.length <= LEAD_MAX || t.length > PREFACE_MAX) return false;
  let lastBreak = -1;
  for (const m of t.matchAll(PARAGRAPH_BREAK)) lastBreak = m.index + m[0].length;
  if (lastBreak < 0) return false;
  if (CALL_SHAPED.test(t) || EXPLAINING.test(t) || EXPLAINING_OTHER.test(t)) return false;
  for (const m of t.matchAll(CALLED)) if (ctx.tools.has(m[1] as string)) return false;
  return announces(t.slice(lastBreak), ctx);
}

type Verdict = 'yes' | 'no' | 'maybe';

/** The candidate rules, built once per stream from the plan and the request's tools. */
class Candidates {
  private readonly fixed: string[];
  private readonly names: NameStartMatcher[];
  private readonly longestName: number;
  readonly look: number;

  constructor(
    plan: ScanPlan,
    private readonly ctx: ParseContext,
  ) {
    // the whole families' fixed starts, less the ones handled here (fence, `{`, `[`),
    // functionary's `all\n` channel (a channel name, not a call) and harmony's stripped role
    // header (a header with its control tokens lost: only the output's own start)
    this.fixed = plan.wholeStarts.filter(
      (s) => !['```', '{', '[', 'all\n', 'assistant to=functions.'].includes(s),
    );
    this.names = [];
    for (const f of plan.wholeFamilies) {
      const frames = f.spec.wholeNameStarts;
      if (frames && frames.length > 0 && ctx.tools.size > 0)
        this.names.push(new NameStartMatcher(ctx.tools, frames));
    }
    let longest = 0;
    for (const n of ctx.tools.keys()) if (n.length > longest) longest = n.length;
    this.longestName = longest;
    this.look = Math.max(
      3 + MAX_LANG + 1,
      2 * MAX_TAG + 8 + longest,
      1 + MAX_LIST_GAP + 1,
      ...this.fixed.map((s) => s.length),
      ...this.names.map((m) => m.longest),
    );
  }

  /** Is `rest` (at most `look` chars from a boundary) the start of a call? `full`: nothing more comes. */
  verdict(rest: string, full: boolean): Verdict {
    const c = rest[0];
    if (c === undefined) return full ? 'no' : 'maybe';
    if (c === '{') return 'yes';
    let maybe = false;
    if (c === '`') {
      if (!rest.startsWith('```')) return '```'.startsWith(rest) && !full ? 'maybe' : 'no';
      const nl = rest.indexOf('\n');
      const line = nl < 0 ? rest.slice(3) : rest.slice(3, nl);
      if (!/^[A-Za-z_]*\s*$/.test(line) || line.length > MAX_LANG) return 'no';
      if (nl < 0) return full ? 'no' : 'maybe';
      return FENCE_LANGS.has(line.trim().toLowerCase()) ? 'yes' : 'no';
    }
    if (c === '[') {
      const j = skipWs(rest, 1);
      if (j - 1 <= MAX_LIST_GAP && rest[j] === '{') return 'yes';
      if (j === rest.length && j - 1 <= MAX_LIST_GAP && !full) maybe = true;
    }
    for (const s of this.fixed) {
      if (rest.startsWith(s)) return 'yes';
      if (!full && s.startsWith(rest)) maybe = true;
    }
    for (const m of this.names) {
      const v = m.verdict(rest);
      if (v === 'yes') return 'yes';
      if (v === 'prefix' && !full) maybe = true;
    }
    if (c === '<') {
      const e = NAMED_ELEMENT.exec(rest);
      if (e) {
        const value = e[1] ?? '';
        if (e[2] !== undefined) {
          if (this.ctx.tools.has(value)) return 'yes';
        } else if (!full && value.length <= this.longestName) maybe = true;
      } else if (!full && NAMED_ELEMENT_PREFIX.test(rest)) maybe = true;
    }
    return maybe ? 'maybe' : 'no';
  }
}

/** Sentence punctuation that ends a lead-in before a blank (code units). */
const SENTENCE_END_CODES = new Set([...SENTENCE_END].map((c) => c.charCodeAt(0)));
/** CJK sentence punctuation that ends a lead-in with no blank after it (code units). */
const CJK_END_CODES = new Set([...CJK_END].map((c) => c.charCodeAt(0)));
/** The single characters of CALL_SHAPED (`{ } [ ] < >`), as code units. */
const CALL_SHAPED_CODES = new Set(['{', '}', '[', ']', '<', '>'].map((c) => c.charCodeAt(0)));
/** Characters every candidate may start with: `{`, `[`, a fence, a tag. */
const STATIC_FIRSTS = new Set(['{', '[', '`', '<'].map((c) => c.charCodeAt(0)));

/** First code units of the plan's fixed whole starts (once per plan). */
const FIXED_FIRSTS = new WeakMap<ScanPlan, Set<number>>();
function fixedFirsts(plan: ScanPlan): Set<number> {
  let s = FIXED_FIRSTS.get(plan);
  if (!s) {
    s = new Set(plan.wholeStarts.filter((x) => x !== '').map((x) => x.charCodeAt(0)));
    FIXED_FIRSTS.set(plan, s);
  }
  return s;
}

type State = 'lead' | 'held' | 'off';

export class LeadInWatch {
  private _state: State = 'lead';
  /** Nothing is watched any more: events pass straight on (a field: read once per event). */
  off = false;
  private get state(): State {
    return this._state;
  }
  private set state(s: State) {
    this._state = s;
    this.off = s === 'off';
  }
  /** The output so far while in 'lead' (bounded: PREFACE_MAX + look past its first non-blank). */
  private lead = '';
  /** Events not passed on yet, with their offsets in `lead`. */
  private pending: { e: ScanEvent; at: number }[] = [];
  /** Next offset to look at, and what the walk knew there (see look). */
  private next = 0;
  /** The last non-blank code unit before `next`, and whether a blank / a line break followed it. */
  private last = 0;
  private gap = false;
  private newline = false;
  /** Offset of a non-text event in the lead (a lead-in may not hold one), or -1. */
  private firstEnvelope = -1;
  /** Offset of the output's first non-blank character (-1: not seen yet). */
  private first = -1;
  /** Where the lead-in proper starts: `first`, or the end of a reasoning fence opening the output. */
  private base = -1;
  private held: ScanEvent[] = [];
  private heldLen = 0;
  /** Where the search for a reasoning details block's close goes on (-1: its opener not read yet). */
  private detailsFrom = -1;
  /** Built at the first boundary that may start a candidate (most outputs never get one). */
  private cands: Candidates | null = null;
  private readonly firsts: Set<number>;

  constructor(
    private readonly plan: ScanPlan,
    private readonly ctx: ParseContext,
    private readonly maxHeld: number,
  ) {
    this.firsts = fixedFirsts(plan);
    if (ctx.tools.size === 0) this.state = 'off';
  }

  /**
   * One scan event in; the events to pass on now, in order. `isCall`: an envelope the families
   * read as accepted calls; `passThrough`: control tokens or channel text.
   */
  feed(e: ScanEvent, isCall: boolean, passThrough: boolean): ScanEvent[] {
    if (this.state === 'off') return [e];
    if (this.state === 'held') {
      const size = e.type === 'text' ? e.text.length : e.type === 'envelope' ? e.raw.length : 0;
      this.held.push(e);
      this.heldLen += size;
      if (this.heldLen > this.maxHeld) return this.release();
      return [];
    }
    if (e.type === 'text') {
      this.pending.push({ e, at: this.lead.length });
      this.lead += e.text;
      return this.look(false);
    }
    if (e.type === 'too-long' || isCall || passThrough) {
      // the families read this output (or it is past the cap): the watch has nothing to add
      return [...this.stop(), e];
    }
    // an envelope the families refused stays text: its raw is part of the stream
    const at = this.lead.length;
    if (this.firstEnvelope < 0) this.firstEnvelope = at;
    this.pending.push({ e, at });
    this.lead += e.raw;
    return this.look(false);
  }

  /** End of output: decide the last candidate, then read the held tail or let it go. */
  finish(): ScanEvent[] {
    if (this.state === 'lead') {
      const out = this.look(true);
      if ((this.state as State) !== 'held') return [...out, ...this.stop()];
      return [...out, ...this.decide()];
    }
    if (this.state === 'held') return this.decide();
    return [];
  }

  /**
   * Walks the lead once, left to right (a blank run is walked once, not per push): at each
   * boundary whose character may start a candidate, asks for the candidate's verdict; 'maybe'
   * stops the walk there until more text (or the end) comes, the first 'yes' decides.
   */
  private look(final: boolean): ScanEvent[] {
    const text = this.lead;
    let p = this.next;
    if (this.first < 0) {
      p = skipWs(text, p);
      if (p === text.length) {
        this.next = p;
        // a blank run longer than the cap before anything else: nothing to watch
        if (p > this.maxHeld) return this.stop();
        return this.pass(p);
      }
      this.first = p;
      this.last = text.charCodeAt(p);
      p++;
    }
    if (this.base < 0) {
      // a reasoning fence opening the output: walked over whole, the lead-in starts after it
      const opening = text.slice(this.first, this.first + 16);
      if (
        text.charCodeAt(this.first) === 0x60 &&
        (REASONING_FENCE.test(opening) || (!final && /^`{1,3}[A-Za-z]*$/.test(opening)))
      ) {
        const end = reasoningFenceEnd(text.slice(this.first, this.first + REASONING_FENCE_MAX + 1));
        if (end < 0) {
          const undecided = !final && text.length - this.first <= REASONING_FENCE_MAX;
          if (undecided && (REASONING_FENCE.test(opening) || opening.length < 16)) {
            Object.assign(this, { next: this.first + 1 });
            return this.pass(this.first);
          }
          if (REASONING_FENCE.test(opening)) return this.stop();
          this.base = this.first;
        } else {
          this.base = this.first + end;
          p = this.base;
          Object.assign(this, { last: 0x60, gap: false, newline: false });
        }
      } else if (text.charCodeAt(this.first) === 0x3c) {
        // a reasoning details block opening the output (or its lone close): walked over whole
        const end = this.detailsEnd(text, final);
        if (end === 'wait') {
          Object.assign(this, { next: this.first + 1 });
          return this.pass(this.first);
        }
        if (end === 'stop') return this.stop();
        this.base = end < 0 ? this.first : end;
        if (end >= 0) {
          p = end;
          Object.assign(this, { last: 0x3e, gap: false, newline: false });
        }
      } else this.base = this.first;
    }
    const limit = this.base + PREFACE_MAX;
    let { last, gap, newline } = this;
    for (; p < text.length && p <= limit; p++) {
      const c = text.charCodeAt(p);
      // the blanks of skipWs (kit/json-scan.ts), inline: this loop runs on every output's start
      if (c === 0x20 || c === 0x0a || c === 0x09 || c === 0x0d) {
        gap = true;
        if (c === 10) newline = true;
        continue;
      }
      const boundary = newline || (gap ? SENTENCE_END_CODES.has(last) : CJK_END_CODES.has(last));
      // call-shaped text that starts no candidate: every later lead-in would hold it (announces)
      if (CALL_SHAPED_CODES.has(c) && !(boundary && (c === 0x7b || c === 0x5b || c === 0x3c)))
        return this.stop();
      if (boundary && (STATIC_FIRSTS.has(c) || this.firsts.has(c) || someNameStartsWith(this.ctx.tools, c))) {
        this.cands ??= new Candidates(this.plan, this.ctx);
        const rest = text.slice(p, p + this.cands.look);
        const v = this.cands.verdict(rest, final || rest.length >= this.cands.look);
        if (v === 'maybe') {
          Object.assign(this, { next: p, last, gap, newline });
          return this.pass(p);
        }
        if (v === 'yes') {
          // the first candidate decides
          if (!this.atEventStart(p) || (this.firstEnvelope >= 0 && this.firstEnvelope < p))
            return this.stop();
          const lead = text.slice(0, p);
          const bareJson =
            text.charCodeAt(p) === 0x7b ||
            (text.charCodeAt(p) === 0x5b && text.charCodeAt(skipWs(text, p + 1)) === 0x7b);
          if (!announces(lead, this.ctx) && !(bareJson && announcesAfterPreface(lead, this.ctx)))
            return this.stop();
          return this.hold(p);
        }
      }
      last = c;
      gap = false;
      newline = false;
    }
    Object.assign(this, { next: p, last, gap, newline });
    if (p > limit) return this.stop();
    return this.pass(text.length);
  }

  /**
   * Where a reasoning details block (or its lone close) opening the output at `first` ends:
   * the index after its `</details>`, -1 when the output opens with none, 'wait' while more text
   * may decide, 'stop' when the block runs past REASONING_DETAILS_MAX or the output ends in it.
   * The close is searched from where the last call stopped, so a long block is walked once.
   */
  private detailsEnd(text: string, final: boolean): number | 'wait' | 'stop' {
    const f = this.first;
    const head = text.slice(f, f + DETAILS_START.length);
    if (text.startsWith(DETAILS_CLOSE, f)) {
      const e = lineEndAfter(text, f + DETAILS_CLOSE.length);
      if (e === text.length && !final) return 'wait';
      return e >= 0 ? f + DETAILS_CLOSE.length : -1;
    }
    if (!final && head.length < DETAILS_CLOSE.length && DETAILS_CLOSE.startsWith(head)) return 'wait';
    if (!text.startsWith(DETAILS_START, f)) {
      return !final && head.length < DETAILS_START.length && DETAILS_START.startsWith(head) ? 'wait' : -1;
    }
    if (this.detailsFrom < 0) {
      const gt = text.indexOf('>', f + DETAILS_START.length);
      const headMax = DETAILS_START.length + 8 * 84 + 16;
      if (gt < 0 || gt - f > headMax) return gt < 0 && !final && text.length - f <= headMax ? 'wait' : -1;
      const open = DETAILS_OPEN.exec(text.slice(f, gt + 1));
      if (!open || open[0].length !== gt + 1 - f) return -1;
      this.detailsFrom = gt + 1;
    }
    const max = f + REASONING_DETAILS_MAX;
    for (;;) {
      const c = text.indexOf(DETAILS_CLOSE, this.detailsFrom);
      if (c < 0 || c > max) {
        if (c > max || text.length > max + DETAILS_CLOSE.length || final) return 'stop';
        // a close may be cut at the end: search again from where it could start
        this.detailsFrom = Math.max(this.detailsFrom, text.length - DETAILS_CLOSE.length + 1);
        return 'wait';
      }
      if (text.charCodeAt(c - 1) === 0x0a) {
        const e = lineEndAfter(text, c + DETAILS_CLOSE.length);
        if (e === text.length && !final) {
          this.detailsFrom = c;
          return 'wait';
        }
        if (e >= 0) return c + DETAILS_CLOSE.length;
      }
      this.detailsFrom = c + 1;
    }
  }

  /** Is `p` inside a text event or at the start of an event (never inside an envelope's raw)? */
  private atEventStart(p: number): boolean {
    for (const { e, at } of this.pending) {
      const len = e.type === 'text' ? e.text.length : e.type === 'envelope' ? e.raw.length : 0;
      if (p >= at && p < at + len) return e.type === 'text' || p === at;
    }
    return true;
  }

  /** Passes on the pending events before offset `q` (splitting a text event at q). */
  private pass(q: number): ScanEvent[] {
    const out: ScanEvent[] = [];
    while (this.pending.length > 0) {
      const head = this.pending[0] as { e: ScanEvent; at: number };
      const len =
        head.e.type === 'text' ? head.e.text.length : head.e.type === 'envelope' ? head.e.raw.length : 0;
      if (head.at + len <= q) {
        out.push(head.e);
        this.pending.shift();
        continue;
      }
      if (head.e.type === 'text' && head.at < q) {
        const cut = q - head.at;
        out.push({ type: 'text', text: head.e.text.slice(0, cut) });
        this.pending[0] = { e: { type: 'text', text: head.e.text.slice(cut) }, at: q };
      }
      break;
    }
    return out;
  }

  private hold(p: number): ScanEvent[] {
    const out = this.pass(p);
    this.state = 'held';
    this.held = this.pending.map((x) => x.e);
    this.heldLen = this.lead.length - p;
    this.pending = [];
    this.lead = this.lead.slice(0, p);
    if (this.heldLen > this.maxHeld) return [...out, ...this.release()];
    return out;
  }

  private stop(): ScanEvent[] {
    const out = this.pending.map((x) => x.e);
    this.pending = [];
    this.lead = '';
    this.state = 'off';
    return out;
  }

  private release(): ScanEvent[] {
    const out = this.held;
    this.held = [];
    this.state = 'off';
    return out;
  }

  /** The held tail read as a whole output, under the gate; else the held events as they came. */
  private decide(): ScanEvent[] {
    const events = this.held;
    const tail = events
      .map((e) => (e.type === 'text' ? e.text : e.type === 'envelope' ? e.raw : ''))
      .join('');
    const read = this.readTail(tail, events);
    this.state = 'off';
    this.held = [];
    if (!read) return events;
    const match: EnvelopeMatch = {
      ...read.match,
      end: tail.length,
      calls: read.match.calls.map((c) => ({ ...c, repairs: [...(c.repairs ?? []), 'lead-in'] })),
    };
    return [{ type: 'envelope', family: read.family, match, raw: tail }];
  }

  private readTail(tail: string, events: ScanEvent[]): { family: FamilyParser; match: EnvelopeMatch } | null {
    if (this.plan.think.closeSet.first(tail) !== null) return null;
    const t = tail.trim();
    // a fence labelled json holds JSON
    if (/^```json\s/i.test(t)) {
      const b = skipWs(t, t.indexOf('\n') + 1);
      if (t[b] !== '{' && t[b] !== '[') return null;
    }
    const allCalls =
      events.some((e) => e.type === 'envelope' && e.match.calls.length > 0 && e.match.error === undefined) &&
      events.every((e) => e.type !== 'text' || skipWs(e.text, 0) === e.text.length);
    for (const lastResort of [false, true]) {
      if (lastResort && allCalls) return null;
      for (const f of this.plan.wholeFamilies) {
        if ((f.spec.lastResort === true) !== lastResort) continue;
        const m = f.spec.matchWhole?.(tail, this.ctx);
        if (!m) continue;
        if (m.error !== undefined || m.reasoning || (m.content !== undefined && m.content.trim() !== ''))
          continue;
        if (m.calls.length > 0 && m.calls.every((c) => this.fits(c.name, c.arguments)))
          return { family: f, match: m };
      }
    }
    return null;
  }

  /** The call names a declared tool and its arguments fit the schema (as the engine will type them). */
  private fits(name: string, args: unknown): boolean {
    const tool = this.ctx.tools.get(name);
    if (!tool) return false;
    const a = normalizeArguments(args);
    if (!a) return false;
    const typed = decodeStructuredStrings(a.value, tool);
    return fitsSchema((typed ?? a.value) as Record<string, unknown>, tool);
  }
}
