/**
 * force-tool-use on a turn whose client names a tool (docs/prefix.md): final_answer stays declared
 * for the prompt's bytes, and a final_answer call (a backend that does not enforce the name) is
 * held whole: handed on as a call while a retry can follow, its answer as the content after.
 * The rewrite and the held stream cost x1 vs x4 (tests/support/cost-scaling.ts).
 */
import { describe, expect, it } from 'vitest';
import type { ChatCompletionChunk, ChatCompletionRequest } from '../../protocol/openai.js';
import { forceToolUsePolicy } from '../../policies/force-tool-use/index.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';
import { chunk, ctxWith, request, runHook, streamedCalls, streamedContent, tool } from './helpers.js';

const p = forceToolUsePolicy;
const named = { type: 'function' as const, function: { name: 't0' } };

/** A final_answer call streamed in `n` argument fragments, then its finish. */
function finalAnswerStream(n: number): ChatCompletionChunk[] {
  const parts = Array.from({ length: n }, (_, i) => `part ${i} `);
  return [
    chunk({
      tool_calls: [
        {
          index: 0,
          id: 'c1',
          type: 'function',
          function: { name: 'final_answer', arguments: '{"answer": "' },
        },
      ],
    }),
    ...parts.map((t) => chunk({ tool_calls: [{ index: 0, function: { arguments: t } }] })),
    chunk({ tool_calls: [{ index: 0, function: { arguments: '"}' } }] }, 'tool_calls'),
  ];
}

function hookFor(retriesUsed: number) {
  const req = request({ tools: [tool('t0')], tool_choice: named });
  const ctx = ctxWith({ retriesUsed });
  const d = p.onRequest!(req, ctx, req);
  if (d.action !== 'continue') throw new Error('rejected');
  return p.createStreamHook!(ctx, d.memo, d.request, req);
}

describe('force-tool-use, a named tool_choice', () => {
  it('streamed: a final_answer is never answer text while a retry can follow, the content after', () => {
    const held = runHook(hookFor(0), finalAnswerStream(3)).out;
    expect(streamedContent(held)).toBe('');
    expect(streamedCalls(held).map((c) => c.name)).toEqual(['final_answer']);
    const spent = runHook(hookFor(1), finalAnswerStream(3)).out;
    expect(streamedContent(spent)).toBe('part 0 part 1 part 2 ');
    expect(streamedCalls(spent)).toEqual([]);
  });

  it('the request rewrite: x1 vs x4 tools', () => {
    const make = (n: number): ChatCompletionRequest =>
      request({ tools: Array.from({ length: n }, (_, i) => tool(`t${i}`)), tool_choice: named });
    const ctx = ctxWith();
    const s = measureScaling(make, (req) => p.onRequest!(req, ctx, req), { from: 64, max: 65_536 });
    expect(withinBudget(s, 5).time, JSON.stringify(s)).toBe(true);
  });

  it('the held final_answer, streamed: x1 vs x4 fragments', () => {
    const s = measureScaling(finalAnswerStream, (chunks) => runHook(hookFor(1), chunks), {
      from: 64,
      max: 65_536,
    });
    expect(withinBudget(s, 5).time, JSON.stringify(s)).toBe(true);
  });
});
