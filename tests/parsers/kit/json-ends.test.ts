/**
 * kit/json-ends.ts: one walk answers, for every bracket of a text, where the JSON value it opens
 * ends, exactly as scanJsonValue would (property over texts of the characters that matter), and
 * the cost of asking for every start stays linear where asking scanJsonValue for each is
 * quadratic (the stripped harmony headers of gpt-oss whose objects never close).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JsonEnds } from '../../../parsers/kit/json-ends.js';
import { MAX_NESTING, scanJsonValue } from '../../../parsers/kit/json-scan.js';
import { budget } from '../../hardening/surface-budget.js';

const ALPHABET = ['{', '[', '}', ']', '"', '\\', 'a', ' ', '{"', '\\"', '"}'];
const text = fc.array(fc.constantFrom(...ALPHABET), { maxLength: 120 }).map((xs) => xs.join(''));

function expected(t: string, start: number, limit: number): number {
  const s = scanJsonValue(t.slice(0, limit), start);
  return s === null ? Number.NaN : s.end;
}

describe('JsonEnds', () => {
  it("every bracket's end is scanJsonValue's, asked in order, out of order, and under a limit", () => {
    fc.assert(
      fc.property(text, fc.integer({ min: 0, max: 200 }), fc.boolean(), (t, cut, reverse) => {
        const starts = [...t].flatMap((c, i) => (c === '{' || c === '[' ? [i] : []));
        if (starts.length === 0) return;
        const from = starts[0]!;
        const limit = Math.min(t.length, from + 1 + cut);
        const ends = new JsonEnds(t, from);
        const order = reverse ? [...starts].reverse() : starts;
        for (const s of order) {
          if (s >= limit) {
            expect(ends.end(s, limit)).toBeNull();
            continue;
          }
          expect(ends.end(s, limit), `${JSON.stringify(t)} at ${s} limit ${limit}`).toBe(
            expected(t, s, limit),
          );
        }
        // and with the whole text after a limited look
        for (const s of starts) expect(ends.end(s)).toBe(expected(t, s, t.length));
      }),
      { numRuns: 2000, seed: 4242 },
    );
  });

  it('the same answers as the text grows at the back and is trimmed at the front (rebase)', () => {
    fc.assert(
      fc.property(
        text,
        fc.array(fc.integer({ min: 1, max: 30 }), { minLength: 1, maxLength: 8 }),
        (t, steps) => {
          const starts = [...t].flatMap((c, i) => (c === '{' || c === '[' ? [i] : []));
          if (starts.length === 0) return;
          let ends: JsonEnds | null = null;
          let base = 0;
          let next = 0;
          let len = starts[0]! + 1;
          for (const step of [...steps, t.length]) {
            len = Math.min(t.length, len + step);
            const view = t.slice(base, len);
            if (ends === null) ends = new JsonEnds(view, starts[0]! - base, base);
            else ends.rebase(view, base);
            // ask every start seen so far that is still in the view, as the scanner would
            for (const s of starts.filter((x) => x >= base && x < len))
              expect(ends.end(s - base), `${JSON.stringify(t)} at ${s}, ${base}..${len}`).toBe(
                (() => {
                  const e = expected(t.slice(0, len), s, len);
                  return e < 0 ? -1 : e - base;
                })(),
              );
            // trim the front up to the next start not yet asked about at the end of the text
            while (next < starts.length && starts[next]! < len - 5) next++;
            base = Math.max(base, Math.min(starts[next] ?? len, len) - 1, 0);
          }
        },
      ),
      { numRuns: 2000, seed: 4245 },
    );
  });

  it('null for a start that opens no array or object, or before the walk', () => {
    const ends = new JsonEnds('x{"a":1} {}', 1);
    expect(ends.end(0)).toBeNull();
    expect(ends.end(2)).toBeNull();
    expect(ends.end(1)).toBe(8);
    expect(ends.end(9)).toBe(11);
  });

  it('a value nested deeper than MAX_NESTING is -2, where scanJsonValue would walk on', () => {
    const deep = `${'['.repeat(MAX_NESTING + 1)}${']'.repeat(MAX_NESTING + 1)}`;
    const ends = new JsonEnds(deep, 0);
    expect(ends.end(0)).toBe(-2);
    // the innermost MAX_NESTING are within the cap: their own ends
    expect(ends.end(1)).toBe(deep.length - 1);
    // under a limit before the cap was passed, it is just not closed yet
    expect(new JsonEnds(deep, 0).end(0, MAX_NESTING)).toBe(-1);
  });

  it('starts in the two quote phases, merged by \\" (the pattern that defeats a stop-at-marker scan)', () => {
    const t = `{"${'{\\"'.repeat(50)}"}`;
    const ends = new JsonEnds(t, 0);
    for (let i = 0; i < t.length; i++) if (t[i] === '{') expect(ends.end(i)).toBe(expected(t, i, t.length));
  });

  it('lanes merge: every start of {" then {\\" repeated (a new lane each, all in one string) costs about 4x for 4x', () => {
    budget(
      'JsonEnds, merging lanes',
      (size) => `{"${'{\\"'.repeat(Math.ceil(size / 3))}`,
      (t) => {
        const ends = new JsonEnds(t, 0);
        let n = 0;
        for (let i = 0; i < t.length; i += 3) n += ends.end(i) ?? 0;
        return n;
      },
      { from: 2000, max: 256_000 },
      4244,
    );
  }, 120_000);

  it('asking for every start costs about 4x for 4x the text', () => {
    const units = ['{', '[', '}', '"', '\\"', '{"', 'commentary to=functions.f json{', 'a'];
    budget(
      'JsonEnds, every start',
      (size, rnd) => {
        let t = '';
        while (t.length < size) t += units[Math.floor(rnd() * units.length)];
        return t;
      },
      (t) => {
        const ends = new JsonEnds(t, 0);
        let n = 0;
        for (let i = 0; i < t.length; i++) {
          const c = t.charCodeAt(i);
          if (c === 0x7b || c === 0x5b) n += ends.end(i) ?? 0;
        }
        return n;
      },
      { from: 2000, max: 256_000 },
      4243,
    );
  }, 120_000);
});
