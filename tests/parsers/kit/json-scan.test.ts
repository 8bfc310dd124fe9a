import { describe, expect, it } from 'vitest';
import { expectLiteral, readName, scanJsonValue, skipWs } from '../../../parsers/kit/json-scan.js';

describe('scanJsonValue', () => {
  it('finds the end of nested objects, skipping brackets inside strings and escapes', () => {
    const t = 'x{"a": "}\\"]", "b": [1, {"c": 2}]} tail';
    expect(scanJsonValue(t, 1)).toEqual({ end: t.indexOf(' tail'), depth: 0, inString: false });
  });
  it('reports incomplete values with depth and string state', () => {
    expect(scanJsonValue('{"a": [1, 2', 0)).toEqual({ end: -1, depth: 2, inString: false });
    expect(scanJsonValue('{"a": "x', 0)).toEqual({ end: -1, depth: 1, inString: true });
  });
  it('returns null when the text does not open a value', () => {
    expect(scanJsonValue('abc', 0)).toBeNull();
  });
  it('stops at a literal outside strings, not inside', () => {
    const t = '{"a": "</tool_call>" </tool_call>';
    const r = scanJsonValue(t, 0, { stopAt: ['</tool_call>'] });
    expect(r?.stoppedAt).toBe(t.lastIndexOf('</tool_call>'));
  });
  it('python mode treats single quotes and parentheses as strings / brackets', () => {
    const t = "[f(a='])'), g()] rest";
    expect(scanJsonValue(t, 0, { singleQuotes: true })?.end).toBe(t.indexOf(' rest'));
  });
});

describe('small scanners', () => {
  it('skipWs, readName', () => {
    expect(skipWs(' \n\t x', 0)).toBe(4);
    expect(readName('get_weather-2.v1(', 0)).toBe('get_weather-2.v1');
    expect(readName('(x', 0)).toBe('');
  });
  it('expectLiteral answers need-more only on a partial prefix at the end', () => {
    expect(expectLiteral('ab</tool', 2, '</tool_call>', false)).toBe('need-more');
    expect(expectLiteral('ab</tool', 2, '</tool_call>', true)).toBe('no');
    expect(expectLiteral('ab</x', 2, '</tool_call>', false)).toBe('no');
    expect(expectLiteral('ab</tool_call>', 2, '</tool_call>', false)).toBe('yes');
  });
});
