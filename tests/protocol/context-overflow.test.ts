/**
 * Context-overflow errors read from vLLM's and llama-server's bodies, and written the way each
 * agent recovers from them: the patterns below are the ones Claude Code 2.1.332 matches (see
 * protocol/context-overflow.ts).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { judge, measureScaling } from '../support/cost-scaling.js';
import {
  anthropicOverflowMessage,
  openAIOverflowMessage,
  parseContextOverflow,
} from '../../protocol/context-overflow.js';

const bodies = JSON.parse(
  readFileSync(new URL('../fixtures/agents/context-overflow-bodies.json', import.meta.url), 'utf8'),
) as Record<string, unknown>;

const CLAUDE_CODE_COMPACT = /prompt is too long[^0-9]*(\d+)\s*tokens?\s*>\s*(\d+)/i;
const CLAUDE_CODE_EXACT = /^prompt is too long: \d+ tokens > \d+ maximum$/;
const CLAUDE_CODE_MAX_TOKENS = /input length and `max_tokens` exceed context limit: (\d+) \+ (\d+) > (\d+)/;

describe('parseContextOverflow', () => {
  it('reads every wording', () => {
    expect(parseContextOverflow(bodies.vllm_split)).toEqual({ max: 32768, prompt: 8512, completion: 32000 });
    expect(parseContextOverflow(bodies.vllm_input)).toEqual({ max: 32768, prompt: 40001 });
    expect(parseContextOverflow(bodies.vllm_max_tokens)).toEqual({
      max: 32768,
      prompt: 8512,
      completion: 32000,
    });
    expect(parseContextOverflow(bodies.llama_fields)).toEqual({ max: 8192, prompt: 9000 });
    expect(parseContextOverflow(bodies.llama_words)).toEqual({ max: 8192, prompt: 9000 });
  });

  it("reads vLLM's later wordings, a count that is only a bound marked so", () => {
    expect(parseContextOverflow(bodies.vllm_contains)).toEqual({ max: 8192, prompt: 10000, completion: 64 });
    expect(parseContextOverflow(bodies.vllm_contains_at_least)).toEqual({
      max: 8192,
      prompt: 8129,
      completion: 64,
      bound: true,
    });
    // 8129 is one past the maximum input length of 8128: where vLLM stopped tokenizing.
    expect(parseContextOverflow(bodies.vllm_passed_tokens)).toEqual({
      max: 8192,
      prompt: 8129,
      completion: 64,
      bound: true,
    });
    // Characters are no count of tokens.
    expect(parseContextOverflow(bodies.vllm_passed_chars)).toEqual({ max: 8192, completion: 64 });
    expect(parseContextOverflow(bodies.vllm_decoder)).toEqual({ max: 8192, prompt: 8825 });
  });

  it('other errors are not overflows', () => {
    expect(
      parseContextOverflow({ error: { message: 'Invalid tool_choice', type: 'BadRequestError' } }),
    ).toBeUndefined();
    expect(parseContextOverflow('plain text')).toBeUndefined();
    expect(parseContextOverflow(null)).toBeUndefined();
    expect(
      parseContextOverflow({ error: { type: 'exceed_context_size_error', message: 'no numbers' } }),
    ).toBeUndefined();
  });
});

describe('parseContextOverflow budget', () => {
  it("an upstream's 4x longer error text costs about 4x (near misses of every wording)", () => {
    // Each piece almost matches a wording: digits, parentheses and the words, never the whole.
    const miss =
      "context length is only 1 tokens (length 1) is longer than the maximum model passed 1 input tokenz contains at least 1, requested 1 output tokenz maximum input length of 1 tokenz max_tokens' is too large ";
    const make = (n: number) => ({ error: { message: miss.repeat(n), type: 'BadRequestError' } });
    const measure = () => measureScaling(make, parseContextOverflow, { from: 16, max: 64_000 });
    let s = measure();
    if (!judge(s, 5).time || !judge(s, 5).memory) s = measure();
    expect(judge(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});

describe('what each agent reads', () => {
  it('Claude Code: a prompt that does not fit is "prompt is too long" with both numbers', () => {
    for (const k of ['vllm_input', 'llama_fields', 'llama_words']) {
      const text = anthropicOverflowMessage(parseContextOverflow(bodies[k])!);
      expect(text, k).toMatch(CLAUDE_CODE_EXACT);
      const [, actual, limit] = CLAUDE_CODE_COMPACT.exec(text)!;
      expect(Number(actual)).toBeGreaterThan(Number(limit));
    }
  });

  it('Claude Code: prompt + max_tokens over the window is the max_tokens message it retries on', () => {
    for (const k of ['vllm_split', 'vllm_max_tokens']) {
      const text = anthropicOverflowMessage(parseContextOverflow(bodies[k])!);
      expect(CLAUDE_CODE_MAX_TOKENS.exec(text)?.slice(1)).toEqual(['8512', '32000', '32768']);
    }
  });

  it("OpenAI's wording for chat and Responses", () => {
    expect(openAIOverflowMessage({ max: 8192, prompt: 9000 })).toMatch(
      /maximum context length is 8192 tokens/,
    );
    expect(openAIOverflowMessage({ max: 100, prompt: 60, completion: 50 })).toContain(
      '110 tokens (60 in the messages, 50 in the completion)',
    );
  });
});
