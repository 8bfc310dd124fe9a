/**
 * TagSet (parsers/engine/tag-set.ts) against the plain definitions it replaces: one indexOf per
 * tag for the first tag, and one endsWith per tag and length for a tag cut by the buffer's end.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildScanPlan } from '../../parsers/engine/scanner.js';
import { TagSet } from '../../parsers/engine/tag-set.js';
import { PARSERS } from '../../parsers/registry.js';

function firstByIndexOf(text: string, tags: readonly string[]): { at: number; len: number } | null {
  let best: { at: number; len: number } | null = null;
  for (const tag of tags) {
    const at = text.indexOf(tag);
    if (at >= 0 && (best === null || at < best.at || (at === best.at && tag.length > best.len))) {
      best = { at, len: tag.length };
    }
  }
  return best;
}

function tailByEndsWith(buf: string, tags: readonly string[]): number {
  let best = 0;
  for (const tag of tags) {
    for (let k = Math.min(tag.length - 1, buf.length); k > best; k--) {
      if (buf.endsWith(tag.slice(0, k))) best = k;
    }
  }
  return best;
}

const closes = buildScanPlan(PARSERS).think.closes;
const cases: Record<string, readonly string[]> = {
  'the registered closes': closes,
  'one tag': ['</think>'],
  'tags that extend each other': ['<a>', '<a>b', '<a>bc|', 'x.*'],
};

describe('TagSet', () => {
  for (const [name, tags] of Object.entries(cases)) {
    it(`${name}: first, partialTail and anyStart agree with indexOf / endsWith / includes on random text`, () => {
      const set = new TagSet(tags);
      // text made of pieces of the tags, so hits and cut tags are frequent
      const piece = fc.oneof(
        fc
          .constantFrom(...tags)
          .chain((t) =>
            fc
              .tuple(fc.nat({ max: t.length }), fc.nat({ max: t.length }))
              .map(([a, b]) => t.slice(a, a + b + 1)),
          ),
        fc.constantFrom(' ', 'x', '\n', '<', '|', '[', 'é'),
      );
      fc.assert(
        fc.property(fc.array(piece, { maxLength: 12 }), (pieces) => {
          const text = pieces.join('');
          expect(set.first(text)).toEqual(firstByIndexOf(text, tags));
          expect(set.partialTail(text)).toBe(tailByEndsWith(text, tags));
          expect(set.anyStart(text)).toBe(tags.some((t) => text.includes(t.slice(0, 1))));
        }),
        { numRuns: 400 },
      );
    });
  }

  it('regex characters in a tag are literal', () => {
    const set = new TagSet(['[BEGIN FINAL RESPONSE]', '<|END_THINKING|>', 'a.b']);
    expect(set.first('B <|END_THINKING> a-b axb [BEGIN FINAL RESPONSE]')).toEqual({ at: 26, len: 22 });
    expect(set.first('END_THINKING|')).toBeNull();
    expect(set.partialTail('text <|END_')).toBe(6);
  });
});
