/**
 * Regression: normalize-tool-calls parsed a call's whole argument text on every delta to ask
 * "is it complete?", so a long streamed call cost O(n²) on the shared event loop (a 20k-delta
 * call took tens of seconds). Plain argument deltas must not re-read what came before.
 */
import { describe, expect, it } from 'vitest';
import { processCpuMs } from '../hardening/loop-probe.js';
import type { ChatCompletionChunk } from '../../protocol/openai.js';
import { createNormalizeStreamHook } from '../../policies/normalize-tool-calls/stream.js';

const base = { id: 'chatcmpl-1', object: 'chat.completion.chunk' as const, created: 1, model: 'm' };
const delta = (d: object, finish: string | null = null): ChatCompletionChunk =>
  ({ ...base, choices: [{ index: 0, delta: d, finish_reason: finish }] }) as ChatCompletionChunk;

describe('normalize-tool-calls stream cost', () => {
  it('a call streamed as 20,000 argument deltas is handled in linear time, arguments intact', () => {
    const hook = createNormalizeStreamHook('normalize-tool-calls');
    const started = processCpuMs();
    let args = '';
    const head = {
      index: 0,
      id: 'c1',
      type: 'function',
      function: { name: 'write', arguments: '{"text": "' },
    };
    for (const c of hook.onChunk(delta({ tool_calls: [head] })))
      args += c.choices[0]?.delta.tool_calls?.[0]?.function?.arguments ?? '';
    for (let i = 0; i < 20_000; i++) {
      for (const c of hook.onChunk(delta({ tool_calls: [{ index: 0, function: { arguments: 'word ' } }] })))
        args += c.choices[0]?.delta.tool_calls?.[0]?.function?.arguments ?? '';
    }
    for (const c of hook.onChunk(
      delta({ tool_calls: [{ index: 0, function: { arguments: '"}' } }] }, 'tool_calls'),
    ))
      args += c.choices[0]?.delta.tool_calls?.[0]?.function?.arguments ?? '';
    const elapsed = processCpuMs() - started;
    expect(JSON.parse(args).text).toHaveLength(100_000);
    // Quadratic, this took well over 10 s on a 2-core machine; linear, a few tens of ms.
    expect(elapsed).toBeLessThan(3000);
  });
});
