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
 */
import type {
  ChatCompletionChunk,
  ChunkChoice,
  Delta,
  ToolCall,
  ToolCallDelta,
} from '../../protocol/openai.js';
import {
  isLiveAnswer,
  type LightDelta,
  type LightFrame,
  type PolicyEffect,
  type StreamEnd,
  type StreamHook,
} from '../types.js';
import type { Correction } from '../corrective-retry.js';
import { appendText } from './append-text.js';
import { IndexMap } from './index-map.js';
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
}

export type TurnJudge = (turn: {
  content: string | null;
  toolCalls: ToolCall[];
  finishReason: string | null;
}) => Correction;

/** Whether a delta has anything to send (a value that is neither undefined nor null). */
function hasValue(delta: Delta | undefined): boolean {
  if (!delta) return false;
  const d = delta as Record<string, unknown>;
  for (const k in d) if (d[k] !== undefined && d[k] !== null) return true;
  return false;
}

export function createHeldCallsStreamHook(judge: TurnJudge, opts: HoldOptions = { hold: true }): StreamHook {
  return new HeldCallsStream(judge, opts.hold);
}

function absorb(a: ChoiceAcc, td: ToolCallDelta): void {
  let call = a.calls.get(td.index);
  if (!call) {
    call = { id: '', type: 'function', name: '', args: '', extra: {} };
    a.calls.set(td.index, call);
  }
  if (typeof td.id === 'string' && td.id !== '') call.id = td.id;
  if (typeof td.function?.name === 'string') call.name += td.function.name;
  const args: unknown = td.function?.arguments;
  if (typeof args === 'string') call.args = appendText(call.args, args);
  else if (args !== undefined && args !== null) call.args = appendText(call.args, JSON.stringify(args));
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
class HeldCallsStream implements StreamHook {
  private readonly acc = new IndexMap<ChoiceAcc>();
  private readonly held: ChatCompletionChunk[] = [];
  /** Text chunks of this attempt not yet released (dropped on a retry). */
  private pending: ChatCompletionChunk[] = [];
  private template: ChatCompletionChunk | undefined;

  constructor(
    private readonly judge: TurnJudge,
    private readonly hold: boolean,
  ) {}

  private accOf(index: number): ChoiceAcc {
    let a = this.acc.get(index);
    if (!a) {
      a = { content: '', finishReason: null, calls: new IndexMap(), finished: false };
      this.acc.set(index, a);
    }
    return a;
  }

  private emitCalls(index: number, a: ChoiceAcc): ChatCompletionChunk[] {
    if (!this.template) return [];
    const base = this.template;
    const out: ChatCompletionChunk[] = [];
    toolCallsOf(a).forEach((call, i) => {
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
      for (const c of chunk.choices ?? []) {
        const a = this.accOf(c.index);
        if (typeof c.delta?.content === 'string') a.content = appendText(a.content, c.delta.content);
        for (const td of c.delta?.tool_calls ?? []) absorb(a, td);
        if (typeof c.finish_reason === 'string') a.finishReason = c.finish_reason;
      }
      return [chunk];
    }
    if (!Array.isArray(chunk.choices) || chunk.choices.length === 0) {
      this.held.push(chunk);
      return [];
    }
    // Per choice (n > 1): one choice's finish must not hold back another choice's deltas.
    // Hot path (one call per streamed delta): a choice that needs no rewrite (no tool-call
    // array, finish_reason already null) is passed on as the very object, and a chunk whose
    // choices all pass that way is held as itself; copies are made only where a field changes.
    let live: ChunkChoice[] | undefined;
    let ended: ChunkChoice[] | undefined;
    let same = true;
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
      if (typeof d?.content === 'string') a.content = appendText(a.content, d.content);
      let delta: Delta | undefined = d;
      if (d && Array.isArray(d.tool_calls)) {
        for (const td of d.tool_calls) absorb(a, td);
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
    if (ended) this.held.push({ ...chunk, choices: ended });
    if (!live) return [];
    const text: ChatCompletionChunk = same
      ? chunk
      : { ...chunk, choices: live, ...(ended ? { usage: null } : {}) };
    if (!isLiveAnswer(chunk)) {
      this.pending.push(text);
      return [];
    }
    // A live answer commits everything before it.
    if (this.pending.length === 0) return [text];
    const out = this.pending;
    out.push(text);
    this.pending = [];
    return out;
  }

  onLight(light: LightDelta, frame: LightFrame): LightDelta | null | undefined {
    if (light.kind === 'args') {
      // A call's fragment is assembled for the judge; held, nothing goes out until the end.
      const a = this.accOf(frame.choice);
      if (this.hold && a.finished) return undefined;
      this.template ??= frame.chunk;
      absorb(a, { index: light.call, function: { arguments: light.fragment } });
      return this.hold ? null : light;
    }
    // Live answer text with nothing held before it: judged text, passed on at once.
    if (this.hold && this.pending.length > 0) return undefined;
    const a = this.acc.get(frame.choice);
    if (!a || a.finished) return undefined;
    this.template ??= frame.chunk;
    a.content = appendText(a.content, light.text);
    return light;
  }

  onEnd(): StreamEnd {
    const hold = this.hold;
    const effects: PolicyEffect[] = [];
    const chunks: ChatCompletionChunk[] = [];
    for (const [index, a] of [...this.acc.entries()].sort(([x], [y]) => x - y)) {
      const correction = this.judge({
        content: a.content === '' ? null : a.content,
        toolCalls: toolCallsOf(a),
        finishReason: a.finishReason,
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
    const text = this.pending;
    this.pending = [];
    return { chunks: [...text, ...chunks, ...this.held], effects };
  }
}
