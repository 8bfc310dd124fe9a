/**
 * Stream side of force-tool-use: the final_answer call's argument fragments become plain
 * `content` deltas as they are decoded, so the user sees the answer appear live; the other
 * calls keep streaming as tool calls, re-indexed from 0 without the final_answer slot.
 * Same rules as the non-streamed unwrap (force-tool-use/final-answer.ts), applied incrementally.
 */
import type {
  ChatCompletionChunk,
  ChunkChoice,
  Delta,
  ToolCallDelta,
  ToolChoice,
} from '../../protocol/openai.js';
import {
  type LightDelta,
  type LightFrame,
  liveAnswerCopy,
  markLiveAnswer,
  type StreamEnd,
  type StreamHook,
} from '../types.js';
import { appendText } from '../kit/append-text.js';
import { answerOutcome, answerSeparator, createAnswerDecoder } from './final-answer.js';
import type { JsonStringFieldDecoder } from './json-string-stream.js';
import { IndexMap } from '../kit/index-map.js';
import {
  type FORCE_TOOL_USE_POLICY,
  FINAL_ANSWER_INVALID_EFFECT,
  FINAL_ANSWER_RAW_EFFECT,
  type ForceToolUseEffect,
  finalAnswerEffect,
  forcedButProseEffect,
  schemaAnswerEffect,
} from './effects.js';
import type { AnswerFormat } from '../kit/answer-format.js';
import { checkSchemaContent, SchemaAnswerDecoder } from './schema-answer.js';
import type { CompileBudget } from '../types.js';
import { StopCut } from './client-stop.js';

interface CallState {
  kind: 'pending' | 'final' | 'real';
  outIndex: number;
  /** The upstream id (final calls only need it when handed on for a retry). */
  id: string;
  /** The answer string's decoder, or a schema answer's (held whole, decided at the end). */
  decoder: JsonStringFieldDecoder | SchemaAnswerDecoder;
  raw: string;
  started: boolean;
  /** Deltas seen before the call's name (rare): replayed once it is known. Made on the first. */
  buffered: ToolCallDelta[] | undefined;
  /** A final call on a turn the client named a tool: its arguments kept raw, decoded at the finish. */
  held: boolean;
}

interface ChoiceState {
  calls: IndexMap<CallState>;
  realCount: number;
  finalSeen: boolean;
  /** A final_answer without an answer was handed on as a call (corrective-retry re-asks). */
  leftInvalid: boolean;
  /** Content emitted so far: only emptiness and the last character matter for separators. */
  emittedAny: boolean;
  lastChar: string;
  /** Leading whitespace-only content, held: dropped if an answer follows, flushed otherwise. */
  pendingWs: string;
  finalized: boolean;
  /** The client's stop strings applied to the text sent (client-stop.ts); made on the first. */
  cut: StopCut | undefined;
}

export interface FinalAnswerStreamOptions {
  policy: typeof FORCE_TOOL_USE_POLICY;
  finalAnswerName: string;
  forced: boolean;
  toolChoiceSent: ToolChoice | null;
  /** A corrective retry can still follow (a cut-off turn never retries: checked at the finish). */
  retriesLeft?: boolean;
  /** The client's JSON answer format: the answer is the call's arguments (schema-answer.ts). */
  answer?: AnswerFormat;
  budget?: CompileBudget;
  /** The client's stop strings, held back from the upstream: the answer ends at the first. */
  stop?: readonly string[];
  /**
   * The client named a tool (final_answer only kept the prompt's bytes): a final_answer call is
   * held whole, never streamed as answer text; at the finish it goes on as a call while a retry
   * can follow (corrective-retry judges it 'wrong-tool'), else its answer becomes the content.
   */
  named?: boolean;
  /**
   * The characters of the answer (content, reasoning, call names and arguments, as answerChars
   * counts them) up to which a final_answer still goes on as a call (heldCallChars): a named
   * turn's, or one whose arguments hold no answer. Past it the answer is unwrapped as it goes.
   */
  heldCallChars?: number;
}

/** The outcome of one final call: the string decoder's rule, or the schema answer's decision. */
function outcomeOf(call: CallState) {
  const d = call.decoder;
  if (d instanceof SchemaAnswerDecoder) {
    const a = d.decide(call.raw);
    return { extra: a.text, truncated: false, raw: a.raw, invalid: a.invalid, schema: a.outcome };
  }
  return answerOutcome(d, call.raw);
}

/**
 * The delta the client gets for one upstream delta: `content` set to the decoded text (or
 * dropped when the upstream's string was absorbed), `tool_calls` to the calls passed on (or
 * dropped), every other key as it was and in its place, so the bytes match a spread copy.
 * Built in one pass over the keys (this runs once per streamed delta): `empty` says nothing
 * is left to send (only undefined values or a null content).
 */
function rebuildDelta(
  delta: Delta,
  content: string,
  tools: ToolCallDelta[],
): { next: Delta; empty: boolean } {
  const next: Record<string, unknown> = {};
  let empty = true;
  let sawContent = false;
  let sawTools = false;
  const src = delta as Record<string, unknown>;
  for (const k in src) {
    if (k === 'content') {
      sawContent = true;
      const v = src[k];
      if (content !== '') {
        next[k] = content;
        empty = false;
      } else if (typeof v !== 'string') {
        next[k] = v;
        if (v !== undefined && v !== null) empty = false;
      }
    } else if (k === 'tool_calls') {
      sawTools = true;
      if (tools.length > 0) {
        next[k] = tools;
        empty = false;
      }
    } else {
      const v = src[k];
      // A "__proto__" key from JSON.parse is data: define it, as a spread copy would.
      if (k === '__proto__')
        Object.defineProperty(next, k, { value: v, enumerable: true, writable: true, configurable: true });
      else next[k] = v;
      if (v !== undefined) empty = false;
    }
  }
  if (!sawContent && content !== '') {
    next.content = content;
    empty = false;
  }
  if (!sawTools && tools.length > 0) {
    next.tool_calls = tools;
    empty = false;
  }
  return { next: next as Delta, empty };
}

export function createFinalAnswerStreamHook(opts: FinalAnswerStreamOptions): StreamHook<ForceToolUseEffect> {
  return new FinalAnswerStream(opts);
}

/**
 * A class rather than a closure per helper: an open stream holds one object and its state, with
 * the methods shared on the prototype (a dozen closures per stream added up over 1,000 streams).
 */
class FinalAnswerStream implements StreamHook<ForceToolUseEffect> {
  private readonly choices = new IndexMap<ChoiceState>();
  private readonly effects: ForceToolUseEffect[] = [];
  private template: ChatCompletionChunk | undefined;
  /** Set while a chunk is transformed when it carries decoded answer text. */
  private liveAnswer = false;
  /** The answer's characters so far (answerChars' count, every choice), with heldCallChars. */
  private counted = 0;

  constructor(private readonly opts: FinalAnswerStreamOptions) {}

  private stateOf(index: number): ChoiceState {
    let st = this.choices.get(index);
    if (!st) {
      st = {
        calls: new IndexMap(),
        realCount: 0,
        finalSeen: false,
        leftInvalid: false,
        emittedAny: false,
        lastChar: '',
        pendingWs: '',
        finalized: false,
        cut: this.opts.stop ? new StopCut(this.opts.stop) : undefined,
      };
      this.choices.set(index, st);
    }
    return st;
  }

  private contentPiece(st: ChoiceState, text: string): string {
    if (!st.emittedAny) {
      // pendingWs is whitespace by construction: test only the new text (linear in the output).
      if (text.trim() === '') {
        st.pendingWs += text;
        return '';
      }
      const out = st.pendingWs + text;
      st.pendingWs = '';
      return emit(st, out);
    }
    return emit(st, text);
  }

  /** Routes one tool-call delta; returns the content it decoded and the tool deltas to pass on. */
  private routeToolDelta(st: ChoiceState, td: ToolCallDelta, out: ToolCallDelta[]): string {
    let call = st.calls.get(td.index);
    if (!call) {
      call = {
        kind: 'pending',
        outIndex: -1,
        id: '',
        decoder: this.opts.answer
          ? new SchemaAnswerDecoder(this.opts.answer, this.opts.budget)
          : createAnswerDecoder(),
        raw: '',
        started: false,
        buffered: undefined,
        held: false,
      };
      st.calls.set(td.index, call);
    }
    if (call.kind === 'pending') {
      const name = td.function?.name;
      if (typeof name !== 'string' || name === '') {
        (call.buffered ??= []).push(td);
        return '';
      }
      if (name === this.opts.finalAnswerName) {
        call.kind = 'final';
        call.held = this.opts.named === true;
        st.finalSeen = true;
      } else {
        call.kind = 'real';
        call.outIndex = st.realCount++;
      }
      const replay = call.buffered ? [...call.buffered, td] : [td];
      call.buffered = undefined;
      let text = '';
      for (const d of replay) text += applyToCall(st, call, d, out);
      return text;
    }
    return applyToCall(st, call, td, out);
  }

  /** End of a choice: flush decoders, deliver raw arguments when there was no answer string. */
  private finalizeChoice(
    st: ChoiceState,
    out: ToolCallDelta[],
    cutOff: boolean,
  ): { text: string; truncated: boolean } {
    const opts = this.opts;
    st.finalized = true;
    let text = '';
    // "length" from upstream always stays: the model was cut off, whatever the JSON looks like.
    let truncated = cutOff && st.finalSeen;
    let raw = false;
    let field: string | undefined;
    const finals: CallState[] = [];
    for (const call of st.calls.values()) {
      if (call.kind === 'pending') {
        // Never named: pass it on as an ordinary call rather than lose it.
        call.kind = 'real';
        call.outIndex = st.realCount++;
        for (const d of call.buffered ?? []) out.push({ ...d, index: call.outIndex });
        continue;
      }
      if (call.kind === 'final') finals.push(call);
    }
    // The outcome does not depend on the decoder's end-of-input flush (that only releases a
    // held character), so the choice can be made before any text of these calls is flushed.
    const retry =
      opts.retriesLeft === true &&
      !cutOff &&
      this.counted <= (opts.heldCallChars ?? Number.POSITIVE_INFINITY);
    // A held call's arguments, decoded now when its answer is delivered (nothing went out yet).
    const early = finals.map((c) => (c.held && !retry ? c.decoder.push(c.raw) : ''));
    const outcomes = finals.map(outcomeOf);
    if (retry && (opts.named === true || outcomes.some((o) => o.invalid))) {
      // As the non-streamed unwrap: every final_answer of the choice goes on as a call, after
      // the real calls, for corrective-retry to judge. What was decoded live stays sent.
      st.leftInvalid = true;
      for (const call of finals) {
        if (!call.held) text += answerPiece(st, call, call.decoder.finish());
        out.push({
          index: st.realCount++,
          id: call.id,
          type: 'function',
          function: { name: opts.finalAnswerName, arguments: call.raw },
        });
      }
      if (st.cut) text += st.cut.end();
      if (opts.named !== true) this.effects.push(FINAL_ANSWER_INVALID_EFFECT);
      return { text, truncated: false };
    }
    finals.forEach((call, i) => {
      const outcome = outcomes[i]!;
      text += answerPiece(st, call, early[i]! + call.decoder.finish());
      text += answerPiece(st, call, outcome.extra);
      truncated ||= outcome.truncated;
      raw ||= outcome.raw;
      field ??= call.decoder.state.alias;
    });
    if (!st.finalSeen && st.pendingWs !== '') {
      text += emit(st, st.pendingWs);
      st.pendingWs = '';
    }
    if (st.cut) text += st.cut.end();
    if (st.finalSeen) {
      this.effects.push(finalAnswerEffect(st.realCount > 0, truncated, raw, field));
      if (raw) this.effects.push(FINAL_ANSWER_RAW_EFFECT);
      if (opts.answer)
        for (const o of outcomes) this.effects.push(schemaAnswerEffect('schema' in o ? o.schema : 'valid'));
    } else if (opts.forced && st.calls.size === 0) {
      this.effects.push(forcedButProseEffect(opts.toolChoiceSent));
    }
    return { text, truncated };
  }

  private transformChoice(choice: ChunkChoice): ChunkChoice | null {
    const st = this.stateOf(choice.index);
    const delta = choice.delta ?? {};
    if (this.opts.heldCallChars !== undefined) this.counted += deltaChars(delta);
    let content = '';
    if (typeof delta.content === 'string' && delta.content !== '')
      content += this.contentPiece(st, delta.content);
    const tools: ToolCallDelta[] = [];
    let answer = '';
    for (const td of delta.tool_calls ?? []) answer += this.routeToolDelta(st, td, tools);
    let finish = choice.finish_reason;
    if (finish !== null && finish !== undefined && !st.finalized) {
      const end = this.finalizeChoice(st, tools, finish === 'length');
      answer += end.text;
      finish = mapFinish(st, finish, end.truncated);
    }
    if (answer !== '') this.liveAnswer = true;
    content += answer;
    const { next, empty } = rebuildDelta(delta, content, tools);
    if (empty && (finish === null || finish === undefined)) return null;
    const matched = finish !== null && finish !== undefined ? st.cut?.matched : undefined;
    if (matched !== undefined)
      return { ...choice, delta: next, finish_reason: finish ?? null, stop_reason: matched };
    return { ...choice, delta: next, finish_reason: finish ?? null };
  }

  onChunk(chunk: ChatCompletionChunk): ChatCompletionChunk[] {
    this.template = chunk;
    if (!Array.isArray(chunk.choices) || chunk.choices.length === 0) return [chunk];
    const out: ChunkChoice[] = [];
    this.liveAnswer = false;
    for (const c of chunk.choices) {
      const t = this.transformChoice(c);
      if (t) out.push(t);
    }
    if (out.length === 0 && chunk.usage == null) return [];
    return [this.liveAnswer ? liveAnswerCopy(chunk, out) : { ...chunk, choices: out }];
  }

  onLight(light: LightDelta, frame: LightFrame): LightDelta | null | undefined {
    // The hot path: a fragment of a call already named; a final_answer's is decoded into answer text.
    // A named turn counts every character (onChunk): rare, so it takes the full path.
    if (light.kind !== 'args' || this.opts.named === true) return undefined;
    const st = this.choices.get(frame.choice);
    const call = st?.calls.get(light.call);
    if (!st || st.finalized || call === undefined || call.kind === 'pending') return undefined;
    this.template = frame.chunk;
    // What onChunk's deltaChars counts of this fragment (a call's name comes in a full chunk).
    if (this.opts.heldCallChars !== undefined) this.counted += light.fragment.length;
    // Another call's fragment passes on, renumbered without the final_answer slot.
    if (call.kind === 'real')
      return call.outIndex === light.call
        ? light
        : { kind: 'args', call: call.outIndex, fragment: light.fragment };
    call.raw = appendText(call.raw, light.fragment);
    if (call.held) return null;
    const text = answerPiece(st, call, call.decoder.push(light.fragment));
    return text === '' ? null : { kind: 'answer', text };
  }

  onEnd(): StreamEnd<ForceToolUseEffect> {
    const chunks: ChatCompletionChunk[] = [];
    for (const [index, st] of this.choices) {
      if (st.finalized) continue;
      // The upstream ended without a finish_reason (error mid-stream): still deliver what was decoded.
      const tools: ToolCallDelta[] = [];
      const end = this.finalizeChoice(st, tools, false);
      const template = this.template;
      if ((end.text !== '' || tools.length > 0) && template) {
        const delta: Delta = {};
        if (end.text !== '') delta.content = end.text;
        if (tools.length > 0) delta.tool_calls = tools;
        const chunk = { ...template, choices: [{ index, delta, finish_reason: null }], usage: null };
        chunks.push(end.text !== '' ? markLiveAnswer(chunk) : chunk);
      }
    }
    return { chunks, effects: [...this.effects] };
  }
}

/** What answerChars counts of one delta: content, reasoning, call names and argument fragments. */
function deltaChars(delta: Delta): number {
  let n = 0;
  if (typeof delta.content === 'string') n += delta.content.length;
  if (typeof delta.reasoning_content === 'string') n += delta.reasoning_content.length;
  for (const td of Array.isArray(delta.tool_calls) ? delta.tool_calls : []) {
    const f = td?.function;
    if (typeof f?.name === 'string') n += f.name.length;
    if (typeof f?.arguments === 'string') n += f.arguments.length;
  }
  return n;
}

/** Text for the client: separators follow what the model wrote; the client's stop ends it. */
function emit(st: ChoiceState, text: string): string {
  if (text !== '') {
    st.emittedAny = true;
    st.lastChar = text.slice(-1);
  }
  return st.cut ? st.cut.push(text) : text;
}

function answerPiece(st: ChoiceState, call: CallState, text: string): string {
  if (text === '') return '';
  let sep = '';
  if (!call.started) {
    call.started = true;
    st.pendingWs = '';
    sep = st.emittedAny ? answerSeparator(st.lastChar) : '';
  }
  return emit(st, sep + text);
}

function applyToCall(st: ChoiceState, call: CallState, td: ToolCallDelta, out: ToolCallDelta[]): string {
  if (call.kind === 'real') {
    out.push({ ...td, index: call.outIndex });
    return '';
  }
  if (typeof td.id === 'string' && td.id !== '') call.id = td.id;
  const fragment = typeof td.function?.arguments === 'string' ? td.function.arguments : '';
  call.raw = appendText(call.raw, fragment);
  if (call.held) return '';
  return answerPiece(st, call, call.decoder.push(fragment));
}

function mapFinish(st: ChoiceState, upstream: string, truncated: boolean): string {
  if (st.leftInvalid) return upstream;
  // The answer ended at the client's stop string, before any cut the JSON shows.
  if (st.cut?.matched !== undefined) return st.realCount > 0 ? 'tool_calls' : 'stop';
  if (!st.finalSeen) return upstream;
  if (truncated) return 'length';
  if (st.realCount > 0) return upstream === 'stop' ? 'tool_calls' : upstream;
  return 'stop';
}

/**
 * Not forced, a JSON answer format (a request without tools): the chunks pass unchanged, and each
 * choice's content is checked against the format at the end and counted, as onResponse does.
 */
export function createSchemaCheckHook(
  answer: AnswerFormat,
  budget: CompileBudget | undefined,
): StreamHook<ForceToolUseEffect> {
  const content = new Map<number, string>();
  return {
    onChunk(chunk) {
      for (const c of Array.isArray(chunk.choices) ? chunk.choices : []) {
        const piece = c?.delta?.content;
        const before = content.get(c.index) ?? '';
        if (typeof piece === 'string') content.set(c.index, appendText(before, piece));
        else if (!content.has(c.index)) content.set(c.index, before);
      }
      return [chunk];
    },
    onEnd() {
      const effects: ForceToolUseEffect[] = [...content.keys()]
        .sort((a, b) => a - b)
        .map((i) => schemaAnswerEffect(checkSchemaContent(content.get(i), answer, budget)));
      return { chunks: [], effects };
    },
  };
}
