/**
 * force-tool-use's effects made once (policies/kit constantEffect): every forced request gets the
 * same frozen objects, which no reader can change (the capture knows them by identity:
 * tests/server/capture-ring.test.ts), and those carrying the model's own text stay its own.
 */
import { describe, expect, it } from 'vitest';
import { forceToolUsePolicy } from '../../policies/force-tool-use/index.js';
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import {
  call,
  chunk,
  completion,
  ctxWith,
  request,
  runNonStream,
  runStream,
  weatherTool,
} from './helpers.js';

function forcedEffects(req: ChatCompletionRequest, requiredRejected = false) {
  const d = forceToolUsePolicy.onRequest!(req, ctxWith({ requiredRejected }), req);
  if (d.action !== 'continue') throw new Error('rejected');
  return d.effects;
}

/** A streamed final_answer call of `args`, in three pieces. */
function finalAnswerStream(args: string) {
  const cut = Math.floor(args.length / 2);
  return [
    chunk({
      role: 'assistant',
      tool_calls: [
        { index: 0, id: 'c1', type: 'function', function: { name: 'final_answer', arguments: '' } },
      ],
    }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: args.slice(0, cut) } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: args.slice(cut) } }] }, 'tool_calls'),
  ];
}

function expectConstant(effect: object): void {
  expect(Object.isFrozen(effect)).toBe(true);
  const detail = (effect as { detail?: object }).detail;
  if (detail !== undefined) expect(Object.isFrozen(detail)).toBe(true);
  const before = JSON.stringify(effect);
  // Modules are strict: a write to a frozen object throws, and nothing changed.
  expect(() => {
    (effect as { count: number }).count = 2;
  }).toThrow(TypeError);
  if (detail !== undefined)
    expect(() => {
      (detail as Record<string, unknown>).toolChoice = 'none';
    }).toThrow(TypeError);
  expect(JSON.stringify(effect)).toBe(before);
}

describe("force-tool-use's effects as constants (issue 28: capture CPU)", () => {
  it('every forced request gets the same frozen forced effect, read as before', () => {
    const [a] = forcedEffects(request({ tools: [weatherTool] }));
    const [b] = forcedEffects(request({ tools: [weatherTool], tool_choice: 'auto' }));
    expect(a).toBe(b);
    expect(a).toEqual({
      policy: 'force-tool-use',
      kind: 'forced',
      count: 1,
      detail: { toolChoice: 'required' },
    });
    expectConstant(a!);
    const [auto] = forcedEffects(request({ tools: [weatherTool] }), true);
    expect(auto).toEqual({
      policy: 'force-tool-use',
      kind: 'forced',
      count: 1,
      detail: { toolChoice: 'auto' },
    });
    expect(auto).toBe(forcedEffects(request({ tools: [weatherTool] }), true)[0]);
    expectConstant(auto!);
  });

  it('a final answer, streamed or not, is the same frozen effect every time; one under a field name of its own is not', () => {
    const original = request({ tools: [weatherTool] });
    const plain = (args: string) =>
      runNonStream(
        completion({ content: null, tool_calls: [call('c1', 'final_answer', args)] }),
        original,
        ctxWith(),
      ).effects.find((e) => e.kind === 'final-answer')!;
    const streamed = (args: string) =>
      runStream(finalAnswerStream(args), original, ctxWith()).effects.find((e) => e.kind === 'final-answer')!;
    const answer = JSON.stringify({ answer: 'It is sunny.' });
    const one = plain(answer);
    expect(one).toEqual({
      policy: 'force-tool-use',
      kind: 'final-answer',
      count: 1,
      detail: { mixed: false, truncated: false, raw: false },
    });
    expect(JSON.stringify(one)).toBe(
      '{"policy":"force-tool-use","kind":"final-answer","count":1,"detail":{"mixed":false,"truncated":false,"raw":false}}',
    );
    expect(plain(answer)).toBe(one);
    expect(streamed(answer)).toBe(one);
    expectConstant(one);
    // A field the model named: its own text, its own effect (equal content, a new object).
    const aliased = JSON.stringify({ text: 'It is sunny.' });
    const own = streamed(aliased);
    expect((own as { detail: { field?: string } }).detail.field).toBe('text');
    expect(streamed(aliased)).not.toBe(own);
    expect(streamed(aliased)).toEqual(own);
  });
});
