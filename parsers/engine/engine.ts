/**
 * The recovery stream: think splitting -> envelope scanner -> safety rules -> events.
 * recoverMessage is this same machine fed in one piece, so the two paths cannot drift.
 */
import { BareThinkWatch } from './bare-think.js';
import { ContentSink } from './content-sink.js';
import { LeadInWatch } from './lead-in.js';
import { MidSentenceWatch } from './mid-sentence.js';
import { QuotedText } from './quoted-text.js';
import { ReasoningCalls } from './reasoning-calls.js';
import type { EnvelopeMatch, FamilyParser } from './family.js';
import type { RecoveryEvent, RecoveryStream } from '../recover-types.js';
import { DEFAULT_MAX_HELD, EnvelopeScanner, type ScanEvent, type ScanPlan, TOO_LONG } from './scanner.js';
import { type StartsInReasoning, ThinkSplitter } from './think-split.js';
import type { BackendKind, DeclaredTool, LeakRecord, LeakSource, ParseContext } from '../types.js';
import { normalizeArguments, unsafeArguments } from '../kit/lenient-json.js';
import { decodeStructuredStrings, echoedSchema, fitsSchema, fusedCallKey } from '../kit/schema-values.js';
import { resolveToolName } from './tool-names.js';

export interface EngineOptions {
  plan: ScanPlan;
  tools: ReadonlyMap<string, DeclaredTool>;
  newId: () => string;
  startsInReasoning?: StartsInReasoning;
  /** Cap on text held for a possible envelope (code units); default DEFAULT_MAX_HELD (1 MiB). */
  maxHeld?: number;
  /** Whose fix a leak's backendHint names (RecoveryOptions.backend). */
  backend?: BackendKind;
}

type EnvelopeEvent = Extract<ScanEvent, { type: 'envelope' }>;

/** Leak reason for a complete call written before a bare </think> (see bare-think.ts). */
const DRAFT = 'draft before </think>';
/** An envelope still open when the token limit ended the output (finish reason `length`). */
export const CUT_BY_LIMIT = 'cut off by the token limit';

export interface AcceptedCall {
  name: string;
  arguments: Record<string, unknown>;
  id?: string;
  repairs: string[];
}

/**
 * What would make `kind` parse family `f` itself: llama-server's chat format, vLLM's or SGLang's
 * --tool-call-parser. `vllmOverride`: an envelope's own vLLM parser (EnvelopeMatch.backendHint,
 * DeepSeek V3.1 beside V3). A backend with no entry for the family, or 'unknown', gets every
 * backend's that has one, joined with ' or ' (never one backend's as if it were the only fix).
 * No kind: the first of vLLM, llama-server, SGLang (the probe CLI, which names the rest itself).
 */
export function backendHint(f: FamilyParser, vllmOverride?: string, kind?: BackendKind): string | undefined {
  const b = f.backend;
  const vllm = vllmOverride ?? (b.vllm ? `vllm --tool-call-parser ${b.vllm}` : undefined);
  const llama = b.llamacpp ? `llama-server chat format ${b.llamacpp}` : undefined;
  const sglang = b.sglang ? `sglang --tool-call-parser ${b.sglang}` : undefined;
  const own =
    kind === 'vllm' ? vllm : kind === 'llama-server' ? llama : kind === 'sglang' ? sglang : undefined;
  if (own) return own;
  if (kind === undefined) return vllm ?? llama ?? sglang;
  const all = [vllm, llama, sglang].filter((h): h is string => h !== undefined);
  return all.length > 0 ? all.join(' or ') : undefined;
}

/** Repairs whose reading is taken only for arguments that fit the declared tool's schema. */
const SCHEMA_GATED: ReadonlySet<string> = new Set([
  'args-key',
  'attribute-arguments',
  'bracketless-tags',
  'dsml-tool-tag',
  'escaped-quotes',
  'unbracketed-list',
  'unescaped-quotes',
]);

function schemaGated(...lists: (readonly string[] | undefined)[]): string | null {
  for (const l of lists) for (const r of l ?? []) if (SCHEMA_GATED.has(r)) return r;
  return null;
}

/** The safety rules: every call declared and with object arguments, or the envelope is refused. */
function judgeEnvelope(
  m: EnvelopeMatch,
  tools: ReadonlyMap<string, DeclaredTool>,
): { ok: true; calls: AcceptedCall[] } | { ok: false; outcome: 'unrecovered' | 'rejected'; reason: string } {
  if (m.error !== undefined) return { ok: false, outcome: 'unrecovered', reason: m.error };
  if (m.calls.length === 0) return { ok: false, outcome: 'unrecovered', reason: 'empty envelope' };
  const out: AcceptedCall[] = [];
  for (const c of m.calls) {
    if (typeof c.name !== 'string' || c.name === '')
      return { ok: false, outcome: 'unrecovered', reason: 'no name' };
    const undeclared = {
      ok: false,
      outcome: 'rejected',
      reason: `undeclared tool ${JSON.stringify(c.name.slice(0, 64))}`,
    } as const;
    // `functions.NAME` or NAME in another case: that tool, when the arguments fit it (tool-names.ts)
    const renamed = tools.has(c.name) ? null : resolveToolName(c.name, tools);
    if (!tools.has(c.name) && !renamed) return undeclared;
    const name = renamed?.name ?? c.name;
    const args = normalizeArguments(c.arguments, { allowMissingClose: m.truncated === true });
    if (!args) return { ok: false, outcome: 'rejected', reason: 'arguments are not a JSON object' };
    // typed by the declared tool's schema first: a family that met a renamed tool could not
    // type its values (Qwen3-Coder's `<parameter=limit>5`), so they fit only once typed
    const typed = decodeStructuredStrings(args.value, tools.get(name));
    if (renamed && !fitsSchema(typed ?? args.value, tools.get(name)!)) return undeclared;
    // readings taken only when the arguments fit the schema: arguments under a key no format
    // names (`"args"`, envelope.ts), quotes escaped outside strings (lenient-json.ts), Mistral call
    // objects without the list's brackets (mistral.ts), a last `}` missing, before an end marker
    // or tag or at the end of output (closing a cut call took whatever its text held: a call cut
    // after its name read as `{}` for a tool that requires `city`, peer-ollama's "json maybe a
    // tool call"; a stray `",": "` read as a key; recall21)
    const gated = schemaGated(c.repairs, args.repairs);
    const gate =
      gated ??
      ([...(c.repairs ?? []), ...args.repairs].includes('missing-brace')
        ? m.truncated === true
          ? 'missing-brace at the end of output'
          : 'missing-brace before the envelope ends'
        : // an envelope the output ended inside before any argument (`<tool_call>\n<function=Read>
          // \n</function>` and the end, Read requiring file_path, read as Read({}); recall23,
          // jundot/omlx#3442): no finished call unless {} fits, as a call the end cut after its
          // name is not when a brace is missing. One cut with arguments is read as the peers read it.
          m.truncated === true && Object.keys(args.value).length === 0
          ? 'an envelope ended before any argument'
          : null);
    if (gate !== null && !fitsSchema(typed ?? args.value, tools.get(name)!))
      return {
        ok: false,
        // a declared tool's call the end of output cut: a broken call, re-asked where a retry is
        // left (corrective-retry), not text the model meant as text
        outcome: gated === null && m.truncated === true ? 'unrecovered' : 'rejected',
        reason: `${gate}: the arguments do not fit the schema`,
      };
    // canonicalisation (JSON.stringify) recurses and drops prototype-held keys: check first
    const unsafe = unsafeArguments(args.value);
    if (unsafe) return { ok: false, outcome: 'unrecovered', reason: unsafe };
    if (echoedSchema(args.value, tools.get(name)))
      return {
        ok: false,
        outcome: 'rejected',
        reason: 'arguments are a JSON Schema (tool definition echoed)',
      };
    const fused = fusedCallKey(args.value, tools.get(name), tools);
    if (fused !== null)
      return {
        ok: false,
        outcome: 'rejected',
        reason: `a call fused into the arguments (key ${JSON.stringify(fused.slice(0, 64))})`,
      };
    const repairs = [...(c.repairs ?? []), ...args.repairs, ...(renamed?.repairs ?? [])];
    if (m.truncated) repairs.push('unclosed-envelope');
    if (typed) repairs.push('string-value');
    out.push({ name, arguments: typed ?? args.value, repairs, ...(c.id ? { id: c.id } : {}) });
  }
  return { ok: true, calls: out };
}

/** Holds back a trailing high surrogate so no event ever ends in half a character. */
class SurrogateCarry {
  private carry = '';
  take(text: string, final: boolean): string {
    let t = this.carry + text;
    this.carry = '';
    if (!final && t.length > 0) {
      const c = t.charCodeAt(t.length - 1);
      if (c >= 0xd800 && c <= 0xdbff) {
        this.carry = t.slice(-1);
        t = t.slice(0, -1);
      }
    }
    return t;
  }
}

export function createEngineStream(opts: EngineOptions): RecoveryStream {
  const ctx: ParseContext = { tools: opts.tools };
  const maxHeld = opts.maxHeld ?? DEFAULT_MAX_HELD;
  const think = new ThinkSplitter(opts.plan.think, opts.startsInReasoning ?? false, maxHeld);
  const scanner = new EnvelopeScanner(opts.plan, ctx, { maxHeld });
  const sink = new ContentSink(maxHeld);
  const contentCarry = new SurrogateCarry();
  const reasoningCarry = new SurrogateCarry();
  const leaks: LeakRecord[] = [];
  let reasoningAll = '';
  let callCount = 0;
  let finished = false;
  /** The upstream said the token limit ended the output: set by finish() before the last scans. */
  let cutByLimit = false;
  const bareThink = new BareThinkWatch(maxHeld, opts.plan.think.closeSet);
  // the reasoning the output (or prompt) opened is scanned too: a call ends it (reasoning-calls.ts)
  const reasoningScanner = new EnvelopeScanner(opts.plan, ctx, { whole: false, maxHeld });
  let reasoningScanned = false;
  const reasoningCalls = new ReasoningCalls(maxHeld);
  if (opts.startsInReasoning === true) bareThink.stop();
  // a call that ends the output after a short announcing lead-in (lead-in.ts)
  const leadIn = new LeadInWatch(opts.plan, ctx, maxHeld);
  const quote = new QuotedText();
  const reasoningQuote = new QuotedText();
  // an envelope a sentence that explains goes on past is a sample (mid-sentence.ts)
  const midSentence = new MidSentenceWatch();
  /** judgeEnvelope's verdict per envelope event, so a held envelope is judged once. */
  const verdicts = new WeakMap<ScanEvent, ReturnType<typeof judgeEnvelope>>();
  const judge = (e: Extract<ScanEvent, { type: 'envelope' }>) => {
    let v = verdicts.get(e);
    if (!v) {
      // only the end of output leaves an envelope truncated, so finish() has set the flag by now
      v =
        cutByLimit && e.match.truncated
          ? { ok: false, outcome: 'unrecovered', reason: CUT_BY_LIMIT }
          : judgeEnvelope(e.match, opts.tools);
      verdicts.set(e, v);
    }
    return v;
  };
  const isPassThrough = (m: EnvelopeMatch) =>
    m.control || (m.calls.length === 0 && m.error === undefined && (m.content || m.reasoning));

  function emitCalls(
    calls: AcceptedCall[],
    family: FamilyParser,
    hint: string | undefined,
    source: LeakSource,
    out: RecoveryEvent[],
  ): void {
    for (const c of calls) {
      const index = callCount++;
      const id = c.id ?? opts.newId();
      out.push({ type: 'call-start', index, id, name: c.name });
      out.push({ type: 'call-args', index, fragment: JSON.stringify(c.arguments) });
      out.push({ type: 'call-end', index });
      const rec: LeakRecord = { format: family.name, source, outcome: 'recovered' };
      if (hint) rec.backendHint = hint;
      if (c.repairs.length > 0) rec.repairs = c.repairs;
      leaks.push(rec);
    }
  }

  function reasoning(text: string, out: RecoveryEvent[]): void {
    if (text === '') return;
    reasoningAll += text;
    out.push({ type: 'reasoning', text });
  }

  function content(text: string, out: RecoveryEvent[]): void {
    const t = sink.write(text);
    if (t !== '') out.push({ type: 'content', text: t });
  }

  /**
   * An envelope that starts in inline code, a fenced block, a blockquote line or an HTML comment
   * is a sample the answer shows: its bytes are text (quoted-text.ts). Content the envelopes
   * leave moves that state on; a call's own bytes (a fence inside a file it writes) do not.
   */
  function unquoted(
    e: ScanEvent,
    q = quote,
    isCall = (x: typeof e) => judge(x as EnvelopeEvent).ok,
  ): ScanEvent {
    if (e.type === 'text') q.feed(e.text);
    else if (e.type === 'envelope' && !isPassThrough(e.match)) {
      if (q.quoted()) {
        q.feed(e.raw);
        return { type: 'text', text: e.raw };
      }
      if (!isCall(e)) q.feed(e.raw);
    }
    return e;
  }

  let scanOut: RecoveryEvent[] = [];
  const isCallEvent = (e: ScanEvent) => e.type === 'envelope' && !isPassThrough(e.match) && judge(e).ok;
  const passScanned = (scanned: ScanEvent): void => {
    const out = scanOut;
    const e = unquoted(scanned);
    if (!leadIn.off) {
      watchLeadIn(e, out);
      return;
    }
    // the common path, as before the watch: one field read more per event
    const isCall = e.type === 'envelope' && !isPassThrough(e.match) && judge(e).ok;
    for (const r of bareThink.feed(e, isCall)) handle(r.e, r.draft, out);
  };

  function onScan(events: ScanEvent[], out: RecoveryEvent[]): void {
    scanOut = out;
    for (const scanned of events) midSentence.feed(scanned, isCallEvent, passScanned);
  }

  function watchLeadIn(e: ScanEvent, out: RecoveryEvent[]): void {
    const pass = e.type === 'envelope' && Boolean(isPassThrough(e.match));
    const isCall = e.type === 'envelope' && !pass && judge(e).ok;
    for (const x of leadIn.feed(e, isCall, pass)) toBareThink(x, out);
  }

  function toBareThink(e: ScanEvent, out: RecoveryEvent[]): void {
    const isCall = e.type === 'envelope' && !isPassThrough(e.match) && judge(e).ok;
    for (const r of bareThink.feed(e, isCall)) handle(r.e, r.draft, out);
  }

  function handle(e: ScanEvent, draft: boolean, out: RecoveryEvent[]): void {
    if (e.type === 'text') {
      content(e.text, out);
      return;
    }
    if (e.type === 'too-long') {
      // an output held as a possible whole-output call passed the cap: it flows as text now
      leaks.push({ format: e.family.name, source: 'content', outcome: 'unrecovered', reason: TOO_LONG });
      return;
    }
    const m = e.match;
    if (isPassThrough(m)) {
      sink.cut();
      if (m.reasoning) reasoning(m.reasoning, out);
      if (m.content) {
        content(m.content, out);
        sink.cut();
      }
      return;
    }
    const verdict: ReturnType<typeof judgeEnvelope> = draft
      ? { ok: false, outcome: 'rejected', reason: DRAFT }
      : judge(e);
    if (verdict.ok) {
      sink.cut();
      if (m.reasoning) reasoning(m.reasoning, out);
      if (m.content) {
        content(m.content, out);
        sink.cut();
      }
      emitCalls(verdict.calls, e.family, backendHint(e.family, m.backendHint, opts.backend), 'content', out);
    } else {
      // unsure: the raw envelope stays in content, byte for byte
      content(e.raw, out);
      const rec: LeakRecord = {
        format: e.family.name,
        source: 'content',
        outcome: verdict.outcome,
        reason: verdict.reason,
      };
      const hint = backendHint(e.family, m.backendHint, opts.backend);
      if (hint) rec.backendHint = hint;
      leaks.push(rec);
    }
  }

  /** An event of the output's own reasoning that stays reasoning: its text, byte for byte. */
  function asReasoning(e: ScanEvent, out: RecoveryEvent[]): void {
    if (e.type === 'text') reasoning(e.text, out);
    else if (e.type === 'envelope') reasoning(e.raw, out);
  }

  function onReasoningScan(events: ScanEvent[], out: RecoveryEvent[]): void {
    for (const scanned of events) {
      // reasoning quotes and shows too: a call in its inline code or fence is no call
      const e = unquoted(scanned, reasoningQuote);
      // an envelope the end of output cut off may be a draft still being written: not a call
      const isCall = e.type === 'envelope' && !e.match.truncated && !isPassThrough(e.match) && judge(e).ok;
      for (const r of reasoningCalls.feed(e, isCall)) asReasoning(r, out);
    }
  }

  function finishReasoningScan(out: RecoveryEvent[]): void {
    if (reasoningScanned) return;
    reasoningScanned = true;
    onReasoningScan(reasoningScanner.finish(), out);
  }

  function flushHeld(out: RecoveryEvent[]): void {
    for (const r of bareThink.finish()) handle(r.e, r.draft, out);
  }

  function onThink(pieces: ReturnType<ThinkSplitter['push']>, out: RecoveryEvent[]): void {
    if (think.opened) bareThink.stop();
    for (const p of pieces) {
      if (p.kind === 'cut') {
        // the reasoning closed: a call held in it was a draft
        finishReasoningScan(out);
        for (const e of reasoningCalls.close()) asReasoning(e, out);
        sink.cut();
      } else if (p.kind === 'reasoning') onReasoningScan(reasoningScanner.push(p.text), out);
      else onScan(scanner.push(p.text), out);
    }
  }

  function promote(out: RecoveryEvent[]): void {
    if (callCount > 0 || sink.hasContent || reasoningAll === '') return;
    const s = new EnvelopeScanner(opts.plan, ctx, { whole: false, maxHeld });
    const events = [...s.push(reasoningAll), ...s.finish()];
    const q = new QuotedText();
    for (const scanned of events) {
      const e = unquoted(scanned, q, (x) => x.type === 'envelope' && judgeEnvelope(x.match, opts.tools).ok);
      if (e.type !== 'envelope' || e.match.control) continue;
      // an envelope the end of the reasoning left open is no call, unless all that end cut was
      // its own end marker (`<|tool_calls_section_end|`): written whole, read as in content
      // (unclosed-envelope), not when the token limit cut the output
      if (e.match.truncated && (e.match.closeCut !== true || cutByLimit)) continue;
      const v = judgeEnvelope(e.match, opts.tools);
      if (v.ok)
        emitCalls(
          v.calls,
          e.family,
          backendHint(e.family, e.match.backendHint, opts.backend),
          'reasoning',
          out,
        );
    }
    if (callCount === 0) promoteWhole(out);
  }

  /**
   * No envelope in the reasoning was a call: the whole reasoning read as content reads a whole
   * output (a bare JSON call, an element named for a tool: `<invoke name="bash"><command>…`),
   * taken only when all of it is calls, nothing kept beside them as content or reasoning, and
   * not when the token limit cut the output (it may have been writing more).
   */
  function promoteWhole(out: RecoveryEvent[]): void {
    if (cutByLimit || reasoningAll.length > maxHeld) return;
    const s = new EnvelopeScanner(opts.plan, ctx, { maxHeld });
    const events = [...s.push(reasoningAll), ...s.finish()];
    const e = events[0];
    if (events.length !== 1 || e?.type !== 'envelope' || e.raw !== reasoningAll) return;
    const m = e.match;
    if (m.truncated || m.control || m.content?.trim() || m.reasoning?.trim()) return;
    const v = judgeEnvelope(m, opts.tools);
    if (v.ok)
      emitCalls(v.calls, e.family, backendHint(e.family, m.backendHint, opts.backend), 'reasoning', out);
  }

  return {
    push(d) {
      if (finished) throw new Error('recovery stream already finished');
      const out: RecoveryEvent[] = [];
      if (d.reasoning) reasoning(reasoningCarry.take(d.reasoning, false), out);
      if (d.content) onThink(think.push(contentCarry.take(d.content, false)), out);
      return out;
    },
    finish(end) {
      if (finished) return [];
      finished = true;
      cutByLimit = end?.cut === true;
      const out: RecoveryEvent[] = [];
      reasoning(reasoningCarry.take('', true), out);
      const rest = contentCarry.take('', true);
      if (rest) onThink(think.push(rest), out);
      onThink(think.finish(), out);
      // reasoning still open at the end: a call held in it ends it (the rest is content)
      finishReasoningScan(out);
      for (const e of reasoningCalls.end()) handle(e, false, out);
      onScan(scanner.finish(), out);
      midSentence.finish(passScanned);
      for (const e of leadIn.finish()) toBareThink(e, out);
      flushHeld(out);
      const tail = sink.finish();
      if (tail) out.push({ type: 'content', text: tail });
      promote(out);
      return out;
    },
    leaks: () => leaks.slice(),
  };
}
