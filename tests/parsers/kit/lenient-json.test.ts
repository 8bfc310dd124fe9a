import { describe, expect, it } from 'vitest';
import { decodeJsonLenient, normalizeArguments } from '../../../parsers/kit/lenient-json.js';

describe('decodeJsonLenient', () => {
  it('parses valid JSON with no repairs', () => {
    expect(decodeJsonLenient(' {"a": [1, true, null]} ')).toEqual({
      value: { a: [1, true, null] },
      repairs: [],
    });
  });
  it('keeps a number too large for a double as the text written, never null', () => {
    const d = decodeJsonLenient('{"p": 1e999, "q": [-1e999, 2.5], "s": "1e999", "t": {"u": 1E400}}');
    expect(d?.value).toEqual({ p: '1e999', q: ['-1e999', 2.5], s: '1e999', t: { u: '1E400' } });
    expect(JSON.stringify(d?.value)).not.toContain('null');
    // after a repair too
    expect(decodeJsonLenient('{"p": 1e999,}')?.value).toEqual({ p: '1e999' });
  });
  it('names each repair it makes', () => {
    expect(decodeJsonLenient('{"a": 1,}')?.repairs).toEqual(['trailing-comma']);
    expect(decodeJsonLenient("{'a': True, 'b': None}")).toEqual({
      value: { a: true, b: null },
      repairs: ['single-quotes', 'python-literals'],
    });
  });
  it('quotes a key written without quotes, a JavaScript object literal (unquoted-keys)', () => {
    expect(decodeJsonLenient('{path: "a", n : 2, nested: {b_1: [1, {c: true}]}}')).toEqual({
      value: { path: 'a', n: 2, nested: { b_1: [1, { c: true }] } },
      repairs: ['unquoted-keys'],
    });
    expect(decodeJsonLenient('{"k": "v",\n  note: "a: b"}')?.value).toEqual({ k: 'v', note: 'a: b' });
  });
  it.each([
    ['a bare value', '{path: a}'],
    ['a word in a list', '[x: 1]'],
    ['a word before no colon', '{path "a"}'],
    ['prose in braces', '{see the path: "a"}'],
    ['a key with a scheme', '{http://x: 1}'],
  ])('refuses a bare word that is no key: %s', (_, text) => {
    expect(decodeJsonLenient(text)).toBeNull();
  });
  it('drops one or two closing braces past the end of a complete object (extra-brace)', () => {
    expect(decodeJsonLenient('{"a": {"b": "}"}}}')).toEqual({
      value: { a: { b: '}' } },
      repairs: ['extra-brace'],
    });
    expect(decodeJsonLenient('{"a": 1,}}}')?.repairs).toEqual(['trailing-comma', 'extra-brace']);
    expect(decodeJsonLenient('{"a": 1}}}}')).toBeNull();
    expect(decodeJsonLenient('[1]}')).toBeNull();
    expect(decodeJsonLenient('{"a": 1}} x')).toBeNull();
    expect(decodeJsonLenient('{"a": 1}]')).toBeNull();
  });
  it('refuses an escape JSON lacks (raw backslashes), where jsonrepair would drop them', () => {
    // a Windows path written with single backslashes: repaired, it read `C:Usersmedocs`
    expect(decodeJsonLenient("{'path': 'C:\\Users\\me\\docs',}")).toBeNull();
    expect(decodeJsonLenient('{"command": "echo \\$HOME",}')).toBeNull();
    // JSON's own escapes and a single-quoted string's quote still repair
    expect(decodeJsonLenient("{'a': 'it\\'s \\n \\u00e9 \\\\ \\/',}")?.value).toEqual({
      a: "it's \n é \\ /",
    });
  });
  it('escapes a line break or tab written raw inside a string (raw-control-characters)', () => {
    expect(decodeJsonLenient('{"content": "line one\nline\ttwo", "n": 1}')).toEqual({
      value: { content: 'line one\nline\ttwo', n: 1 },
      repairs: ['raw-control-characters'],
    });
    // outside a string a line break is only whitespace; a string the end left open is no repair
    expect(decodeJsonLenient('{\n"a": 1\n}')?.repairs).toEqual([]);
    expect(decodeJsonLenient('{"a": "line one\nline', { allowMissingClose: true })).toBeNull();
  });
  it('inserts the comma between two objects of a list glued together (missing-comma)', () => {
    expect(decodeJsonLenient('[{"a": 1}{"b": [2]}\n{"c": 3}]')).toEqual({
      value: [{ a: 1 }, { b: [2] }, { c: 3 }],
      repairs: ['missing-comma'],
    });
    // two objects glued outside a list, or inside an object, are no value we repair
    expect(decodeJsonLenient('{"a": 1}{"b": 2}')).toBeNull();
    expect(decodeJsonLenient('{"a": {"b": 1}{"c": 2}}')).toBeNull();
  });
  it('closes a missing final brace only when allowed', () => {
    expect(decodeJsonLenient('{"a": {"b": 1}')).toBeNull();
    expect(decodeJsonLenient('{"a": {"b": 1}', { allowMissingClose: true })).toEqual({
      value: { a: { b: 1 } },
      repairs: ['missing-brace'],
    });
  });
  it('refuses slips it does not understand', () => {
    expect(decodeJsonLenient('{a: b}')).toBeNull();
    expect(decodeJsonLenient('{"a": "unterminated', { allowMissingClose: true })).toBeNull();
    expect(decodeJsonLenient('hello world')).toBeNull();
    expect(decodeJsonLenient('{"a": {"b": {"c": 1', { allowMissingClose: true })).toBeNull();
  });
  it('keeps exponents as numbers', () => {
    expect(decodeJsonLenient('{"a": 1e3,}')?.value).toEqual({ a: 1000 });
  });
});

describe('normalizeArguments', () => {
  it('accepts objects, decodes JSON strings, refuses the rest', () => {
    expect(normalizeArguments({ a: 1 })).toEqual({ value: { a: 1 }, repairs: [] });
    expect(normalizeArguments('{"a": 1}')).toEqual({ value: { a: 1 }, repairs: ['string-arguments'] });
    expect(normalizeArguments(undefined)).toEqual({ value: {}, repairs: ['missing-arguments'] });
    expect(normalizeArguments([1])).toBeNull();
    expect(normalizeArguments('[1]')).toBeNull();
    expect(normalizeArguments(3)).toBeNull();
    expect(normalizeArguments(null)).toBeNull();
  });
});
