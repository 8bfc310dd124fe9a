/**
 * What the perturbation generator (tests/parsers/perturb-cases.ts, bench/perturb.ts) found read
 * wrong or missed, each fix's own cases.
 */
import { describe, expect, it } from 'vitest';
import { options, toolsOf, whole } from './engine-helpers.js';

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
