import { describe, expect, it } from 'vitest';
import { outputBudget, outputBudgetPolicy, refusedBudget } from '../../policies/output-budget/index.js';
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';
import { ctxWith } from './helpers.js';

const sent: ChatCompletionRequest = {
  model: 'm',
  max_tokens: 32000,
  messages: [{ role: 'user', content: 'hi' }],
};
const err = (message: string) => ({
  error: { message, type: 'BadRequestError', param: 'input_tokens', code: 400 },
});
// vLLM's wordings (protocol/context-overflow.ts names their sources; the first as a field report
// quotes it from a 32k model and a 32,000-token budget)
const CURRENT = err(
  "This model's maximum context length is 32768 tokens. However, you requested 32000 output tokens and your prompt contains at least 769 input tokens, for a total of at least 32769 tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=769)",
);
const TOO_LARGE = err(
  "'max_tokens' or 'max_completion_tokens' is too large: 32000. This model's maximum context length is 32768 tokens and your request has 1200 input tokens (32000 > 32768 - 1200).",
);
const CLASSIC = err(
  "This model's maximum context length is 32768 tokens. However, you requested 33200 tokens (1200 in the messages, 32000 in the completion). Please reduce the length of the messages or completion.",
);

describe('output-budget', () => {
  it("reads vLLM's refusal of a budget, in each release's words, only where the prompt alone is not known over", () => {
    for (const body of [CURRENT, TOO_LARGE, CLASSIC])
      expect(refusedBudget(400, body, sent)).toEqual(['output-budget:32000']);
    // the prompt alone over the window: the window's refusal, not the budget's
    expect(
      refusedBudget(
        400,
        err(
          "This model's maximum context length is 32768 tokens. However, you requested 34000 tokens (33000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.",
        ),
        { ...sent, max_tokens: 1000 },
      ),
    ).toEqual([]);
    // no budget asked ("0 output tokens"), no budget sent, no overflow, no refusal
    expect(
      refusedBudget(
        400,
        err(
          "This model's maximum context length is 32768 tokens. However, you requested 0 output tokens and your prompt contains at least 32769 input tokens, for a total of at least 32769 tokens.",
        ),
        sent,
      ),
    ).toEqual([]);
    expect(refusedBudget(400, CURRENT, { ...sent, max_tokens: undefined })).toEqual([]);
    expect(refusedBudget(400, err('Unknown part type: x'), sent)).toEqual([]);
    expect(refusedBudget(500, CURRENT, sent)).toEqual([]);
    // vLLM reads max_completion_tokens first
    expect(outputBudget({ ...sent, max_completion_tokens: 900 })).toBe('output-budget:900');
    expect(outputBudget({ ...sent, max_tokens: 0 })).toBeUndefined();
  });

  it('drops both budget fields once that budget was refused, and only then; the messages stay the same objects', () => {
    const both = { ...sent, max_completion_tokens: 32000 };
    const plain = outputBudgetPolicy.onRequest!(both, ctxWith(), both);
    expect(plain.action === 'continue' && plain.request).toBe(both);
    const refused = {
      now: new Set(['output-budget']),
      remembered: new Set<string>(),
      values: new Set(['output-budget:32000']),
    };
    const d = outputBudgetPolicy.onRequest!(both, ctxWith({ refused }), both);
    if (d.action !== 'continue') throw new Error('continue expected');
    expect(d.request).toEqual({ model: 'm', messages: sent.messages });
    expect(d.request.messages).toBe(sent.messages);
    expect(d.effects).toEqual([{ policy: 'output-budget', kind: 'output-budget-dropped', count: 1 }]);
    // another budget is judged on its own
    const other = { ...sent, max_tokens: 8000 };
    const o = outputBudgetPolicy.onRequest!(other, ctxWith({ refused }), other);
    expect(o.action === 'continue' && o.request).toBe(other);
  });

  it('costs the same whatever the request and the error body, x1 vs x4', () => {
    const make = (n: number) => ({
      request: {
        model: 'm',
        max_tokens: 32000,
        messages: Array.from({ length: n }, (_, i) => ({ role: 'user' as const, content: `m${i}` })),
      } as ChatCompletionRequest,
      // parsed as the server parses an upstream's body: flat strings, not the rope repeat() makes
      body: JSON.parse(
        JSON.stringify(
          err(
            `${"This model's maximum context length is 32768 tokens. ".repeat(n)}However, you requested 32000 output tokens`,
          ),
        ),
      ) as unknown,
    });
    const refused = {
      now: new Set<string>(),
      remembered: new Set<string>(),
      values: new Set(['output-budget:32000']),
    };
    const run = ({ request, body }: ReturnType<typeof make>) => [
      refusedBudget(400, body, request),
      outputBudgetPolicy.onRequest!(request, ctxWith({ refused }), request),
    ];
    const s = measureScaling(make, run, { from: 256, max: 1 << 15 });
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});
