/** Gemma 4 / FunctionGemma argument syntax: `{key:<|"|>text<|"|>,n:1,…}`. */
import { describe, expect, it } from 'vitest';
import { decodeDelimitedObject } from '../../parsers/formats/gemma4.js';

const Q = '<|"|>';
const decode = (s: string, quote = Q) => decodeDelimitedObject(s, 0, quote)?.value ?? null;

describe('decodeDelimitedObject', () => {
  it('reads delimited strings, bare scalars, lists and nested objects', () => {
    expect(
      decode(
        `{a:${Q}x, "y" }${Q},n:-1.5e2,t:true,f:false,z:null,l:[${Q}p${Q},2],o:{${Q}3${Q}:{k:${Q}v${Q}}}}`,
      ),
    ).toEqual({
      a: 'x, "y" }',
      n: -150,
      t: true,
      f: false,
      z: null,
      l: ['p', 2],
      o: { '3': { k: 'v' } },
    });
  });

  it('accepts whitespace and an empty object; a bare word stays a string', () => {
    expect(decode('{ }')).toEqual({});
    expect(decode('{ city : Paris , n : 3 }')).toEqual({ city: 'Paris', n: 3 });
  });

  it('works with <escape> as the delimiter and reports where the object ends', () => {
    expect(decodeDelimitedObject('xx{a:<escape>1<escape>}tail', 2, '<escape>')).toEqual({
      value: { a: '1' },
      end: 23,
    });
  });

  it('fails on cut-off or malformed input', () => {
    for (const bad of [`{a:${Q}open`, '{a:1', '{a:1,', '{:1}', '{a 1}', '[1]', `{a:[1,2}`, '{a:}']) {
      expect(decode(bad), bad).toBeNull();
    }
  });

  it('caps nesting instead of overflowing the stack', () => {
    expect(decode(`${'{a:'.repeat(100_000)}1${'}'.repeat(100_000)}`)).toBeNull();
  });
});
