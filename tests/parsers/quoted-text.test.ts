/**
 * engine/quoted-text.ts: where the content stands in quoted or shown text, for any chunking. The
 * engine reads an envelope that starts there as text (tests/fixtures/parsers/near-miss-small.json).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { QuotedText } from '../../parsers/engine/quoted-text.js';
import { splitAt } from '../policies/helpers.js';

function quotedAfter(...pieces: string[]): boolean {
  const c = new QuotedText();
  for (const p of pieces) c.feed(p);
  return c.quoted();
}

describe('QuotedText', () => {
  it.each([
    ['plain prose', 'Let me check.\n', false],
    ['an open inline span', 'Write `', true],
    ['a closed inline span', 'Use `ls` now ', false],
    ['a double-backtick span holding a single backtick', 'Write `` a ` b ', true],
    ['a double-backtick span closed', 'Write `` a ` b `` ', false],
    ['a line break ends an unclosed span', 'The ` char.\n', false],
    ['an open fence', 'Example:\n```\n', true],
    ['an open fence with a language', '```xml\n', true],
    ['an info string does not open a span', '```python `x\n', true],
    ['a closed fence', '```\ncode\n```\n', false],
    ['a closing run shorter than the opener does not close', '````\n```\n', true],
    ['up to three blanks before a fence', '   ```\n', true],
    ['four blanks are no fence line (an inline run)', '    ```\n', false],
    ['backticks inside a fence are no inline span', '```\na `b\n```\n', false],
    ['a blockquote line', 'You sent:\n> ', true],
    ['a blockquote after up to three blanks', '   > ', true],
    ['a line break ends a blockquote line', '> quoted\n', false],
    ['a > inside a line is no blockquote', 'a > b ', false],
    ['an open HTML comment', 'text <!-- ', true],
    ['a closed HTML comment', '<!-- note --> text ', false],
    ['a comment spans lines', '<!--\nline\n', true],
    ['<!-- in inline code opens no comment', '`<!--` ', false],
    ['arrows and dashes are no delimiters', 'a -> b <- c -- d ', false],
  ])('%s', (_what, text, expected) => {
    expect(quotedAfter(text)).toBe(expected);
  });

  it('answers the same for any chunking, at every position', () => {
    const alphabet = [
      '`',
      '``',
      '```',
      '\n',
      ' ',
      'a',
      '<tool_call>',
      'x y',
      '>',
      '<!--',
      '-->',
      '-',
      '<',
      '!',
    ];
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...alphabet), { maxLength: 40 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        (parts, cuts) => {
          const text = parts.join('');
          const pieces = splitAt(
            text,
            cuts.map((x) => x % (text.length + 1)),
          );
          const chunked = new QuotedText();
          for (const p of pieces) chunked.feed(p);
          expect(chunked.quoted()).toBe(quotedAfter(text));
          // asked after each character where the next could not go on with a backtick run or a
          // comment delimiter (so not before a backtick, `!`, `-` or `>`)
          const byChar = new QuotedText();
          for (let i = 0; i < text.length; i++) {
            byChar.feed(text[i]!);
            if (!'`!->'.includes(text[i + 1] ?? ''))
              expect(byChar.quoted(), text.slice(0, i + 1)).toBe(quotedAfter(text.slice(0, i + 1)));
          }
        },
      ),
      { numRuns: 300, seed: 7 },
    );
  });
});
