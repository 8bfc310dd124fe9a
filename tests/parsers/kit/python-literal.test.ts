import { describe, expect, it } from 'vitest';
import { parsePythonCallList, parsePythonLiteral } from '../../../parsers/kit/python-literal.js';

describe('parsePythonCallList', () => {
  it('reads keyword calls with nested literals', () => {
    expect(parsePythonCallList(" [f(a=1, b='x', c=[1, (2, 3)], d={'k': None}, e=True), g()] ")).toEqual([
      { name: 'f', arguments: { a: 1, b: 'x', c: [1, [2, 3]], d: { k: null }, e: true } },
      { name: 'g', arguments: {} },
    ]);
  });
  it('handles escapes, unicode, negative and float numbers', () => {
    expect(parsePythonCallList('[f(s="a\\"b\\n\\u00e9", n=-2.5e1)]')).toEqual([
      { name: 'f', arguments: { s: 'a"b\né', n: -25 } },
    ]);
  });
  it('refuses positional arguments, trailing text, empty lists', () => {
    expect(parsePythonCallList('[f(1)]')).toBeNull();
    expect(parsePythonCallList('[f()] and more')).toBeNull();
    expect(parsePythonCallList('[]')).toBeNull();
    expect(parsePythonCallList('[1, 2]')).toBeNull();
  });
  it('does not blow the stack on hostile nesting', () => {
    expect(parsePythonCallList(`[f(a=${'['.repeat(100000)})]`)).toBeNull();
  });
});

describe('parsePythonLiteral', () => {
  it('reads one literal filling the text', () => {
    expect(parsePythonLiteral("{'a': [True, False, None]}")).toEqual({
      ok: true,
      value: { a: [true, false, null] },
    });
    expect(parsePythonLiteral('1 2')).toEqual({ ok: false });
  });
});
