/**
 * Stream side of client-constraints, per choice (keyed by `choice.index`, so n > 1 works):
 * - "none": content passes live; tool-call deltas are absorbed and, at the choice's finish,
 *   rendered as text after the content (renderCalls, as the non-streamed path), finish "stop";
 * - parallel_tool_calls false: the first call index seen passes live, the others are dropped.
 */
import type { ChatCompletionChunk, ChunkChoice, Delta, ToolCallDelta } from '../../protocol/openai.js';
import type { Constraints } from './constraints.js';
import type { StreamEnd, StreamHook } from '../types.js';
import { EffectTally } from '../kit/effects.js';
import type { CLIENT_CONSTRAINTS_POLICY, ClientConstraintsEffect, ClientConstraintsKind } from './effects.js';
import { callTextSeparator, renderCalls } from './forbidden-calls.js';

interface ChoiceState {
  /** The last character of content sent so far ('' when none): all the separator rule needs. */
  lastChar: string;
  /** "none": the forbidden calls, assembled. */
  calls: Map<number, { name: string; args: string }>;
  /** parallel false: the one index that passes, and the ones dropped. */
  kept: number | undefined;
  dropped: Set<number>;
  finished: boolean;
}

export function createClientConstraintsStreamHook(
  policy: typeof CLIENT_CONSTRAINTS_POLICY,
  c: Constraints,
): StreamHook<ClientConstraintsEffect> {
  const states = new Map<number, ChoiceState>();
  const tally = new EffectTally<typeof CLIENT_CONSTRAINTS_POLICY, ClientConstraintsKind>(policy);
  let template: ChatCompletionChunk | undefined;

  const stateOf = (index: number): ChoiceState => {
    let st = states.get(index);
    if (!st) {
      st = { lastChar: '', calls: new Map(), kept: undefined, dropped: new Set(), finished: false };
      states.set(index, st);
    }
    return st;
  };

  /** "none": the text the absorbed calls become, once, at the end of the choice. */
  const flushCalls = (st: ChoiceState): string => {
    st.finished = true;
    if (st.calls.size === 0) return '';
    tally.add('forbidden-call', st.calls.size);
    const calls = [...st.calls.entries()].sort(([a], [b]) => a - b).map(([, v]) => v);
    // The separator rule only looks at the last character, so lastChar stands for the content.
    return callTextSeparator(st.lastChar) + renderCalls(calls);
  };

  const route = (st: ChoiceState, td: ToolCallDelta, out: ToolCallDelta[]): void => {
    if (c.noCalls) {
      const call = st.calls.get(td.index) ?? { name: '', args: '' };
      if (typeof td.function?.name === 'string') call.name += td.function.name;
      const args: unknown = td.function?.arguments;
      if (typeof args === 'string') call.args += args;
      else if (args !== undefined && args !== null) call.args += JSON.stringify(args);
      st.calls.set(td.index, call);
      return;
    }
    st.kept ??= td.index;
    if (td.index === st.kept) out.push(td.index === 0 ? td : { ...td, index: 0 });
    else st.dropped.add(td.index);
  };

  const transform = (choice: ChunkChoice): ChunkChoice | null => {
    const st = stateOf(choice.index);
    const delta = choice.delta ?? {};
    if (st.finished || (!Array.isArray(delta.tool_calls) && choice.finish_reason == null)) {
      if (typeof delta.content === 'string' && delta.content !== '') st.lastChar = delta.content.slice(-1);
      return choice;
    }
    const next: Delta = { ...delta };
    const tools: ToolCallDelta[] = [];
    for (const td of delta.tool_calls ?? []) route(st, td, tools);
    if (tools.length > 0) next.tool_calls = tools;
    else delete next.tool_calls;
    let content = typeof delta.content === 'string' ? delta.content : '';
    if (content !== '') st.lastChar = content.slice(-1);
    let finish = choice.finish_reason;
    if (finish != null && c.noCalls) {
      const hadCalls = st.calls.size > 0;
      const text = flushCalls(st);
      content += text;
      if (hadCalls && finish === 'tool_calls') finish = 'stop';
    } else if (finish != null) st.finished = true;
    if (content !== '') next.content = content;
    const empty = Object.values(next).every((v) => v === undefined);
    if (empty && finish == null) return null;
    return { ...choice, delta: next, finish_reason: finish ?? null };
  };

  return {
    onChunk(chunk) {
      template ??= chunk;
      if (!Array.isArray(chunk.choices) || chunk.choices.length === 0) return [chunk];
      const choices: ChunkChoice[] = [];
      for (const ch of chunk.choices) {
        const t = transform(ch);
        if (t) choices.push(t);
      }
      return choices.length === 0 && chunk.usage == null ? [] : [{ ...chunk, choices }];
    },
    onLight(light, frame) {
      // Answer text passes as it is (only its last character is kept); call deltas take the full path.
      if (light.kind !== 'answer') return undefined;
      template ??= frame.chunk;
      stateOf(frame.choice).lastChar = light.text.slice(-1);
      return light;
    },
    onEnd(): StreamEnd<ClientConstraintsEffect> {
      const chunks: ChatCompletionChunk[] = [];
      for (const [index, st] of [...states].sort(([a], [b]) => a - b)) {
        tally.add('dropped-parallel-call', st.dropped.size);
        if (st.finished || !c.noCalls) continue;
        // The upstream ended without a finish_reason: the absorbed calls still become text.
        const text = flushCalls(st);
        if (text !== '' && template) {
          chunks.push({
            ...template,
            choices: [{ index, delta: { content: text }, finish_reason: null }],
            usage: null,
          });
        }
      }
      return { chunks, effects: tally.toEffects() };
    },
  };
}
