/**
 * The prompt estimate of wide parallel-call turns (policies/kit/prompt-bytes.ts) and its
 * calibration by the backend's own count (kit/overflow.ts calibrationScale, calibratedWindow;
 * server/context-window.ts remembers the scale). An agent making 20 parallel ~110-character reads
 * a turn was estimated at ~66% of what a backend counting the request's JSON counted (12 bytes a
 * message, nothing a call), and a refused prompt's boundary was placed at its start: nothing cut.
 */
import { describe, expect, it } from 'vitest';
import { calibratedWindow, calibrationScale, messagesBeforeBoundary } from '../../policies/kit/overflow.js';
import {
  BYTES_PER_TOKEN,
  CALL_OVERHEAD,
  estimatedPromptTokens,
  messageBytes,
} from '../../policies/kit/prompt-bytes.js';
import type { ChatMessage } from '../../protocol/openai.js';
import { learntEstimateScale, rememberEstimateScale } from '../../server/context-window.js';
import { FallbackMemory } from '../../server/fallback-memory.js';
import type { ResolvedRoute } from '../../server/routing.js';

/** One turn of `n` parallel reads and their ~110-character results, as an agent sends it back. */
function wideTurn(turn: number, n: number): ChatMessage[] {
  const ids = Array.from({ length: n }, (_, i) => `call_${turn}_${i}_abcdefghijklmnop`);
  return [
    {
      role: 'assistant',
      content: null,
      tool_calls: ids.map((id, i) => ({
        id,
        type: 'function' as const,
        function: { name: 'Read', arguments: JSON.stringify({ path: `f${turn}_${i}.ts` }) },
      })),
    },
    ...ids.map((id, i) => ({
      role: 'tool' as const,
      tool_call_id: id,
      content: `contents of file ${turn}.${i}: ${'line of code\n'.repeat(8)}`,
    })),
  ] as ChatMessage[];
}

describe('the estimate counts each call', () => {
  it("a call's id and the template's wrapping, a result's call id", () => {
    const bare: ChatMessage = { role: 'assistant', content: null };
    const one = wideTurn(0, 1);
    const call = one[0]!;
    const id = call.tool_calls![0]!.id!;
    // the call: its wrapping, id, name and arguments
    expect(messageBytes(call) - messageBytes(bare)).toBe(
      CALL_OVERHEAD + id.length + 'Read'.length + call.tool_calls![0]!.function!.arguments!.length,
    );
    // the result: its text, its overhead and its call's id
    const result = one[1]!;
    expect(messageBytes(result)).toBe(messageBytes({ role: 'tool', content: result.content }) + id.length);
  });

  it('20 parallel reads a turn: over 90% of a count of its JSON at 4 characters a token (66% before)', () => {
    const messages: ChatMessage[] = [{ role: 'user', content: 'Read the files.' }];
    for (let t = 0; t < 5; t++) messages.push(...wideTurn(t, 20));
    const json = Math.ceil(JSON.stringify(messages).length / 4);
    const estimate = estimatedPromptTokens(undefined, messages);
    expect(estimate).toBeGreaterThan(0.9 * json);
    // Without the calls' overhead and ids (the estimate as it was):
    let old = 0;
    for (const m of messages) {
      const ids =
        (m.tool_call_id?.length ?? 0) +
        (m.tool_calls ?? []).reduce((a, c) => a + (c.id?.length ?? 0) + CALL_OVERHEAD, 0);
      old += messageBytes(m) - ids;
    }
    expect(old / BYTES_PER_TOKEN).toBeLessThan(0.7 * json);
  });
});

describe('calibrated by the backend', () => {
  it("a power of two covering the backend's count past the boundary's room", () => {
    expect(calibrationScale(0.5)).toBe(1);
    expect(calibrationScale(0.85)).toBe(1);
    // the simulator counting the JSON of 20 reads a turn: 0.95 of the estimate, the cut prompt over
    expect(calibrationScale(0.95)).toBe(2);
    expect(calibrationScale(1.5)).toBe(2);
    expect(calibrationScale(1.9)).toBe(4);
    expect(calibrationScale(1e9)).toBe(64);
    expect(calibrationScale(Number.NaN)).toBe(1);
    expect(calibratedWindow(8192, undefined)).toBe(8192);
    expect(calibratedWindow(8192, 1)).toBe(8192);
    expect(calibratedWindow(8192, 2)).toBe(4096);
    expect(calibratedWindow(8192, 1e9)).toBe(128);
  });

  it('a larger scale places the boundary later, never earlier; the "certainly over" test stays the window\'s', () => {
    const messages: ChatMessage[] = [{ role: 'user', content: 'go' }];
    for (let t = 0; t < 12; t++) messages.push(...wideTurn(t, 20));
    let last = 0;
    for (const scale of [1, 2, 4, 8]) {
      const at = messagesBeforeBoundary(undefined, messages, 8192, true, calibratedWindow(8192, scale));
      expect(at).toBeGreaterThanOrEqual(last);
      last = at;
    }
    expect(last).toBeGreaterThan(messagesBeforeBoundary(undefined, messages, 8192, true));
    // not refused and not past 6 bytes a token of the real window: nothing cut, whatever the scale
    const short = [{ role: 'user', content: 'go' } as ChatMessage, ...wideTurn(0, 20), ...wideTurn(1, 20)];
    expect(messagesBeforeBoundary(undefined, short, 8192, false, calibratedWindow(8192, 8))).toBe(0);
  });

  it('remembered per upstream and model, the largest, each use another TTL', () => {
    let now = 1_000_000;
    const memory = new FallbackMemory(() => now);
    const route = {
      name: 'sim',
      upstreamModel: 'qwen',
      client: { label: 'upstream-a' },
      settings: Object.freeze({ fallbackTtlSeconds: 60, contextWindow: 8192 }),
    } as unknown as ResolvedRoute;
    expect(learntEstimateScale(memory, route, 'sim')).toBeUndefined();
    rememberEstimateScale(memory, route, 'sim', 4);
    rememberEstimateScale(memory, route, 'sim', 2);
    expect(learntEstimateScale(memory, route, 'sim')).toBe(4);
    const other = { ...route, upstreamModel: 'llama' } as unknown as ResolvedRoute;
    expect(learntEstimateScale(memory, other, 'sim')).toBeUndefined();
    now += 50_000;
    expect(learntEstimateScale(memory, route, 'sim')).toBe(4);
    now += 50_000;
    expect(learntEstimateScale(memory, route, 'sim')).toBe(4);
    now += 61_000;
    expect(learntEstimateScale(memory, route, 'sim')).toBeUndefined();
  });
});
