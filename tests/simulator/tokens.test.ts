import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type GeneratedCall, type Generation, generate } from '../../simulator/generate.js';
import { llamaServer } from '../../simulator/llama-server.js';
import type { ResponseMeta } from '../../simulator/personality.js';
import { hashString, randomAlnum, randomHex, splitTokens } from '../../simulator/tokens.js';
import { vllm } from '../../simulator/vllm.js';
import { accumulate } from './helpers.js';

describe('splitTokens', () => {
  it('joins back to the input for any text, surrogate pairs included, in pieces of at most 5 code points', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), (text) => {
        const pieces = splitTokens(text);
        expect(pieces.join('')).toBe(text);
        for (const p of pieces) expect([...p].length).toBeLessThanOrEqual(5);
        expect(pieces.every((p) => p.length > 0)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('splits words with their leading space', () => {
    expect(splitTokens('The weather, today')).toEqual(['The', ' weat', 'her', ',', ' toda', 'y']);
  });
});

describe('ids and hashing', () => {
  it('makes ids of the requested length and alphabet', () => {
    expect(randomAlnum(32)).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(randomHex(32)).toMatch(/^[0-9a-f]{32}$/);
    expect(hashString('a')).toBe(hashString('a'));
    expect(hashString('a')).not.toBe(hashString('b'));
  });
});

const meta = (calls: GeneratedCall[]): ResponseMeta => ({
  id: 'chatcmpl-x',
  created: 0,
  model: 'm',
  promptTokens: 1,
  cachedTokens: 0,
  promptTokensDetails: false,
  completionTokens: 1,
  includeUsage: true,
  toolCallIds: calls.map((_, i) => `id${i}`),
  reasoningField: 'reasoning_content',
  logprobs: null,
});

describe('personality chunks fold back into the non-stream message (property)', () => {
  const callArb = fc.record({ name: fc.constantFrom('get_weather', 'final_answer'), arguments: fc.string() });
  const genArb = fc.record({
    reasoning: fc.option(fc.string({ minLength: 1 }), { nil: null }),
    content: fc.string({ unit: 'grapheme' }),
    calls: fc.array(callArb, { maxLength: 3 }),
    finish: fc.constantFrom('stop' as const, 'length' as const, 'tool_calls' as const),
  });

  for (const p of [vllm, llamaServer]) {
    it(p.name, () => {
      fc.assert(
        fc.property(genArb, (g) => {
          const gen: Generation = { ...g, midStreamError: null, behaviour: {} };
          const m = meta(gen.calls);
          const whole = p.completion(gen, m) as {
            choices: Array<{ message: Record<string, unknown>; finish_reason: string }>;
          };
          const acc = accumulate(p.chunks(gen, m));
          const msg = whole.choices[0]?.message ?? {};
          expect(acc.content ?? '').toBe((msg.content as string | null) ?? '');
          expect(acc.reasoning ?? null).toBe((msg.reasoning_content as string | null | undefined) ?? null);
          const calls = (
            (msg.tool_calls as Array<{ id: string; function: { name: string; arguments: string } }>) ?? []
          ).map((c) => ({
            id: c.id,
            name: c.function.name,
            arguments: c.function.arguments,
          }));
          expect(acc.calls).toEqual(calls);
          expect(acc.finish).toBe(whole.choices[0]?.finish_reason);
        }),
        { numRuns: 200 },
      );
    });
  }

  it('generate() never produces more than max_tokens pieces and says "length" exactly when it cut', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.integer({ min: 1, max: 20 }), (text, max) => {
        const out = generate(
          { say: text },
          { personality: 'vllm', tools: [], toolChoice: undefined, ignoreRequired: false, maxTokens: max },
        );
        if (out.kind !== 'ok') throw new Error('unexpected error');
        const pieces = splitTokens(text).length;
        expect(splitTokens(out.generation.content).length).toBeLessThanOrEqual(max);
        expect(out.generation.finish).toBe(pieces > max ? 'length' : 'stop');
      }),
      { numRuns: 200 },
    );
  });
});
