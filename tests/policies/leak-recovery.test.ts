/**
 * leak-recovery as a policy (the engine itself is tested in tests/parsers/): every choice is
 * recovered when n > 1, streamed and not; with the client's tool_choice "none" leaked text stays
 * content byte for byte and is counted as 'suppressed'.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionRequest } from '../../protocol/openai.js';
import { leakRecovery } from '../../policies/leak-recovery/index.js';
import { assemble, chunk, ctxWith, request, runHook, splitAt, weatherTool } from './helpers.js';

const LEAK = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
const ctx = ctxWith();

function completionOf(contents: string[]): ChatCompletion {
  return {
    id: 'chatcmpl-n',
    object: 'chat.completion',
    created: 1,
    model: 'm',
    choices: contents.map((content, index) => ({
      index,
      message: { role: 'assistant', content },
      finish_reason: 'stop',
    })),
  };
}

function nonStream(req: ChatCompletionRequest, contents: string[]) {
  const d = leakRecovery.onResponse!(completionOf(contents), ctx, undefined, req, req);
  if (d.action !== 'continue') throw new Error('retry');
  return d;
}

/** Interleaves the choices' pieces chunk by chunk (choice 0 piece, choice 1 piece, ...). */
function interleaved(parts: string[][]): ChatCompletionChunk[] {
  const out: ChatCompletionChunk[] = parts.map((_, i) => chunk({ role: 'assistant', content: '' }, null, i));
  const longest = Math.max(...parts.map((p) => p.length));
  for (let k = 0; k < longest; k++) {
    parts.forEach((p, i) => {
      if (p[k] !== undefined && p[k] !== '') out.push(chunk({ content: p[k] }, null, i));
    });
  }
  for (let i = 0; i < parts.length; i++) out.push(chunk({}, 'stop', i));
  return out;
}

/** Choice `index` as a client assembles it, its calls without their ids. */
function assembled(out: ChatCompletionChunk[], index: number) {
  const { content, finish, calls } = assemble(out, index);
  return { content, finish, calls: calls.map(({ name, args }) => ({ name, args })) };
}

describe('leak-recovery: n > 1', () => {
  const req = request({ tools: [weatherTool] });

  it('non-streamed: a leak in choice 1 is recovered like one in choice 0', () => {
    const d = nonStream(req, ['It is sunny.', LEAK]);
    expect(d.response.choices[0]!.message.content).toBe('It is sunny.');
    expect(d.response.choices[1]!.message.tool_calls?.map((c) => c.function.name)).toEqual(['get_weather']);
    expect(d.response.choices[1]!.finish_reason).toBe('tool_calls');
  });

  // Regression (issue 9): only choice 0 went through the engine; choice 1's call reached the
  // client as <tool_call> text.
  it('streamed: a leak in choice 1 becomes a call on choice 1', () => {
    const hook = leakRecovery.createStreamHook!(ctx, undefined, req, req);
    const { out } = runHook(hook, interleaved([['It is ', 'sunny.'], splitAt(LEAK, [5, 20, 40])]));
    const c1 = assembled(out, 1);
    expect(c1.content).not.toContain('<tool_call>');
    expect(c1.calls).toEqual([{ name: 'get_weather', args: '{"city":"Paris"}' }]);
    expect(c1.finish).toBe('tool_calls');
    expect(assembled(out, 0)).toEqual({ content: 'It is sunny.', finish: 'stop', calls: [] });
  });

  it('property: every choice streamed == non-streamed, any split, interleaved', () => {
    const text = fc.constantFrom(
      'plain prose',
      LEAK,
      `Sure. ${LEAK}`,
      `${LEAK}\n${LEAK}`,
      '<tool_call>broken',
    );
    fc.assert(
      fc.property(
        fc.array(fc.record({ text, cuts: fc.array(fc.nat(90), { maxLength: 5 }) }), {
          minLength: 2,
          maxLength: 3,
        }),
        (choices) => {
          const ns = nonStream(
            req,
            choices.map((c) => c.text),
          );
          const hook = leakRecovery.createStreamHook!(ctx, undefined, req, req);
          const { out, end } = runHook(hook, interleaved(choices.map((c) => splitAt(c.text, c.cuts))));
          choices.forEach((_, i) => {
            const want = ns.response.choices[i]!;
            const got = assembled(out, i);
            expect(got.content).toBe(want.message.content ?? '');
            expect(got.calls).toEqual(
              (want.message.tool_calls ?? []).map((c) => ({
                name: c.function.name,
                args: c.function.arguments,
              })),
            );
            expect(got.finish).toBe(want.finish_reason);
          });
          const outcomes = (effects: typeof end.effects) =>
            effects.map((e) => (e.detail as { outcome: string }).outcome).sort();
          expect(outcomes(end.effects)).toEqual(outcomes(ns.effects));
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe('leak-recovery: client tool_choice "none"', () => {
  const req = request({ tools: [weatherTool], tool_choice: 'none' });

  // Regression (issue 9): the leak became tool_calls + finish "tool_calls" although the client
  // said none (the Vercel AI SDK throws ToolChoiceViolationError on that).
  it('non-streamed: leaked text stays content byte for byte, counted as suppressed', () => {
    const text = `Let me check. ${LEAK}`;
    const res = completionOf([text]);
    const d = leakRecovery.onResponse!(res, ctx, undefined, req, req);
    if (d.action !== 'continue') throw new Error('retry');
    expect(d.response).toBe(res);
    expect(d.response.choices[0]!.message).toEqual({ role: 'assistant', content: text });
    expect(d.response.choices[0]!.finish_reason).toBe('stop');
    expect(d.effects).toEqual([
      {
        policy: 'leak-recovery',
        kind: 'leak',
        detail: expect.objectContaining({ format: 'hermes', outcome: 'suppressed' }),
      },
    ]);
  });

  it('streamed: every chunk passes through untouched, counted as suppressed', () => {
    const chunks = interleaved([splitAt(LEAK, [3, 11, 50]), ['no leak here']]);
    const hook = leakRecovery.createStreamHook!(ctx, undefined, req, req);
    const { out, end } = runHook(hook, chunks);
    expect(out).toEqual(chunks);
    expect(end.effects.map((e) => (e.detail as { outcome: string }).outcome)).toEqual(['suppressed']);
  });

  it('a leak the engine rejects anyway keeps its outcome', () => {
    const text = '<tool_call>\n{"name": "get_weather", "arguments": "x"}\n</tool_call>';
    const d = nonStream(req, [text]);
    expect(d.response.choices[0]!.message.content).toBe(text);
    expect(d.effects.map((e) => (e.detail as { outcome: string }).outcome)).toEqual(['rejected']);
  });
});
