import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeFinalAnswer } from '../../policies/force-tool-use/final-answer.js';
import { JsonStringFieldDecoder } from '../../policies/force-tool-use/json-string-stream.js';
import { splitAt } from './helpers.js';

function decodeChunks(parts: string[]): string {
  const d = new JsonStringFieldDecoder('answer');
  let out = '';
  for (const p of parts) {
    const piece = d.push(p);
    // No emitted piece may end in half a surrogate pair.
    if (piece.length > 0) {
      const last = piece.charCodeAt(piece.length - 1);
      expect(last >= 0xd800 && last <= 0xdbff && !d.state.valueComplete).toBe(false);
    }
    out += piece;
  }
  return out + d.finish();
}

/** Re-escapes a JSON text: every non-ASCII (and every third ASCII) string character as \uXXXX. */
function escapeAll(json: string): string {
  let out = '';
  let inString = false;
  for (let i = 0; i < json.length; i++) {
    const ch = json[i]!;
    if (!inString) {
      if (ch === '"') inString = true;
      out += ch;
      continue;
    }
    if (ch === '\\') {
      const len = json[i + 1] === 'u' ? 6 : 2;
      out += json.slice(i, i + len);
      i += len - 1;
      continue;
    }
    if (ch === '"') {
      inString = false;
      out += ch;
      continue;
    }
    const code = ch.charCodeAt(0);
    out += code > 0x7e || code % 3 === 0 ? `\\u${code.toString(16).padStart(4, '0')}` : ch;
  }
  return out;
}

const hostile = fc.oneof(
  fc.string({ unit: 'grapheme' }),
  fc.string({ unit: 'binary' }),
  fc
    .array(
      fc.constantFrom(
        '"',
        '\\',
        '\\u',
        'u00e9',
        '😀',
        '中文',
        '\n',
        '\t',
        '\u0000',
        '\u001f',
        '}',
        '{',
        ',',
        ':',
        ' ',
        'a',
      ),
    )
    .map((a) => a.join('')),
);

describe('JsonStringFieldDecoder', () => {
  it('decodes escapes, unicode escapes and surrogate pairs', () => {
    expect(decodeChunks(['{"answer": "a\\"b\\\\c\\/d\\n\\t\\u00e9\\ud83d\\ude00"}'])).toBe('a"b\\c/d\n\té😀');
  });

  it('finds the field after other keys of any shape, with escaped keys', () => {
    const json =
      '{ "x": {"answer": "no", "y": [1, "}", {"z": "\\""}]}, "n": -1.5e3, "t": true, "\\u0061nswer" :\n "yes" }';
    expect(decodeChunks([json])).toBe('yes');
    expect(decodeChunks(json.split(''))).toBe('yes');
  });

  it('holds a split \\uXXXX escape and a split surrogate pair', () => {
    const d = new JsonStringFieldDecoder('answer');
    expect(d.push('{"answer":"x\\ud83')).toBe('x');
    expect(d.push('d')).toBe('');
    expect(d.push('\\ude0')).toBe('');
    expect(d.push('0!')).toBe('😀!');
  });

  it('reports a cut-off answer', () => {
    const d = new JsonStringFieldDecoder('answer');
    expect(d.push('{"answer": "partial te')).toBe('partial te');
    expect(d.state).toMatchObject({ found: true, valueComplete: false, objectComplete: false });
  });

  it('property: any chunking of JSON.stringify output decodes to the original answer', () => {
    fc.assert(
      fc.property(
        hostile,
        fc.array(fc.nat(400), { maxLength: 12 }),
        fc.boolean(),
        fc.constantFrom('before', 'after', 'none'),
        (answer, cuts, forceEscapes, extra) => {
          const obj: Record<string, unknown> =
            extra === 'before'
              ? { note: 'x"}', answer }
              : extra === 'after'
                ? { answer, more: [1, { a: '}' }] }
                : { answer };
          let json = JSON.stringify(obj, null, extra === 'after' ? 2 : undefined);
          if (forceEscapes) json = escapeAll(json);
          expect(JSON.parse(json)).toEqual(obj);
          expect(decodeChunks(splitAt(json, cuts))).toBe(answer);
          if (extra === 'before') {
            // A string first key is taken as the answer live (final_answer rule): a second key
            // then makes the call invalid, the first key's text stays what was decoded.
            expect(decodeFinalAnswer(json)).toEqual({
              text: 'x"}',
              truncated: false,
              raw: false,
              invalid: true,
              field: 'note',
            });
          } else {
            expect(decodeFinalAnswer(json)).toEqual({
              text: answer,
              truncated: false,
              raw: false,
              invalid: false,
            });
          }
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('property: single-character chunks', () => {
    fc.assert(
      fc.property(hostile, (answer) => {
        const json = JSON.stringify({ answer });
        expect(decodeChunks(json.split(''))).toBe(answer);
      }),
      { numRuns: 300 },
    );
  });

  it('property: each fragment yields what its characters fed one by one yield (the per-event text)', () => {
    fc.assert(
      fc.property(hostile, fc.array(fc.nat(400), { maxLength: 12 }), fc.boolean(), (answer, cuts, esc) => {
        let json = JSON.stringify({ note: 1, answer });
        if (esc) json = escapeAll(json);
        const whole = new JsonStringFieldDecoder('answer');
        const byChar = new JsonStringFieldDecoder('answer');
        for (const part of splitAt(json, cuts)) {
          let expected = '';
          for (const ch of part.split('')) expected += byChar.push(ch);
          // A high surrogate ending the fragment is held by both until its pair arrives.
          expect(whole.push(part)).toBe(expected);
          expect(whole.state).toEqual(byChar.state);
        }
        expect(whole.finish()).toBe(byChar.finish());
      }),
      { numRuns: 1000 },
    );
  });

  it('property: any prefix decodes to a prefix of the answer (cut-off arguments)', () => {
    fc.assert(
      fc.property(hostile, fc.nat(), (answer, cut) => {
        const json = JSON.stringify({ answer });
        const prefix = json.slice(0, cut % (json.length + 1));
        const decoded = decodeFinalAnswer(prefix);
        expect(answer.startsWith(decoded.text)).toBe(true);
        if (prefix.length < json.length - 1) expect(decoded.truncated).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});

describe('decodeFinalAnswer', () => {
  it('never loses text when there is no string answer (raw, and invalid for a retry)', () => {
    expect(decodeFinalAnswer('{"text": 1}')).toEqual({
      text: '{"text": 1}',
      truncated: false,
      raw: true,
      invalid: true,
    });
    expect(decodeFinalAnswer('{"answer": 42}')).toEqual({
      text: '{"answer": 42}',
      truncated: false,
      raw: true,
      invalid: true,
    });
    expect(decodeFinalAnswer('{}')).toEqual({ text: '{}', truncated: false, raw: true, invalid: true });
    expect(decodeFinalAnswer('just prose')).toEqual({
      text: 'just prose',
      truncated: false,
      raw: true,
      invalid: true,
    });
  });

  // Regression (issue 9): {"response": "..."} reached the client as raw JSON text.
  it('takes the only key when it holds a string, whatever it is called', () => {
    expect(decodeFinalAnswer('{"response": "It is sunny"}')).toEqual({
      text: 'It is sunny',
      truncated: false,
      raw: false,
      invalid: false,
      field: 'response',
    });
    expect(decodeFinalAnswer({ reply: 'ok' })).toMatchObject({ text: 'ok', invalid: false, field: 'reply' });
  });

  it('a second key after a non-answer string key makes the call invalid; the first text stays', () => {
    expect(decodeFinalAnswer('{"response": "a", "answer": "b"}')).toMatchObject({
      text: 'a',
      invalid: true,
      field: 'response',
    });
    expect(decodeFinalAnswer('{"response": "a", "n": 1}')).toMatchObject({ text: 'a', invalid: true });
  });

  it('`answer` stays the answer beside other keys, and after a non-string first key', () => {
    expect(decodeFinalAnswer('{"answer": "a", "sources": ["x"]}')).toEqual({
      text: 'a',
      truncated: false,
      raw: false,
      invalid: false,
    });
    expect(decodeFinalAnswer('{"confidence": 0.9, "answer": "b"}')).toMatchObject({
      text: 'b',
      invalid: false,
    });
  });

  it('cut-off arguments are truncated, never invalid (a retry would be cut too)', () => {
    expect(decodeFinalAnswer('{"response": "It is su')).toEqual({
      text: 'It is su',
      truncated: true,
      raw: false,
      invalid: false,
      field: 'response',
    });
  });

  it('is lenient with raw newlines inside the string (invalid JSON, complete answer)', () => {
    expect(decodeFinalAnswer('{"answer": "line1\nline2"}')).toEqual({
      text: 'line1\nline2',
      truncated: false,
      raw: false,
      invalid: false,
    });
  });

  it('cut before the answer started gives empty text, truncated', () => {
    expect(decodeFinalAnswer('{"ans')).toEqual({ text: '', truncated: true, raw: false, invalid: false });
  });
});
