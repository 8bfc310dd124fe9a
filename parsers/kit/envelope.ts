/**
 * Building blocks for envelope families: reading a call object out of decoded JSON, code
 * fences, and a factory for "delimited envelope" formats (START … END around JSON or name+JSON)
 * that already honours the prefix-stability contract of engine/family.ts.
 */
import type { EnvelopeMatch, MatchInput, MatchResult } from '../engine/family.js';
import type { ParseContext, ParsedCall } from '../types.js';
import {
  closeTagName,
  slipGate,
  trailingCloseSlip,
  trailingPartialClose,
  trailingTokenSlip,
} from './close-slip.js';
import { skipWs } from './json-scan.js';
import { decodeJsonLenient, isPlainObject } from './lenient-json.js';

/**
 * Index of the first non-whitespace char at or after i; 'need-more' when only whitespace is
 * available and more may come; 'end' when the text ended.
 */
export function peekNonWs(text: string, i: number, final: boolean): number | 'need-more' | 'end' {
  const j = skipWs(text, i);
  if (j < text.length) return j;
  return final ? 'end' : 'need-more';
}

/** Reads {name, arguments|parameters} (also {function:{...}} and {type:'function', function:{...}}). */
export function callFromObject(v: unknown): ParsedCall | null {
  if (!isPlainObject(v)) return null;
  const fn = isPlainObject(v['function']) ? v['function'] : v;
  const name = fn['name'];
  if (typeof name !== 'string' || name === '') return null;
  const allowed = new Set(['name', 'arguments', 'parameters', 'args', 'id', 'type', 'function', 'call_id']);
  for (const k of Object.keys(v)) if (!allowed.has(k)) return null;
  const id = typeof v['id'] === 'string' && v['id'] !== '' ? v['id'] : undefined;
  // `"args"` for the arguments (seed 001: a 4B model prompted for {"name", "args"}), only beside
  // neither of the others; the engine takes it only when the arguments fit the schema (args-key)
  if (!('arguments' in fn) && !('parameters' in fn) && 'args' in fn)
    return { name, arguments: fn['args'], repairs: ['args-key'], ...(id ? { id } : {}) };
  if ('args' in v) return null;
  const args = 'arguments' in fn ? fn['arguments'] : 'parameters' in fn ? fn['parameters'] : undefined;
  return { name, arguments: args, ...(id ? { id } : {}) };
}

/** Strips one surrounding ```json fence; null when there is none. */
export function stripCodeFence(body: string): string | null {
  const t = body.trim();
  if (!t.startsWith('```')) return null;
  const nl = t.indexOf('\n');
  if (nl < 0) return null;
  const lang = t.slice(3, nl).trim().toLowerCase();
  if (lang !== '' && lang !== 'json' && lang !== 'javascript' && lang !== 'python') return null;
  const rest = t.slice(nl + 1);
  const close = rest.lastIndexOf('```');
  if (close < 0) return rest;
  if (rest.slice(close + 3).trim() !== '') return null;
  return rest.slice(0, close);
}

/**
 * Decodes a JSON body (optionally fenced) to a value with repairs; null when not JSON.
 * `strayQuotes`: also read unescaped quotes inside strings (`unescaped-quotes`, schema-gated).
 */
export function decodeBody(
  body: string,
  allowMissingClose: boolean,
  strayQuotes = false,
): { value: unknown; repairs: string[] } | null {
  const fenced = stripCodeFence(body);
  const d = decodeJsonLenient(fenced ?? body, { allowMissingClose, strayQuotes });
  if (!d) return null;
  return { value: d.value, repairs: fenced !== null ? ['code-fence', ...d.repairs] : d.repairs };
}

/** Reads one call object or an array of them from a JSON body. */
export function callsFromJsonBody(
  body: string,
  allowMissingClose: boolean,
  strayQuotes = false,
): { calls: ParsedCall[] } | { error: string } {
  const d = decodeBody(body, allowMissingClose, strayQuotes);
  if (!d) return { error: 'body is not JSON' };
  const items = Array.isArray(d.value) ? d.value : [d.value];
  const calls: ParsedCall[] = [];
  for (const it of items) {
    const c = callFromObject(it);
    if (!c) return { error: 'not a call object' };
    calls.push(d.repairs.length > 0 ? { ...c, repairs: [...(c.repairs ?? []), ...d.repairs] } : c);
  }
  return { calls };
}

export interface DelimitedOptions {
  /** The end marker. */
  end: string;
  /** Decide from what follows the marker whether the envelope is this family's. Default: yes. */
  accept?(text: string, bodyStart: number, final: boolean): 'yes' | 'no' | 'need-more';
  /** Read the body between the markers. `truncated`: the end marker never came. */
  parseBody(
    body: string,
    ctx: ParseContext,
    info: { truncated: boolean },
  ): { calls: ParsedCall[] } | { error: string };
  /** Read an envelope left open at the end of output (default true). */
  allowUnclosed?: boolean;
  /** Extra text the family treats as part of the envelope after END (e.g. a section end); optional. */
  trailer?: string;
}

/** START … END envelopes. The end marker is found with one indexOf, so cost is linear. */
export function delimitedEnvelope(o: DelimitedOptions): (input: MatchInput) => MatchResult {
  return ({ text, start, marker, final, ctx, find }) => {
    const bodyStart = start + marker.length;
    if (o.accept) {
      const a = o.accept(text, bodyStart, final);
      if (a === 'no') return null;
      if (a === 'need-more') return 'need-more';
    }
    const endAt = find(o.end, bodyStart);
    if (endAt < 0) {
      if (!final) return 'need-more';
      // the end marker misspelled as the output's last tag (`</tool_cal>`): the envelope closed
      const name = closeTagName(o.end);
      const slip = name === null ? trailingTokenSlip(text, o.end) : trailingCloseSlip(text, name);
      if (slip > bodyStart) {
        const r = o.parseBody(text.slice(bodyStart, slip), ctx, { truncated: false });
        if ('calls' in r && slipGate(r.calls, ctx)) {
          for (const c of r.calls) c.repairs = [...(c.repairs ?? []), 'mismatched-close-tag'];
          return finishMatch(r, text.length, false);
        }
      }
      if (o.allowUnclosed === false) return null;
      // recall14: the output ends inside the end marker (`</tool_ca`): the envelope left open,
      // read without the cut marker, which goes with it (repair unclosed-envelope)
      const cutAt = trailingPartialClose(text, o.end);
      if (cutAt > bodyStart) {
        const r = o.parseBody(text.slice(bodyStart, cutAt), ctx, { truncated: true });
        if ('calls' in r) return { ...finishMatch(r, text.length, true), closeCut: true };
      }
      return finishMatch(o.parseBody(text.slice(bodyStart), ctx, { truncated: true }), text.length, true);
    }
    let end = endAt + o.end.length;
    if (o.trailer) {
      const j = skipWs(text, end);
      if (text.startsWith(o.trailer, j)) end = j + o.trailer.length;
      else if (!final && o.trailer.startsWith(text.slice(j))) return 'need-more';
    }
    const m = finishMatch(o.parseBody(text.slice(bodyStart, endAt), ctx, { truncated: false }), end, false);
    return o.trailer ? m : absorbRepeatedClose(m, text, final, o.end);
  };
}

/**
 * Near miss (recall11, repair `doubled-close-tag`): a complete envelope read as calls whose closing
 * tag the model wrote twice, the repeat right after it (`…</tool_call></tool_call>`;
 * warpfront/hipfire#750 saw Qwen repeat its closer after a complete call). The repeat is part of the
 * envelope: removed with it when its calls are taken, kept byte for byte when they are not.
 * Undecided ('need-more') only while the text after the envelope is a proper prefix of the tag, so
 * a stream holds back at most the tag's length; one startsWith, linear.
 */
export function absorbRepeatedClose(
  m: MatchResult,
  text: string,
  final: boolean,
  close: string,
): MatchResult {
  if (m === null || m === 'need-more' || m.error !== undefined || m.truncated || m.calls.length === 0)
    return m;
  const e = m.end;
  if (e < close.length || !text.startsWith(close, e - close.length)) return m;
  if (text.startsWith(close, e))
    return {
      ...m,
      end: e + close.length,
      calls: m.calls.map((c) => ({ ...c, repairs: [...(c.repairs ?? []), 'doubled-close-tag'] })),
    };
  if (!final && text.length - e < close.length && close.startsWith(text.slice(e))) return 'need-more';
  return m;
}

/** What reads an envelope's body: its calls, or why it is not readable. */
export type BodyReader = (
  body: string,
  ctx: ParseContext,
  info: { truncated: boolean },
) => { calls: ParsedCall[] } | { error: string };

/**
 * Wraps a body reader: an envelope left open at the end of output whose body holds the
 * family's own marker again was cut off before that next envelope began. Saying so without
 * reading the body keeps many unclosed markers linear (each would otherwise read the whole
 * rest of the text); the indexOf stops at the next marker, so the scans add up to one pass.
 */
export function unlessReopened<C>(
  markers: readonly string[],
  parse: (body: string, ctx: C, info: { truncated: boolean }) => { calls: ParsedCall[] } | { error: string },
): (body: string, ctx: C, info: { truncated: boolean }) => { calls: ParsedCall[] } | { error: string } {
  return (body, ctx, info) => {
    if (info.truncated && markers.some((m) => body.includes(m))) return { error: 'envelope cut off' };
    return parse(body, ctx, info);
  };
}

/**
 * The commonest envelope: `OPEN … END` around a body read by `read`, refused when left open
 * and re-opened (unlessReopened). `open` lists the family's markers that start this envelope.
 */
export function closedEnvelope(o: {
  open: string | readonly string[];
  end: string;
  read: BodyReader;
  accept?: DelimitedOptions['accept'];
}): (input: MatchInput) => MatchResult {
  const markers = typeof o.open === 'string' ? [o.open] : o.open;
  return delimitedEnvelope({
    end: o.end,
    ...(o.accept ? { accept: o.accept } : {}),
    parseBody: unlessReopened(markers, o.read),
  });
}

/**
 * An `accept` for families sharing a marker: the envelope is theirs when what follows it
 * (after whitespace) starts with one of `prefixes`; undecided while a prefix may still come.
 */
export function startsWith(...prefixes: string[]): NonNullable<DelimitedOptions['accept']> {
  return (text, bodyStart, final) => {
    const j = peekNonWs(text, bodyStart, final);
    if (j === 'need-more') return 'need-more';
    if (j === 'end') return 'no';
    let partial = false;
    for (const p of prefixes) {
      if (text.startsWith(p, j)) return 'yes';
      if (!final && text.length - j < p.length && p.startsWith(text.slice(j))) partial = true;
    }
    return partial ? 'need-more' : 'no';
  };
}

export function finishMatch(
  r: { calls: ParsedCall[] } | { error: string },
  end: number,
  truncated: boolean,
): EnvelopeMatch {
  if ('error' in r) return { end, calls: [], error: r.error, ...(truncated ? { truncated } : {}) };
  return { end, calls: r.calls, ...(truncated ? { truncated } : {}) };
}

/** One call block of a section: its head (before the separator) and its arguments text. */
export type CallBlockReader = (
  head: string,
  args: string,
  truncated: boolean,
  ctx: ParseContext,
) => ParsedCall | { error: string };

/**
 * DeepSeek and Kimi K2 wrap calls in a section (one all-or-nothing envelope) of blocks
 * `CALL_OPEN head SEP args CALL_CLOSE`, but also emit a lone block without the section. Both
 * shapes go through the same block loop: a lone block is read as a one-call section.
 */
export function sectionOrLoneCall(o: {
  sectionOpen: string;
  sectionClose: string;
  callOpen: string;
  callClose: string;
  /** Between a block's head and its arguments. */
  sep: string;
  /** The error when a block has no `sep`. */
  noSep: string;
  readCall: CallBlockReader;
  /**
   * A closed block without `sep` (its text between the call markers): the family's near-miss
   * reading, or null (the block, and the section with it, is refused with `noSep`).
   */
  readWithoutSep?: (block: string, ctx: ParseContext) => ParsedCall | null;
}): (input: MatchInput) => MatchResult {
  const readBlocks = (body: string, truncated: boolean, ctx: ParseContext) => {
    const calls: ParsedCall[] = [];
    let i = skipWs(body, 0);
    // the next separator, searched again only once a block is past it: blocks without one
    // (readWithoutSep) would otherwise each scan the rest of the section
    let sep = -2;
    while (i < body.length) {
      if (!body.startsWith(o.callOpen, i)) {
        // noise the model wrote inside the section before a block (vLLM's Kimi K2 tests drop it)
        const next = calls.length === 0 ? body.indexOf(o.callOpen, i) : -1;
        if (next < 0) return { error: 'unexpected text in tool calls section' };
        i = next;
      }
      if (sep !== -1 && sep < i + o.callOpen.length) sep = body.indexOf(o.sep, i + o.callOpen.length);
      const close = body.indexOf(o.callClose, i + o.callOpen.length);
      // a block closed before any separator: never another block's separator
      if (sep < 0 || (close >= 0 && close < sep)) {
        const c =
          close < 0 ? null : (o.readWithoutSep?.(body.slice(i + o.callOpen.length, close), ctx) ?? null);
        if (!c) return { error: o.noSep };
        calls.push(c);
        i = skipWs(body, close + o.callClose.length);
        continue;
      }
      let e = body.indexOf(o.callClose, sep + o.sep.length);
      const open = e < 0;
      if (open && !truncated) return { error: 'unclosed tool call' };
      if (open) e = body.length;
      const head = body.slice(i + o.callOpen.length, sep);
      const c = o.readCall(head, body.slice(sep + o.sep.length, e), truncated, ctx);
      if ('error' in c) return c;
      calls.push(c);
      i = skipWs(body, open ? body.length : e + o.callClose.length);
    }
    return calls.length ? { calls } : { error: 'empty tool calls section' };
  };
  const section = delimitedEnvelope({
    end: o.sectionClose,
    parseBody: (b, ctx, info) => readBlocks(b, info.truncated, ctx),
  });
  const single = delimitedEnvelope({
    end: o.callClose,
    parseBody: (b, ctx, info) =>
      readBlocks(o.callOpen + b + (info.truncated ? '' : o.callClose), info.truncated, ctx),
  });
  return (input) => (input.marker === o.sectionOpen ? section(input) : single(input));
}
