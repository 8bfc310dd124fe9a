/**
 * The inspector's runs that open alike (docs/inspect.md): a failed first request looks for its
 * retry among the records after it (CaptureRing.after), once, when the inspector first reads it.
 * A ring full of failed first requests (any key holder can fill one: a client that leaves before
 * the reply) asks that of every record: each ask must cost the same wherever the record sits,
 * not a walk of the ring (which made the first read quadratic in the records).
 */
import { describe, expect, it } from 'vitest';
import { CaptureRing, type RecordWriter } from '../../server/capture/ring.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';

function ringOf(n: number, maxBytes = 512 * 1024 * 1024): { ring: CaptureRing; records: RecordWriter[] } {
  const ring = new CaptureRing({ maxBytes, textChars: 1024 });
  const records: RecordWriter[] = [];
  for (let i = 0; i < n; i++)
    records.push(
      ring.open({
        id: `r${i}`,
        api: 'chat',
        model: 'm',
        stream: false,
        session: 's',
        method: 'POST',
        path: '/v1/chat/completions',
      }),
    );
  return { ring, records };
}

describe('CaptureRing.after: the records after one', () => {
  it('costs the same wherever the record sits: every record asked, x1 vs x4 records', () => {
    const s = measureScaling(
      (n) => ringOf(n),
      ({ ring, records }) => {
        let seen = 0;
        // Two records an ask, not the inspector's 64: the asks' slices of 64 took ~8 MB at 4x, and
        // growing the young generation for them (page faults, ~13 µs each on a loaded VM) read
        // 11 ms against 0.4 at 1x, a ratio of the allocator, not of the ask.
        for (const r of records) seen += ring.after(r, 2).length;
        return seen;
      },
      // Capped at 32,000 records (4x: 128,000): a worker warm from the files before it asks in
      // ~1.4 ms at 32,000, so the 8 ms target grew the ring to 256,000 (4x: a million records,
      // ~9 s of CPU to build and a 750 MB heap left for the worker's next files). A walk of the
      // order (the quadratic this guards against) reaches the target near 8,000 and reads ~16x.
      { from: 2000, max: 32_000 },
    );
    expect(withinBudget(s, 5).time, JSON.stringify(s)).toBe(true);
  }, 60_000);

  it('gives the next records in arrival order, and none once the record left the ring', () => {
    const { ring, records } = ringOf(3000, 64 * 1024);
    // The ring kept only the newest; its order array was compacted on the way (head past 1024).
    const kept = records.filter((r) => ring.get(r.id) === r);
    expect(kept.length).toBeGreaterThan(2);
    expect(kept.length).toBeLessThan(3000);
    expect(ring.after(records[0]!, 64)).toEqual([]);
    const at = kept.length - 3;
    expect(ring.after(kept[at]!, 64).map((r) => r.id)).toEqual(kept.slice(at + 1).map((r) => r.id));
    expect(ring.after(kept[0]!, 2).map((r) => r.id)).toEqual([kept[1]!.id, kept[2]!.id]);
  });
});
