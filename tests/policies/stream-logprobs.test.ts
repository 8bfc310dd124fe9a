import { describe, expect, it } from 'vitest';
import { refusesStreamLogprobs, streamLogprobsPolicy } from '../../policies/stream-logprobs/index.js';
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';
import { ctxWith } from './helpers.js';

const tool = { type: 'function' as const, function: { name: 'f', parameters: { type: 'object' } } };
const req = (over: Partial<ChatCompletionRequest> = {}, content = 'hi'): ChatCompletionRequest => ({
  model: 'm',
  messages: [{ role: 'user', content }],
  tools: [tool],
  stream: true,
  logprobs: true,
  top_logprobs: 2,
  ...over,
});
const refused = (fact = 'stream-logprobs') => ({
  ...ctxWith({}, {}),
  refused: { now: new Set<string>(), remembered: new Set([fact]) },
});

/** llama-server's 400 (/work/shared/wire/llama-server/random-hermes__bad_logprobs_tools_stream.json). */
const recorded = {
  error: {
    code: 400,
    message: 'logprobs is not supported with tools + stream',
    type: 'invalid_request_error',
  },
};

describe('stream-logprobs', () => {
  it('sends a streamed request with tools without logprobs once the upstream refused them; the prompt is the same object', () => {
    const r = req();
    const plain = streamLogprobsPolicy.onRequest!(r, ctxWith({}, {}), r);
    expect(plain.action === 'continue' && plain.request).toBe(r);
    const d = streamLogprobsPolicy.onRequest!(r, refused() as never, r);
    if (d.action !== 'continue') throw new Error('continue expected');
    expect(d.request).toEqual({ model: 'm', messages: r.messages, tools: r.tools, stream: true });
    expect(d.request.messages).toBe(r.messages);
    expect(d.effects).toEqual([{ policy: 'stream-logprobs', kind: 'logprobs-dropped', count: 1 }]);
    // not streamed, no tools, no logprobs asked (top_logprobs alone is the client's error), another fact: untouched
    for (const [q, ctx] of [
      [req({ stream: false }), refused()],
      [req({ tools: [] }), refused()],
      [req({ logprobs: false }), refused()],
      [req(), refused('single-choice')],
    ] as const) {
      const out = streamLogprobsPolicy.onRequest!(q, ctx as never, q);
      expect(out.action === 'continue' && out.request).toBe(q);
    }
  });

  it("reads llama-server's refusal (400, older builds 500), only of a request that asked for the three", () => {
    const r = streamLogprobsPolicy.refusal!;
    const ctx = ctxWith({}, {});
    expect(r.refused(400, recorded, req(), ctx)).toBe(true);
    expect(r.refused(500, recorded, req(), ctx)).toBe(true);
    expect(r.refused(400, recorded, req({ stream: false }), ctx)).toBe(false);
    expect(r.refused(400, recorded, req({ logprobs: false }), ctx)).toBe(false);
    expect(r.refused(502, recorded, req(), ctx)).toBe(false);
    const own = { error: { code: 400, message: 'top_logprobs requires logprobs to be set to true' } };
    expect(r.refused(400, own, req(), ctx)).toBe(false);
  });

  it('costs in proportion to the request and the error, x1 vs x4', () => {
    const make = (size: number) => ({
      request: req({}, 'x'.repeat(size)),
      body: { ...recorded, detail: 'y'.repeat(size) },
    });
    const run = ({ request, body }: ReturnType<typeof make>) => [
      streamLogprobsPolicy.onRequest!(request, refused() as never, request),
      refusesStreamLogprobs(400, body, request),
    ];
    const s = measureScaling(make, run, { from: 4096, max: 1 << 22 });
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});
