/**
 * The inspector's session view (docs/inspect.md, docs/prefix.md) against turns made to cost it
 * the most: each turn one long message that differs from every earlier turn's only at its end.
 * Each turn is compared with up to 8 earlier ones for its first difference; found character by
 * character in JavaScript, 24 turns of 120 KB took 70-140 ms of the event loop per read (the
 * page reads an open session again every 2 s), ~50x the parse of the same bodies. Now each
 * comparison is V8's own.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { commonPrefixLength, type SessionRecord, turnsOf } from '../../server/capture/query.js';
import type { CaptureSummary } from '../../server/capture/ring.js';
import { compareCosts, cpuMsOf } from '../support/cost-scaling.js';

/** A turn as turnsOf reads it: its summary and its first attempt's body, whole. */
function turn(i: number, body: string): SessionRecord {
  const summary = {
    id: `t${i}`,
    at: i,
    session: 's',
    tokens: { cached: null, prompt: null, completion: null },
  };
  return { summary: summary as unknown as CaptureSummary, prompt: body };
}

describe('the session view, turns that differ only at the end of one long message', () => {
  it('costs about what parsing their bodies costs, not 8 character loops per turn', () => {
    const long = 'y'.repeat(120_000);
    const bodies = Array.from({ length: 24 }, (_, i) =>
      JSON.stringify({
        model: 'm1',
        messages: [{ role: 'user', content: `${long}${String.fromCharCode(65 + i)}` }],
      }),
    );
    const records = bodies.map((b, i) => turn(i, b));
    const turns = turnsOf(records);
    // Each turn after the first breaks at its last message, at the characters past the 120 KB.
    expect(turns[0]!.prefix).toBeNull();
    for (const t of turns.slice(1)) {
      const p = t.prefix as { kept: false; where: string; offset: number };
      expect(p.kept).toBe(false);
      expect(p.where).toBe('messages[0]');
      expect(p.offset).toBe(4 /* "null" */ + `{"role":"user","content":"${long}`.length);
    }
    // Alternated, medians: the reference is parsing the same bodies (linear, V8's own).
    // Measured: the view 5-7x the parse (it parses the bodies and writes each message again),
    // 50-55x before (64-73 ms against 1.3 ms).
    const c = compareCosts(
      () => cpuMsOf(() => turnsOf(records)),
      () => cpuMsOf(() => bodies.map((b) => JSON.parse(b))),
      (view, parse) => view < 16 * parse + 5,
    );
    expect(c.ok, JSON.stringify(c)).toBe(true);
  });

  it('commonPrefixLength is the length of the common prefix', () => {
    const chars = fc.constantFrom('a', 'b', '\u00e9', '\ud83d', '\ude00');
    fc.assert(
      fc.property(fc.array(chars, { maxLength: 40 }), fc.array(chars, { maxLength: 40 }), (x, y) => {
        const a = x.join('');
        const b = y.join('');
        let k = 0;
        while (k < a.length && k < b.length && a[k] === b[k]) k++;
        expect(commonPrefixLength(a, b)).toBe(k);
        expect(commonPrefixLength(a, a + b)).toBe(a.length);
      }),
      { numRuns: 300 },
    );
  });
});
