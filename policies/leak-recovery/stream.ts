/**
 * leak-recovery's stream half: each choice's text goes through its own engine stream, as the
 * non-streamed half (index.ts) recovers a whole message.
 */
import type {
  ChatCompletionChunk,
  ChatCompletionRequest,
  ChunkChoice,
  Delta,
  ToolCallDelta,
} from '../../protocol/openai.js';
import { declaredTools } from '../../protocol/tools.js';
import {
  createRecoveryStream,
  type OutputEnd,
  type RecoveryEvent,
  type RecoveryStream,
} from '../../parsers/recover.js';
import type { LeakRecord } from '../../parsers/types.js';
import {
  passThroughHook,
  type PolicyContext,
  type LightDelta,
  type LightFrame,
  type StreamEnd,
  type StreamHook,
} from '../types.js';
import { clientToolChoice } from '../kit/client-choice.js';
import { IndexMap } from '../kit/index-map.js';
import { pushAll } from '../../protocol/append-all.js';
import { applies, idFactory } from './engine.js';
import { readerStartsInReasoning } from './settings.js';
import { type LeakRecoveryEffect, leakEffects, suppressedEffects } from './effects.js';

/** Stream state of one choice: its own engine, its own index space for tool calls. */
/** A copy of a delta without the keys leak recovery rewrites, the others in their order. */
function copyExcept(delta: Delta): Delta {
  const src = delta as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const k in src) {
    if (k === 'content' || k === 'tool_calls' || k === 'reasoning_content' || k === 'reasoning') continue;
    if (!Object.hasOwn(src, k)) continue;
    if (k === '__proto__')
      Object.defineProperty(out, k, { value: src[k], enumerable: true, writable: true, configurable: true });
    else out[k] = src[k];
  }
  return out as Delta;
}

function hasKey(o: object): boolean {
  for (const k in o) if (Object.hasOwn(o, k)) return true;
  return false;
}

/**
 * A choice's engine, built on its first text. A forced answer streamed as a call never sends
 * any, and an engine that was fed nothing pushes, finishes and reports nothing: so until text
 * comes, an open stream holds no scanner state and pays no set-up. It keeps what the engine
 * needs (the hook, the response id, the choice), not a closure over the first chunk.
 */
class LazyRecoveryStream implements RecoveryStream {
  private engine: RecoveryStream | undefined;
  private finished = false;

  constructor(
    private readonly hook: LeakRecoveryStream,
    private readonly responseId: string,
    private readonly index: number,
  ) {}

  push(d: Parameters<RecoveryStream['push']>[0]): RecoveryEvent[] {
    if (!this.engine) {
      if (this.finished) throw new Error('recovery stream already finished');
      if (!d.content && !d.reasoning) return [];
      this.engine = this.hook.createEngine(this.responseId, this.index);
    }
    return this.engine.push(d);
  }

  finish(end?: OutputEnd): RecoveryEvent[] {
    this.finished = true;
    return this.engine ? this.engine.finish(end) : [];
  }

  leaks(): LeakRecord[] {
    return this.engine ? this.engine.leaks() : [];
  }
}

interface ChoiceRecovery {
  stream: RecoveryStream;
  finished: boolean;
  reasoningKey: 'reasoning_content' | 'reasoning';
  upstreamIndex: IndexMap<number>;
  /** Created on the first recovered call (most streams have none). */
  recoveredIndex: Map<number, number> | undefined;
  nextIndex: number;
  recoveredCount: number;
}

/**
 * Streaming: each choice's content and reasoning deltas go through its own engine stream
 * (which holds back only a tail that could still start a marker), keyed by `choice.index`, so
 * with n > 1 every choice is recovered exactly as the non-streamed path recovers it. Recovered
 * calls become OpenAI tool-call deltas numbered after that choice's structured calls.
 */
export function createStreamHook(
  ctx: PolicyContext,
  _memo: unknown,
  sent: ChatCompletionRequest,
  original: ChatCompletionRequest,
): StreamHook<LeakRecoveryEffect> {
  if (!applies(ctx, sent)) {
    return passThroughHook();
  }
  if (clientToolChoice(original).kind === 'none') return createSuppressingHook(ctx, sent);
  return new LeakRecoveryStream(ctx, sent);
}

function applyEvents(st: ChoiceRecovery, events: RecoveryEvent[], delta: Delta): void {
  let content = '';
  let reasoning = '';
  const calls: ToolCallDelta[] = [];
  for (const e of events) {
    if (e.type === 'content') content += e.text;
    else if (e.type === 'reasoning') reasoning += e.text;
    else if (e.type === 'call-start') {
      const idx = st.nextIndex++;
      (st.recoveredIndex ??= new Map()).set(e.index, idx);
      st.recoveredCount++;
      calls.push({ index: idx, id: e.id, type: 'function', function: { name: e.name, arguments: '' } });
    } else if (e.type === 'call-args') {
      const idx = st.recoveredIndex?.get(e.index);
      if (idx !== undefined) calls.push({ index: idx, function: { arguments: e.fragment } });
    }
  }
  if (content) delta.content = content;
  if (reasoning) delta[st.reasoningKey] = reasoning;
  if (calls.length > 0) delta.tool_calls = [...(delta.tool_calls ?? []), ...calls];
}

/** A class rather than closures: an open stream holds one object, the methods are shared. */
class LeakRecoveryStream implements StreamHook<LeakRecoveryEffect> {
  private readonly states = new IndexMap<ChoiceRecovery>();
  private last: Pick<ChatCompletionChunk, 'id' | 'created' | 'model'> | undefined;

  constructor(
    private readonly ctx: PolicyContext,
    private readonly sent: ChatCompletionRequest,
  ) {}

  /** Call text past the held-text cap in any choice: it stays text, and an invalid turn. */
  unrecoverable(): boolean {
    // Asked after every read of a stream: a choice that never had text has nothing to report.
    if (this.states.size === 0) return false;
    for (const [, st] of this.states)
      for (const l of st.stream.leaks())
        if (l.outcome === 'unrecovered' && l.reason === 'too-long') return true;
    return false;
  }

  /** A choice's engine, on its first text (LazyRecoveryStream). */
  createEngine(responseId: string, index: number): RecoveryStream {
    const settings = this.ctx.settings;
    return createRecoveryStream({
      tools: declaredTools(this.sent),
      parsers: settings.parsers,
      newId: idFactory(responseId, index),
      startsInReasoning: readerStartsInReasoning(settings.startsInReasoning),
      maxHeldBytes: settings.maxHeldBytes,
      backend: settings.backend ?? 'unknown',
    });
  }

  private stateOf(chunk: ChatCompletionChunk, index: number): ChoiceRecovery {
    let st = this.states.get(index);
    if (!st) {
      st = {
        stream: new LazyRecoveryStream(this, String(chunk.id ?? ''), index),
        finished: false,
        reasoningKey: 'reasoning_content',
        upstreamIndex: new IndexMap(),
        recoveredIndex: undefined,
        nextIndex: 0,
        recoveredCount: 0,
      };
      this.states.set(index, st);
    }
    return st;
  }

  private transform(chunk: ChatCompletionChunk, choice: ChunkChoice): ChunkChoice | null {
    const st = this.stateOf(chunk, choice.index);
    if (st.finished) return choice;
    const inDelta = choice.delta ?? {};
    if (typeof inDelta.reasoning === 'string' && inDelta.reasoning_content == null)
      st.reasoningKey = 'reasoning';
    const { content, tool_calls } = inDelta;
    const reasoningText = (st.reasoningKey === 'reasoning' ? inDelta.reasoning : inDelta.reasoning_content) as
      | string
      | null
      | undefined;
    // The other keys, in order (a rest-destructuring with excluded keys is a slow runtime call
    // on this per-delta path).
    const out = copyExcept(inDelta);
    // Structured calls from the backend pass through, renumbered into the choice's index space.
    if (Array.isArray(tool_calls)) {
      const calls: ToolCallDelta[] = [];
      for (const tc of tool_calls) {
        let idx = st.upstreamIndex.get(tc.index);
        if (idx === undefined) {
          idx = st.nextIndex++;
          st.upstreamIndex.set(tc.index, idx);
        }
        calls.push(idx === tc.index ? tc : { ...tc, index: idx });
      }
      out.tool_calls = calls;
    }
    const piece: { content?: string; reasoning?: string } = {};
    if (typeof content === 'string' && content) piece.content = content;
    if (typeof reasoningText === 'string' && reasoningText) piece.reasoning = reasoningText;
    const events = st.stream.push(piece);
    let finish = choice.finish_reason;
    if (finish != null) {
      pushAll(events, st.stream.finish({ cut: finish === 'length' }));
      st.finished = true;
    }
    applyEvents(st, events, out);
    // Keep the role chunk's empty content as the backend sent it (text the engine holds comes
    // out later: put back here, it would reach the client twice).
    if (out.content === undefined && inDelta.role && (content === '' || content === null))
      out.content = content;
    if (finish === 'stop' && st.recoveredCount > 0) finish = 'tool_calls';
    // Everything held back: nothing to send for this choice yet.
    if (finish == null && !hasKey(out)) return null;
    return { ...choice, delta: out, finish_reason: finish };
  }

  private noteIdentity(f: ChatCompletionChunk): void {
    // Replaced only when it changes: the first chunk's strings stay the ones kept (other hooks
    // keep them too), not a fresh copy parsed from every chunk.
    // (a first chunk without an id, which some servers send, is a change too: `this.last?.id`
    // alone read it as unchanged and the next test threw)
    const last = this.last;
    if (last === undefined || last.id !== f.id || last.created !== f.created || last.model !== f.model)
      this.last = { id: f.id, created: f.created, model: f.model };
  }

  onChunk(chunk: ChatCompletionChunk): ChatCompletionChunk[] {
    this.noteIdentity(chunk);
    if (!Array.isArray(chunk.choices) || chunk.choices.length === 0) return [chunk];
    const choices: ChunkChoice[] = [];
    for (const choice of chunk.choices) {
      const t = this.transform(chunk, choice);
      if (t) choices.push(t);
    }
    return choices.length === 0 && !chunk.usage ? [] : [{ ...chunk, choices }];
  }

  onLight(light: LightDelta, frame: LightFrame): LightDelta | null | undefined {
    const st = this.states.get(frame.choice);
    // Text goes through the engine (it may hold or rewrite it): the full path.
    if (!st || light.kind !== 'args') return undefined;
    this.noteIdentity(frame.chunk);
    if (st.finished) return light;
    // A structured call's fragment: no text for the engine (an empty push is a no-op), only
    // the renumbering into the choice's index space.
    const idx = st.upstreamIndex.get(light.call);
    if (idx === undefined) return undefined;
    return idx === light.call ? light : { kind: 'args', call: idx, fragment: light.fragment };
  }

  onEnd(): StreamEnd<LeakRecoveryEffect> {
    const chunks: ChatCompletionChunk[] = [];
    const effects: LeakRecoveryEffect[] = [];
    for (const [index, st] of [...this.states].sort(([a], [b]) => a - b)) {
      if (!st.finished && this.last) {
        // The upstream ended without a finish_reason: flush what the engine still holds.
        st.finished = true;
        const delta: Delta = {};
        applyEvents(st, st.stream.finish(), delta);
        if (Object.keys(delta).length > 0) {
          chunks.push({
            ...this.last,
            object: 'chat.completion.chunk',
            choices: [{ index, delta, finish_reason: null }],
          });
        }
      }
      pushAll(effects, leakEffects(st.stream.leaks()));
    }
    return { chunks, effects };
  }
}

/**
 * tool_choice "none": the client forbade tool calls, so leaked call text is not turned into
 * calls (the Vercel AI SDK, for one, throws on a call it forbade). Chunks pass through byte for
 * byte; each choice's text still goes through an engine, only to count the leaks (outcome
 * 'suppressed'). Like a request without tools, nothing is rewritten (no reasoning split either).
 */
function createSuppressingHook(
  ctx: PolicyContext,
  sent: ChatCompletionRequest,
): StreamHook<LeakRecoveryEffect> {
  const engines = new Map<number, ReturnType<typeof createRecoveryStream>>();
  const engineOf = (index: number) => {
    let s = engines.get(index);
    if (!s) {
      s = createRecoveryStream({
        tools: declaredTools(sent),
        parsers: ctx.settings.parsers,
        newId: idFactory('', index),
        startsInReasoning: readerStartsInReasoning(ctx.settings.startsInReasoning),
        maxHeldBytes: ctx.settings.maxHeldBytes,
        backend: ctx.settings.backend ?? 'unknown',
      });
      engines.set(index, s);
    }
    return s;
  };
  return {
    onChunk(chunk) {
      for (const choice of chunk.choices ?? []) {
        const d = choice.delta ?? {};
        const reasoning = typeof d.reasoning_content === 'string' ? d.reasoning_content : d.reasoning;
        engineOf(choice.index).push({
          ...(typeof d.content === 'string' && d.content ? { content: d.content } : {}),
          ...(typeof reasoning === 'string' && reasoning ? { reasoning } : {}),
        });
      }
      return [chunk];
    },
    onEnd() {
      const effects: LeakRecoveryEffect[] = [];
      for (const [, s] of [...engines].sort(([a], [b]) => a - b)) {
        s.finish();
        pushAll(effects, suppressedEffects(s.leaks()));
      }
      return { chunks: [], effects };
    },
  };
}
