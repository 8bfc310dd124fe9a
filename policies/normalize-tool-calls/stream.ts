/**
 * Stream side of normalize-tool-calls. Per choice, upstream tool-call deltas are mapped onto
 * well-formed calls: contiguous indices in order of appearance, one id per call (sent once,
 * with type and name), continuation deltas carrying only index + arguments.
 */
import type { ChatCompletionChunk, ChunkChoice, ToolCallDelta } from '../../protocol/openai.js';
import type { LightDelta, LightFrame, StreamEnd, StreamHook } from '../types.js';
import { tryParseJson } from '../kit/canonical-arguments.js';
import { argumentsText } from './arguments-text.js';
import { derivedCallId, looksTruncated } from './call-ids.js';
import { EffectTally } from '../kit/effects.js';
import type { NORMALIZE_TOOL_CALLS_POLICY, NormalizeEffect, NormalizeTally } from './effects.js';
import { appendText } from '../kit/append-text.js';
import { IndexMap } from '../kit/index-map.js';
import { StringSet } from '../../protocol/string-set.js';

interface CallState {
  outIndex: number;
  /** The id upstream gave this call (undefined when it gave none). */
  upstreamId: string | undefined;
  name: string;
  nameSent: boolean;
  args: string;
  /** The id sent to the client for this call (upstream's, or derived when missing or taken). */
  outId: string;
  /** Its name was repeated with empty arguments after its arguments were complete: a new call may start. */
  splitPending: boolean;
}

interface ChoiceState {
  calls: CallState[];
  current: IndexMap<CallState>;
  /** The ids sent, once the choice has SCANNED_IDS calls (TakenIds). */
  ids?: StringSet;
}

/** Calls of a choice whose ids are scanned; past it they are kept in a set. */
const SCANNED_IDS = 16;

/**
 * The ids already sent in a choice: a scan over its calls while they are a handful rather than a
 * Set kept for the stream's life (an empty Set and its table cost ~150 bytes per open stream);
 * past SCANNED_IDS calls a set (an upstream streaming 20,000 calls in one choice was scanned
 * 200M times: 1.8-2.4 s of CPU against 0.13-0.29 s for 5,000, on every door). A StringSet: ids
 * are the upstream's, of any length.
 */
class TakenIds {
  constructor(private readonly st: ChoiceState) {}
  has(id: string): boolean {
    if (this.st.ids) return this.st.ids.has(id);
    for (const c of this.st.calls) if (c.outId === id) return true;
    return false;
  }
}

/** Keeps `st.ids` once the choice has SCANNED_IDS calls (after `call` joined its calls). */
function noteId(st: ChoiceState, call: CallState): void {
  if (st.ids) st.ids.add(call.outId);
  else if (st.calls.length >= SCANNED_IDS) st.ids = new StringSet(st.calls.map((c) => c.outId));
}

function argsComplete(args: string): boolean {
  return args.trim() !== '' && tryParseJson(args).ok;
}

export function createNormalizeStreamHook(
  policy: typeof NORMALIZE_TOOL_CALLS_POLICY,
): StreamHook<NormalizeEffect> {
  return new NormalizeStream(policy);
}

/** A class rather than closures: an open stream holds one object, the methods are shared. */
class NormalizeStream implements StreamHook<NormalizeEffect> {
  private readonly tally: NormalizeTally;
  private readonly states = new IndexMap<ChoiceState>();
  private responseId = '';

  constructor(policy: typeof NORMALIZE_TOOL_CALLS_POLICY) {
    this.tally = new EffectTally(policy);
  }

  private stateOf(index: number): ChoiceState {
    let st = this.states.get(index);
    if (!st) {
      st = { calls: [], current: new IndexMap() };
      this.states.set(index, st);
    }
    return st;
  }

  private route(choice: number, st: ChoiceState, td: ToolCallDelta): ToolCallDelta | null {
    const name =
      typeof td.function?.name === 'string' && td.function.name !== '' ? td.function.name : undefined;
    const id = typeof td.id === 'string' && td.id !== '' ? td.id : undefined;
    let cur = st.current.get(td.index);
    const rawArgs: unknown = td.function?.arguments;
    // As the non-streamed side (argumentsText): a non-string value is spelled out, never dropped.
    const fragment = argumentsText(rawArgs, this.tally);
    // Parsing the arguments so far costs O(length): only a delta that names a call again (or
    // follows such a header) needs it, never the plain argument deltas of the hot path.
    const complete = cur !== undefined && (name !== undefined || cur.splitPending) && argsComplete(cur.args);
    // Same name again, no id, nothing new yet: either a backend repeating the header or the
    // header of a second call on the same index. Decided by the next fragment.
    if (cur && id === undefined && name === cur.name && cur.nameSent && complete && fragment === '') {
      cur.splitPending = true;
      return null;
    }
    const startsNew =
      !cur ||
      (id !== undefined && cur.upstreamId !== undefined && id !== cur.upstreamId) ||
      (name !== undefined && cur.nameSent && (name !== cur.name || complete)) ||
      (cur.splitPending && fragment !== '' && complete);
    if (cur && !startsNew) cur.splitPending = false;
    const newName = name ?? (cur?.splitPending ? cur.name : undefined);

    if (startsNew) {
      if (cur) this.tally.add('duplicate-index');
      let outId = id;
      const taken = new TakenIds(st);
      if (outId === undefined) {
        this.tally.add('missing-id');
        outId = derivedCallId(this.responseId, choice, st.calls.length, taken);
      } else if (taken.has(outId)) {
        this.tally.add('duplicate-id');
        outId = derivedCallId(this.responseId, choice, st.calls.length, taken);
      }
      if (td.type !== 'function') this.tally.add('missing-type');
      cur = {
        outIndex: st.calls.length,
        upstreamId: id,
        name: newName ?? '',
        nameSent: newName !== undefined,
        args: fragment,
        outId,
        splitPending: false,
      };
      // The first call in an array literal sized to it: push() onto [] reserves 17 slots.
      if (st.calls.length === 0) st.calls = [cur];
      else st.calls.push(cur);
      noteId(st, cur);
      st.current.set(td.index, cur);
      const fn: { name?: string; arguments: string } = { arguments: fragment };
      if (newName !== undefined) fn.name = newName;
      return { index: cur.outIndex, id: outId, type: 'function', function: fn };
    }

    const call = cur!;
    if (call.upstreamId === undefined && id !== undefined) call.upstreamId = id;
    call.args = appendText(call.args, fragment);
    const fn: { name?: string; arguments: string } = { arguments: fragment };
    if (name !== undefined && !call.nameSent) {
      call.name = name;
      call.nameSent = true;
      fn.name = name;
    }
    return { index: call.outIndex, function: fn };
  }

  private fixFinish(st: ChoiceState, finish: string): string {
    if (finish === 'tool_calls' && st.calls.length === 0) {
      this.tally.add('finish-reason');
      return 'stop';
    }
    if (
      finish !== 'length' &&
      st.calls.some((c) => c.args.trim() !== '' && !argsComplete(c.args) && looksTruncated(c.args))
    ) {
      this.tally.add('truncated-arguments');
      return 'length';
    }
    return finish;
  }

  onChunk(chunk: ChatCompletionChunk): ChatCompletionChunk[] {
    if (this.responseId === '' && typeof chunk.id === 'string') this.responseId = chunk.id;
    if (!Array.isArray(chunk.choices) || chunk.choices.length === 0) return [chunk];
    // Per delta: a choice without tool calls or a finish is left as it is (same bytes as a
    // copy), so a chunk of plain text is passed on as the very object.
    let choices: ChunkChoice[] | undefined;
    const src = chunk.choices;
    for (let i = 0; i < src.length; i++) {
      const c = src[i]!;
      let next = c;
      const calls = c.delta?.tool_calls;
      if (Array.isArray(calls) || typeof c.finish_reason === 'string' || c.delta == null) {
        // A choice's state is made by its first call or finish: a text-only stream keeps none.
        const st = this.stateOf(c.index);
        const delta = { ...(c.delta ?? {}) };
        if (Array.isArray(calls)) {
          const routed: ToolCallDelta[] = [];
          for (const td of calls) {
            const r = this.route(c.index, st, td);
            if (r !== null) routed.push(r);
          }
          delta.tool_calls = routed;
        }
        const finish =
          typeof c.finish_reason === 'string' ? this.fixFinish(st, c.finish_reason) : c.finish_reason;
        next = { ...c, delta, finish_reason: finish };
      }
      if (next !== c && !choices) choices = src.slice(0, i);
      choices?.push(next);
    }
    return [choices ? { ...chunk, choices } : chunk];
  }

  onLight(light: LightDelta, frame: LightFrame): LightDelta | null | undefined {
    if (this.responseId === '' && typeof frame.chunk.id === 'string') this.responseId = frame.chunk.id;
    // Answer text: a plain content delta, passed on as it is.
    if (light.kind === 'answer') return light;
    // A continuation fragment of a known call, with no header pending: route() only appends it.
    const cur = this.states.get(frame.choice)?.current.get(light.call);
    if (!cur || cur.splitPending) return undefined;
    cur.args = appendText(cur.args, light.fragment);
    return cur.outIndex === light.call
      ? light
      : { kind: 'args', call: cur.outIndex, fragment: light.fragment };
  }

  onEnd(): StreamEnd<NormalizeEffect> {
    return { chunks: [], effects: this.tally.toEffects() };
  }
}
