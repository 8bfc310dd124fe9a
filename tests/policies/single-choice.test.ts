import { describe, expect, it } from 'vitest';
import { refusesChoices, singleChoicePolicy } from '../../policies/single-choice/index.js';
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';
import { ctxWith } from './helpers.js';

const req = (n?: number, content = 'hi'): ChatCompletionRequest => ({
  model: 'm',
  messages: [{ role: 'user', content }],
  ...(n === undefined ? {} : { n }),
});
const refused = (fact = 'single-choice') => ({
  ...ctxWith({}, {}),
  refused: { now: new Set([fact]), remembered: new Set<string>() },
});

/** llama-server b9928's 400 (/work/shared/wire/llama-server/random-hermes__chat_plain_n2.json). */
const b9928 = {
  error: {
    code: 400,
    message: "Field 'n': Value must be between 1 <= value <= 1, but got 2",
    type: 'invalid_request_error',
  },
};

describe('single-choice', () => {
  it('sends `n` > 1 without it once the upstream refused several choices; the prompt is the same object', () => {
    const r = req(3);
    const plain = singleChoicePolicy.onRequest!(r, ctxWith({}, {}), r);
    expect(plain.action === 'continue' && plain.request).toBe(r);
    const d = singleChoicePolicy.onRequest!(r, refused() as never, r);
    if (d.action !== 'continue') throw new Error('continue expected');
    expect(d.request).toEqual({ model: 'm', messages: r.messages });
    expect(d.request.messages).toBe(r.messages);
    expect(d.effects).toEqual([{ policy: 'single-choice', kind: 'one-request-per-choice', count: 3 }]);
    // one choice asked, or another fact refused: untouched
    for (const [q, ctx] of [
      [req(1), refused()],
      [req(), refused()],
      [req(2), refused('single-tool-calls')],
    ] as const) {
      const out = singleChoicePolicy.onRequest!(q, ctx as never, q);
      expect(out.action === 'continue' && out.request).toBe(q);
    }
  });

  it("reads llama-server's refusals of n, old and new, and only of a request that asked several", () => {
    const r = singleChoicePolicy.refusal!;
    const ctx = ctxWith({}, {});
    expect(r.refused(400, b9928, req(2), ctx)).toBe(true);
    const old = {
      error: { code: 400, message: 'Only one completion choice is allowed', type: 'invalid_request_error' },
    };
    expect(r.refused(400, old, req(4), ctx)).toBe(true);
    expect(r.refused(400, b9928, req(1), ctx)).toBe(false);
    expect(r.refused(500, b9928, req(2), ctx)).toBe(false);
    expect(r.refused(400, { error: { message: 'the prompt is too long' } }, req(2), ctx)).toBe(false);
  });

  it('costs in proportion to the request and the error, x1 vs x4', () => {
    const make = (size: number) => ({
      request: req(3, 'x'.repeat(size)),
      body: { ...b9928, detail: 'y'.repeat(size) },
    });
    const run = ({ request, body }: ReturnType<typeof make>) => [
      singleChoicePolicy.onRequest!(request, refused() as never, request),
      refusesChoices(400, body, request),
    ];
    const s = measureScaling(make, run, { from: 4096, max: 1 << 22 });
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});
