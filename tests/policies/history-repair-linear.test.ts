/**
 * Hardening (issue 8): history repair paired each tool result with its call by a findIndex over
 * the turn's calls: quadratic in the calls of one assistant turn (20k calls: 2.3 s on a loaded
 * box). Pairing now walks per-id lists with forward-only cursors.
 */
import { describe, expect, it } from 'vitest';
import { processCpuMs } from '../hardening/loop-probe.js';
import { repairHistory } from '../../policies/history-repair/repair.js';
import type { ChatMessage } from '../../protocol/openai.js';
import { DEFAULT_MODEL_SETTINGS } from '../../protocol/settings.js';

function turn(n: number, order: 'forward' | 'reverse'): ChatMessage[] {
  const calls = Array.from({ length: n }, (_, i) => ({
    id: `c${i}`,
    type: 'function' as const,
    function: { name: 'f', arguments: '{}' },
  }));
  const results = calls.map((c, i) => ({ role: 'tool' as const, tool_call_id: c.id, content: `r${i}` }));
  if (order === 'reverse') results.reverse();
  return [
    { role: 'user', content: 'go' },
    { role: 'assistant', content: null, tool_calls: calls },
    ...results,
    { role: 'user', content: 'next' },
  ] as ChatMessage[];
}

describe('history repair pairs results in linear time', () => {
  it('50k calls answered in reverse order: seconds at most (quadratic before: 10 s+ unloaded)', () => {
    const start = processCpuMs();
    const { messages } = repairHistory(turn(50_000, 'reverse'), DEFAULT_MODEL_SETTINGS.historyRepair);
    const ms = processCpuMs() - start;
    const tools = messages.filter((m) => m.role === 'tool');
    expect(tools).toHaveLength(50_000);
    // Put back in call order, each result still under its own call's id.
    expect(tools[0]).toMatchObject({ tool_call_id: 'c0', content: 'r0' });
    expect(tools[49_999]).toMatchObject({ tool_call_id: 'c49999', content: 'r49999' });
    expect(ms).toBeLessThan(6000);
  });

  it('duplicate ids, missing ids and unknown ids pair as before', () => {
    const messages = [
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'a', type: 'function', function: { name: 'f', arguments: '{}' } },
          { id: 'a', type: 'function', function: { name: 'g', arguments: '{}' } },
          { type: 'function', function: { name: 'h', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'zzz', content: 'for the id-less call' },
      { role: 'tool', tool_call_id: 'a', content: 'first a' },
      { role: 'tool', content: 'no id: the next open call' },
    ] as ChatMessage[];
    const out = repairHistory(messages, DEFAULT_MODEL_SETTINGS.historyRepair).messages;
    const calls = out[1]?.tool_calls ?? [];
    const tools = out.filter((m) => m.role === 'tool');
    expect(tools.map((t) => t.content)).toEqual([
      'first a',
      'no id: the next open call',
      'for the id-less call',
    ]);
    expect(tools.map((t) => t.tool_call_id)).toEqual(calls.map((c) => c.id));
  });
});
