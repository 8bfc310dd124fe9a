/**
 * single-call-turns (an upstream whose chat template takes one call per assistant message)
 * splits a turn of n calls and pairs each with its result by id, through a Set and a Map of the
 * client's ids. V8 hashes a string past 16,383 characters by its length alone: n ids of 20 KB
 * alike but for their ends were each compared with all the others (128 vs 512: 32.5 vs 611.7 ms,
 * every request of such a session once the refusal is remembered). Now a StringSet and a
 * StringMap (protocol/string-set.ts): linear, each result still after its own call.
 */
import { describe, expect, it } from 'vitest';
import { splitParallelCalls } from '../../policies/single-call-turns/index.js';
import type { ChatMessage } from '../../protocol/openai.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';

/** One turn of n calls with ids of 20,006 characters alike but for their ends, their results reversed. */
const turn = (n: number): ChatMessage[] => {
  const ids = Array.from({ length: n }, (_, i) => `${'a'.repeat(20_000)}${String(i).padStart(6, '0')}`);
  return [
    { role: 'user', content: 'go' },
    {
      role: 'assistant',
      content: null,
      tool_calls: ids.map((id) => ({
        id,
        type: 'function' as const,
        function: { name: 'f', arguments: '{}' },
      })),
    },
    ...ids.toReversed().map((id): ChatMessage => ({ role: 'tool', tool_call_id: id, content: id.slice(-6) })),
  ];
};

describe('single-call-turns with long call ids', () => {
  it('each result follows its own call', () => {
    const out = splitParallelCalls(turn(3)).messages;
    expect(out.map((m) => (m.role === 'tool' ? m.content : m.role))).toEqual([
      'user',
      'assistant',
      '000000',
      'assistant',
      '000001',
      'assistant',
      '000002',
    ]);
  });

  it('x4 the calls cost about x4, not x16', () => {
    const s = measureScaling(turn, (m) => splitParallelCalls(m).messages, { from: 32, max: 512 });
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});
