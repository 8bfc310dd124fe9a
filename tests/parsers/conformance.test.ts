/**
 * One suite over every fixture file: golden expectations through recoverMessage, and
 * streaming == non-streaming under random chunkings (fast-check), 1-char chunks, and splits
 * inside markers and surrogate pairs.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { collectEvents, createRecoveryStream, recoverMessage } from '../../parsers/recover.js';
import { PARSERS } from '../../parsers/registry.js';
import { FIXTURE_DIR, type FixtureCase, loadFixtures, optionsFor, view } from './fixtures.js';

const files = loadFixtures();

/**
 * A case's whole read, done once: the golden test, its 1-char and random streams and the
 * precision count compare against the same result (recoverMessage is a pure function of the
 * case; reading it four times cost about a third of this file's CPU). The tests only read it.
 */
const goldenReads = new Map<FixtureCase, ReturnType<typeof recoverMessage>>();
function runGolden(c: FixtureCase) {
  let r = goldenReads.get(c);
  if (r === undefined) {
    r = recoverMessage({ content: c.text, reasoning: c.reasoning ?? null }, optionsFor(c));
    goldenReads.set(c, r);
  }
  return r;
}

function runChunked(c: FixtureCase, contentCuts: number[], reasoningCuts: number[]) {
  const s = createRecoveryStream(optionsFor(c));
  const events = [];
  const split = (t: string, cuts: number[]) => {
    const pts = [...new Set(cuts.map((x) => x % (t.length + 1)))].sort((a, b) => a - b);
    const out: string[] = [];
    let prev = 0;
    for (const p of pts) {
      out.push(t.slice(prev, p));
      prev = p;
    }
    out.push(t.slice(prev));
    return out;
  };
  for (const r of split(c.reasoning ?? '', reasoningCuts)) events.push(...s.push({ reasoning: r }));
  for (const t of split(c.text, contentCuts)) events.push(...s.push({ content: t }));
  events.push(...s.finish());
  // No event may end in half a surrogate pair. Read in plain code and asserted once: an expect()
  // per event (thousands a case with 1-char chunks) was a third of this file's CPU.
  const halves = events
    .filter((e) => e.type === 'content' || e.type === 'reasoning')
    .map((e) => e.text)
    .filter((text) => {
      const last = text.charCodeAt(text.length - 1);
      return last >= 0xd800 && last <= 0xdbff;
    });
  expect(halves, 'events ending in a high surrogate').toEqual([]);
  return collectEvents(events, s);
}

describe('parser fixtures: every registered parser has a fixture file', () => {
  for (const p of PARSERS) {
    it(p.name, () => {
      expect(
        existsSync(join(FIXTURE_DIR, `${p.name}.json`)),
        `missing tests/fixtures/parsers/${p.name}.json`,
      ).toBe(true);
    });
  }
});

for (const { file, cases } of files) {
  describe(`fixtures: ${file}`, () => {
    for (const c of cases) {
      it(c.name, () => {
        const r = runGolden(c);
        // [stream: 1-char chunks] the same read streamed one character at a time: a test of its
        // own until testspeed15 (3,900 of the suite's 11,700 tests, ~0.3 ms of vitest's own CPU
        // each). First and soft, so a case whose whole read is wrong still reports its stream.
        const cuts = Array.from({ length: c.text.length }, (_, i) => i + 1);
        const rcuts = Array.from({ length: (c.reasoning ?? '').length }, (_, i) => i + 1);
        expect.soft(view(runChunked(c, cuts, rcuts)), '[stream: 1-char chunks]').toEqual(view(r));
        // the golden expectations
        expect(r.calls.map((x) => ({ name: x.name, arguments: JSON.parse(x.arguments) }))).toEqual(
          c.expect.calls,
        );
        expect(r.content).toBe(c.expect.content);
        if (c.expect.reasoning !== undefined) expect(r.reasoning).toBe(c.expect.reasoning);
        if (c.expect.format) {
          const formats = new Set([...r.calls.map((x) => x.format), ...r.leaks.map((l) => l.format)]);
          expect([...formats]).toEqual([c.expect.format]);
        }
        const outcome = c.expect.outcome;
        if (outcome === 'none') expect(r.leaks).toEqual([]);
        else if (outcome === 'recovered') expect(r.leaks.some((l) => l.outcome === 'recovered')).toBe(true);
        else if (outcome) {
          expect(r.calls).toEqual([]);
          expect(r.leaks.some((l) => l.outcome === outcome)).toBe(true);
        }
        for (const call of r.calls) expect(typeof JSON.parse(call.arguments)).toBe('object');
      });
    }

    it('[stream: random chunkings equal non-streaming]', () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 0, max: cases.length - 1 }),
          fc.array(fc.nat(), { maxLength: 12 }),
          fc.array(fc.nat(), { maxLength: 4 }),
          (k, cuts, rcuts) => {
            const c = cases[k]!;
            expect(view(runChunked(c, cuts, rcuts))).toEqual(view(runGolden(c)));
          },
        ),
        { numRuns: 50, seed: 42 },
      );
    });
  });
}

describe('precision / recall over all fixtures', () => {
  it('turns no prose into calls (unsafe false positives = 0) and reports recall', () => {
    let positives = 0;
    let recalled = 0;
    let negatives = 0;
    let falsePositives = 0;
    const unsafe: string[] = [];
    for (const { file, cases } of files) {
      for (const c of cases) {
        const r = runGolden(c);
        const got = JSON.stringify(
          r.calls.map((x) => ({ name: x.name, arguments: JSON.parse(x.arguments) })),
        );
        if (c.expect.calls.length === 0) {
          negatives++;
          if (r.calls.length > 0) {
            falsePositives++;
            unsafe.push(`${file}: ${c.name}`);
          }
        } else {
          positives++;
          if (got === JSON.stringify(c.expect.calls)) recalled++;
        }
      }
    }
    const precision = negatives === 0 ? 1 : (negatives - falsePositives) / negatives;
    console.log(
      `[parsers] positives ${positives}, recalled ${recalled} (recall ${(recalled / Math.max(1, positives)).toFixed(3)}); ` +
        `negatives ${negatives}, prose turned into calls ${falsePositives} (precision on negatives ${precision.toFixed(3)})`,
    );
    expect(unsafe).toEqual([]);
  });
});
