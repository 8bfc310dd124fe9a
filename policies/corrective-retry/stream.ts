/**
 * Stream side of corrective-retry. While a retry is still possible, the attempt's output is
 * held until the end, where the assembled turn is judged: a good turn's text goes out, then its
 * calls as proper deltas (first id/type/name, then the arguments); a bad one is dropped whole and
 * the pipeline streams the retry into the same client stream. So what a streaming client
 * assembles equals the non-streamed message whatever the retries (nothing of a rejected
 * attempt, such as the text of a broken envelope or prose where a call was required, reaches it
 * before the decision). Each choice (n > 1) is held and finished on its own.
 * One exception: a final answer streams live (LIVE_ANSWER chunks). It commits what was held
 * before it, and the pipeline keeps a committed answer on a retry in both modes.
 *
 * When no retry is possible (`hold` false) deltas pass through live and the turn is only judged
 * for effects: holding would delay tool calls for nothing.
 *
 * Bounded: text waiting for the decision is kept as text (held-text.ts), and everything the hook
 * keeps (held text, assembled call arguments, answer text kept for the judge) counts against
 * `maxHeldChars` (the model's maxHeldBytes). Past it the stream stops holding: what was held goes
 * out at once, in order (text, then each call so far: head, then its arguments), the rest passes
 * live, nothing more is kept, and the turn is judged as too long to judge (no retry, no schema
 * check; corrective-retry's non-streamed side applies the same rule to the same characters).
 */
import type {
  ChatCompletionChunk,
  ChunkChoice,
  Delta,
  ToolCall,
  ToolCallDelta,
} from '../../protocol/openai.js';
import { isLiveAnswer, type LightDelta, type LightFrame, type StreamEnd, type StreamHook } from '../types.js';
import type { Correction } from './judge.js';
import type { CorrectiveRetryEffect } from './effects.js';
import { appendText } from '../kit/append-text.js';
import { HeldText, heldWeight } from './held-text.js';
import { IndexMap } from '../kit/index-map.js';
import { pushAll } from '../../protocol/append-all.js';

interface Assembled {
  id: string;
  type: 'function';
  name: string;
  args: string;
  extra: Record<string, unknown>;
}

interface ChoiceAcc {
  content: string;
  finishReason: string | null;
  calls: IndexMap<Assembled>;
  /** This choice's finish arrived: anything later for it waits until the end too. */
  finished: boolean;
}

export interface HoldOptions {
  /** Hold the turn until it is judged (false: pass live, judge for effects). */
  hold: boolean;
  /** Characters the hook may keep in all (text, reasoning, arguments); unlimited when absent. */
  maxHeldChars?: number;
  /**
   * The attempt is already known to be discarded (an earlier hook found its output unrecoverable,
   * and a retry follows): past the cap the held turn is not released, since the upstream is
   * stopped right after this chunk (server/chat/early-stop.ts) and the turn goes to the judge.
   */
  discardDecided?: () => boolean;
}

export type TurnJudge = (turn: {
  content: string | null;
  toolCalls: ToolCall[];
  finishReason: string | null;
  /** The answer outgrew maxHeldChars: it was released unjudged, and is not judged now. */
  tooLong?: boolean;
}) => Correction;

/** Whether a delta has anything to send (a value that is neither undefined nor null). */
function hasValue(delta: Delta | undefined): boolean {
  if (!delta) return false;
  const d = delta as Record<string, unknown>;
  for (const k in d) if (d[k] !== undefined && d[k] !== null) return true;
  return false;
}

export function createHeldCallsStreamHook(
  judge: TurnJudge,
  opts: HoldOptions = { hold: true },
): StreamHook<CorrectiveRetryEffect> {
  return new HeldCallsStream(
    judge,
    opts.hold,
    opts.maxHeldChars ?? Number.POSITIVE_INFINITY,
    opts.discardDecided,
  );
}

/** Adds a call fragment to the turn; returns the characters it added. */
function absorb(a: ChoiceAcc, td: ToolCallDelta): number {
  let call = a.calls.get(td.index);
  if (!call) {
    call = { id: '', type: 'function', name: '', args: '', extra: {} };
    a.calls.set(td.index, call);
  }
  if (typeof td.id === 'string' && td.id !== '') call.id = td.id;
  let added = 0;
  if (typeof td.function?.name === 'string') {
    call.name += td.function.name;
    added += td.function.name.length;
  }
  const args: unknown = td.function?.arguments;
  const text =
    typeof args === 'string' ? args : args !== undefined && args !== null ? JSON.stringify(args) : '';
  if (text !== '') call.args = appendText(call.args, text);
  return added + text.length;
}

function toolCallsOf(a: ChoiceAcc): ToolCall[] {
  return [...a.calls.entries()]
    .sort(([x], [y]) => x - y)
    .map(([, c]) => ({ id: c.id, type: c.type, function: { name: c.name, arguments: c.args } }));
}

/**
 * A class rather than a closure per helper: an open stream holds one object and its state, with
 * the methods shared on the prototype.
 */
class HeldCallsStream implements StreamHook<CorrectiveRetryEffect> {
  private readonly acc = new IndexMap<ChoiceAcc>();
  private held: ChatCompletionChunk[] = [];
  /** What `held` weighs (heldWeight of each). */
  private heldWeight = 0;
  /** Text of this attempt not yet released (dropped on a retry). */
  private readonly pending = new HeldText();
  private template: ChatCompletionChunk | undefined;
  /** Characters kept for the judge (answer text, reasoning, arguments), chunks kept at their cost. */
  private kept = 0;
  /** maxHeldChars was passed: nothing is held or kept any more, the turn goes out unjudged. */
  private tooLong = false;
  private hold: boolean;

  constructor(
    private readonly judge: TurnJudge,
    hold: boolean,
    private readonly maxHeldChars: number,
    private readonly discardDecided: (() => boolean) | undefined,
  ) {
    this.hold = hold;
  }

  /** Counts `n` kept characters; past the cap, stops holding (and returns what was held). */
  private keep(n: number): ChatCompletionChunk[] {
    if (this.tooLong) return [];
    this.kept += n;
    // The characters decide (the non-streamed side counts the same ones); the chunk objects held
    // besides them are bounded by the same cap.
    const objects = this.pending.overhead + this.heldWeight;
    if (this.kept <= this.maxHeldChars && objects <= this.maxHeldChars) return [];
    // Thrown away whatever comes next: nothing of it may reach the client, and the stop bounds it.
    if (this.hold && this.discardDecided?.()) return [];
    this.tooLong = true;
    const out = this.hold ? this.releaseAll() : [];
    this.hold = false;
    // Nothing more is kept for the judge: the turn is not judged.
    for (const [, a] of this.acc.entries()) {
      a.content = '';
      a.calls = new IndexMap();
    }
    return out;
  }

  /** Everything held, in order: text, each choice's calls so far, the held finishes. */
  private releaseAll(): ChatCompletionChunk[] {
    const out = this.template ? this.pending.release(this.textTemplate()) : [];
    for (const [index, a] of [...this.acc.entries()].sort(([x], [y]) => x - y))
      pushAll(out, this.emitCalls(index, a, true));
    pushAll(out, this.held);
    this.held = [];
    this.heldWeight = 0;
    return out;
  }

  private textTemplate(): ChatCompletionChunk {
    const t = this.template!;
    return t.usage !== undefined ? { ...t, usage: null } : t;
  }

  private accOf(index: number): ChoiceAcc {
    let a = this.acc.get(index);
    if (!a) {
      a = { content: '', finishReason: null, calls: new IndexMap(), finished: false };
      this.acc.set(index, a);
    }
    return a;
  }

  /**
   * The calls of choice `index` as deltas. `upstreamIndex`: numbered as the upstream numbered
   * them (a release mid-stream: the rest of each call follows live, with the upstream's index).
   */
  private emitCalls(index: number, a: ChoiceAcc, upstreamIndex = false): ChatCompletionChunk[] {
    if (!this.template) return [];
    const base = this.template;
    const out: ChatCompletionChunk[] = [];
    const indexes = [...a.calls.entries()].map(([k]) => k).sort((x, y) => x - y);
    toolCallsOf(a).forEach((call, position) => {
      const i = upstreamIndex ? indexes[position]! : position;
      const head: ToolCallDelta = {
        index: i,
        id: call.id,
        type: 'function',
        function: { name: call.function.name, arguments: '' },
      };
      out.push({
        ...base,
        choices: [{ index, delta: { tool_calls: [head] }, finish_reason: null }],
        usage: null,
      });
      if (call.function.arguments !== '') {
        const body: ToolCallDelta = { index: i, function: { arguments: call.function.arguments } };
        out.push({
          ...base,
          choices: [{ index, delta: { tool_calls: [body] }, finish_reason: null }],
          usage: null,
        });
      }
    });
    return out;
  }

  onChunk(chunk: ChatCompletionChunk): ChatCompletionChunk[] {
    // The first chunk is the cleanest template (later ones may carry timings, usage). Only its
    // top-level fields are used (emitCalls): its choices are not kept alive for the stream's life.
    this.template ??= { ...chunk, choices: [] };
    if (!this.hold) {
      if (this.tooLong) return [chunk];
      let added = 0;
      for (const c of chunk.choices ?? []) {
        const a = this.accOf(c.index);
        if (typeof c.delta?.content === 'string') {
          a.content = appendText(a.content, c.delta.content);
          added += c.delta.content.length;
        }
        if (typeof c.delta?.reasoning_content === 'string') added += c.delta.reasoning_content.length;
        for (const td of c.delta?.tool_calls ?? []) added += absorb(a, td);
        if (typeof c.finish_reason === 'string') a.finishReason = c.finish_reason;
      }
      this.keep(added);
      return [chunk];
    }
    if (!Array.isArray(chunk.choices) || chunk.choices.length === 0) {
      this.held.push(chunk);
      this.heldWeight += heldWeight(chunk);
      return this.keep(0);
    }
    // Per choice (n > 1): one choice's finish must not hold back another choice's deltas.
    // Hot path (one call per streamed delta): a choice that needs no rewrite (no tool-call
    // array, finish_reason already null) is passed on as the very object, and a chunk whose
    // choices all pass that way is held as itself; copies are made only where a field changes.
    let live: ChunkChoice[] | undefined;
    let ended: ChunkChoice[] | undefined;
    let same = true;
    let added = 0;
    const choices = chunk.choices;
    for (let i = 0; i < choices.length; i++) {
      const c = choices[i]!;
      const a = this.accOf(c.index);
      if (a.finished) {
        (ended ??= []).push(c);
        same = false;
        continue;
      }
      const d = c.delta;
      if (typeof d?.content === 'string') {
        a.content = appendText(a.content, d.content);
        added += d.content.length;
      }
      if (typeof d?.reasoning_content === 'string') added += d.reasoning_content.length;
      let delta: Delta | undefined = d;
      if (d && Array.isArray(d.tool_calls)) {
        for (const td of d.tool_calls) added += absorb(a, td);
        const { tool_calls: _calls, ...rest } = d;
        delta = rest;
      }
      if (typeof c.finish_reason === 'string') {
        // The finish waits: on a retry this attempt must not look finished to the client. Text
        // in the same chunk still goes out now (the client would otherwise never see it on a retry).
        a.finishReason = c.finish_reason;
        a.finished = true;
        (ended ??= []).push({ ...c, delta: {} });
      }
      const passAsIs = delta === d && d !== undefined && c.finish_reason === null;
      if (!hasValue(delta)) {
        same = false;
        continue;
      }
      const v = passAsIs ? c : { ...c, delta: delta === d ? { ...(d ?? {}) } : delta, finish_reason: null };
      if (v !== c) same = false;
      (live ??= []).push(v);
    }
    if (ended) {
      const finish: ChatCompletionChunk = { ...chunk, choices: ended };
      this.held.push(finish);
      this.heldWeight += heldWeight(finish);
    }
    if (!live) return this.keep(added);
    const text: ChatCompletionChunk = same
      ? chunk
      : { ...chunk, choices: live, ...(ended ? { usage: null } : {}) };
    if (!isLiveAnswer(chunk)) {
      this.pending.add(text, this.template);
      // Past the cap: this text goes out now with everything held before it.
      return this.keep(added);
    }
    // A live answer commits everything before it.
    const out = this.pending.empty ? [] : this.pending.release(this.textTemplate());
    out.push(text);
    pushAll(out, this.keep(added));
    return out;
  }

  onLight(light: LightDelta, frame: LightFrame): LightDelta | null | undefined {
    if (this.tooLong) return light;
    if (light.kind === 'args') {
      // A call's fragment is assembled for the judge; held, nothing goes out until the end.
      const a = this.accOf(frame.choice);
      if (this.hold && a.finished) return undefined;
      // Reaching the cap releases what was held: the full path frames that release.
      if (this.kept + light.fragment.length > this.maxHeldChars) return undefined;
      this.template ??= frame.chunk;
      this.kept += absorb(a, { index: light.call, function: { arguments: light.fragment } });
      return this.hold ? null : light;
    }
    // Live answer text with nothing held before it: judged text, passed on at once.
    if (this.hold && !this.pending.empty) return undefined;
    const a = this.acc.get(frame.choice);
    if (!a || a.finished) return undefined;
    if (this.kept + light.text.length > this.maxHeldChars) return undefined;
    this.template ??= frame.chunk;
    a.content = appendText(a.content, light.text);
    this.kept += light.text.length;
    return light;
  }

  onEnd(): StreamEnd<CorrectiveRetryEffect> {
    const hold = this.hold;
    const effects: CorrectiveRetryEffect[] = [];
    const chunks: ChatCompletionChunk[] = [];
    for (const [index, a] of [...this.acc.entries()].sort(([x], [y]) => x - y)) {
      const correction = this.judge({
        content: a.content === '' ? null : a.content,
        toolCalls: toolCallsOf(a),
        finishReason: a.finishReason,
        ...(this.tooLong ? { tooLong: true } : {}),
      });
      pushAll(effects, correction.effects);
      if (correction.retry && hold) return { chunks: [], effects, retry: correction.retry };
      if (hold) pushAll(chunks, this.emitCalls(index, a));
    }
    if (this.acc.size === 0) {
      const correction = this.judge({ content: null, toolCalls: [], finishReason: null });
      pushAll(effects, correction.effects);
      if (correction.retry && hold) return { chunks: [], effects, retry: correction.retry };
    }
    const text = this.template && !this.pending.empty ? this.pending.release(this.textTemplate()) : [];
    pushAll(text, chunks);
    pushAll(text, this.held);
    this.held = [];
    this.heldWeight = 0;
    return { chunks: text, effects };
  }
}
