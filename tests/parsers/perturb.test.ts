/**
 * The perturbation generator's cases (tests/parsers/perturb-cases.ts: each published format x a
 * small model's slip x four schemas), read whole and streamed one character at a time and in
 * seeded random cuts (bench/perturb.ts also cuts each in two at every position). What must hold
 * for every one: no call with a wrong name or arguments, no call where the truth is text, text
 * left unread kept byte for byte, streamed equal to whole. The misses are counted by
 * bench/perturb.ts; a floor keeps the calls read from going down. Then each fix's own cases.
 */
import { describe, expect, it } from 'vitest';
import { options, toolsOf, whole } from './engine-helpers.js';
import { classify, generateCases } from './perturb-cases.js';

const cases = generateCases();

describe('generated near misses: format x perturbation x schema', () => {
  it('no wrong call, no lost byte, streamed equal to whole', () => {
    const bad = [];
    let correct = 0;
    for (const c of cases) {
      const k = classify(c);
      if (k.verdict === 'correct') correct++;
      if (k.verdict === 'wrong' || k.verdict === 'lost-bytes' || k.parity !== null)
        bad.push(`${k.verdict}${k.parity ? ` (streamed ${k.parity})` : ''} ${c.id}: ${k.got}`);
    }
    expect(bad).toEqual([]);
    expect(correct).toBeGreaterThanOrEqual(CORRECT_FLOOR);
  }, 60_000);
});

/** Calls read right today (bench/perturb.ts): raise it when a fix reads more. */
const CORRECT_FLOOR = 676;

describe('a scalar written as a string in JSON arguments', () => {
  const search = {
    name: 'search',
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string' },
        limit: { type: 'integer' },
        ratio: { type: 'number' },
        exact: { type: 'boolean' },
        either: { type: ['integer', 'string'] },
      },
      required: ['query'],
    },
  };
  const tools = toolsOf(search);
  const read = (args: string) =>
    whole(`<tool_call>{"name": "search", "arguments": ${args}}</tool_call>`, options(tools));

  it('is typed by the schema when the parameter allows no string (repair string-value)', () => {
    const r = read('{"query": "q", "limit": "5", "ratio": "0.5", "exact": "true"}');
    expect(r.calls.map((c) => [JSON.parse(c.arguments), c.repairs])).toEqual([
      [{ query: 'q', limit: 5, ratio: 0.5, exact: true }, ['string-value']],
    ]);
  });

  it('stays the string it was where the schema allows one, or where it spells no such value', () => {
    expect(JSON.parse(read('{"query": "5", "either": "5"}').calls[0]?.arguments ?? '')).toEqual({
      query: '5',
      either: '5',
    });
    expect(JSON.parse(read('{"query": "q", "limit": "five"}').calls[0]?.arguments ?? '')).toEqual({
      query: 'q',
      limit: 'five',
    });
  });
});
