/**
 * engine/code-spans.ts: where the content stands in Markdown code, for any chunking. The
 * engine reads an envelope that starts there as text (tests/fixtures/parsers/near-miss-small.json).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CodeSpans } from '../../parsers/engine/code-spans.js';
import { splitAt } from '../policies/helpers.js';

function inCodeAfter(...pieces: string[]): boolean {
  const c = new CodeSpans();
  for (const p of pieces) c.feed(p);
  return c.inCode();
}

describe('CodeSpans', () => {
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
  ])('%s', (_what, text, expected) => {
    expect(inCodeAfter(text)).toBe(expected);
  });

  it('answers the same for any chunking, at every position', () => {
    const alphabet = ['`', '``', '```', '\n', ' ', 'a', '<tool_call>', 'x y'];
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
          const chunked = new CodeSpans();
          for (const p of pieces) chunked.feed(p);
          expect(chunked.inCode()).toBe(inCodeAfter(text));
          // asked after each character (where the next is no backtick, as at an envelope's start)
          const byChar = new CodeSpans();
          for (let i = 0; i < text.length; i++) {
            byChar.feed(text[i]!);
            if (text[i + 1] !== '`')
              expect(byChar.inCode(), text.slice(0, i + 1)).toBe(inCodeAfter(text.slice(0, i + 1)));
          }
        },
      ),
      { numRuns: 300, seed: 7 },
    );
  });
});
