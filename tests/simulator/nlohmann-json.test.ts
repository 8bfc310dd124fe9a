import { describe, expect, it } from 'vitest';
import { parseLikeNlohmann } from '../../simulator/nlohmann-json.js';

describe('parseLikeNlohmann', () => {
  it('parses valid JSON', () => {
    expect(parseLikeNlohmann('{"a":[1,true,null]}')).toEqual({ ok: true, value: { a: [1, true, null] } });
  });

  it.each([
    [
      '',
      '[json.exception.parse_error.101] parse error at line 1, column 1: attempting to parse an empty input; check that your input string or stream contains the expected JSON',
    ],
    [
      '{"model": "tiny", "messages": [{"role": "user", "content": "hi"}',
      "[json.exception.parse_error.101] parse error at line 1, column 65: syntax error while parsing array - unexpected end of input; expected ']'",
    ],
    [
      '{"stream": true, "messages": [',
      "[json.exception.parse_error.101] parse error at line 1, column 31: syntax error while parsing value - unexpected end of input; expected '[', '{', or a literal",
    ],
    [
      '{not json',
      "[json.exception.parse_error.101] parse error at line 1, column 3: syntax error while parsing object key - invalid literal; last read: '{no'; expected string literal",
    ],
  ])('reproduces the recorded llama-server message for %j', (input, message) => {
    expect(parseLikeNlohmann(input)).toEqual({ ok: false, message });
  });

  it('reports object separators, trailing data and lines', () => {
    expect(parseLikeNlohmann('{"a" 1}')).toMatchObject({
      ok: false,
      message: expect.stringContaining("object separator - unexpected number literal; expected ':'"),
    });
    expect(parseLikeNlohmann('{"a":1}]')).toMatchObject({
      ok: false,
      message: expect.stringContaining("unexpected ']'; expected end of input"),
    });
    expect(parseLikeNlohmann('{\n"a":}')).toMatchObject({
      ok: false,
      message: expect.stringContaining('line 2, column 5'),
    });
  });
});
