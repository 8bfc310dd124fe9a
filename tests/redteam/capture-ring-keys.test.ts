/**
 * One key's traffic cannot empty the inspector's capture ring of every other key's records: a
 * full ring gives up the oldest record of the key holding the most bytes (as the Responses store
 * and the refusal memory do). The oldest of all went first: a key looping 20 KB prompts pushed a
 * quiet key's whole history out in a few dozen requests (docs/inspect.md, Keys), its failing
 * request gone before anyone looked. The out-of-order eviction leaves holes in the ring's
 * order, and evicted records are reused for later requests: the reads skip the holes, never show
 * a reused record twice, and the cost stays linear in the records and keys.
 */
import { describe, expect, it } from 'vitest';
import { CaptureRing, type RecordInit } from '../../server/capture/ring.js';
import { measureScaling, prng, withinBudget } from '../support/cost-scaling.js';

const record = (id: string, key: string | undefined): RecordInit => ({
  id,
  api: 'chat',
  model: 'm',
  stream: false,
  session: `s-${key}`,
  method: 'POST',
  path: '/v1/chat/completions',
  ...(key === undefined ? {} : { key }),
});

function ended(ring: CaptureRing, id: string, key: string | undefined, chars: number): void {
  // Its text in the ring's arena and ended: once evicted, reused for a later request.
  const w = ring.open(record(id, key));
  w.body = w.fromBytes(Buffer.from('x'.repeat(chars)));
  w.status = 200;
  w.inFlight = false;
}

describe("a full capture ring gives up the busiest key's oldest record", () => {
  it("a key's loop of requests pushes out its own records, not a quiet key's", () => {
    const ring = new CaptureRing({ maxBytes: 64 * 1024, textChars: 4096 });
    for (let i = 0; i < 3; i++) ended(ring, `quiet${i}`, 'quiet', 3000);
    for (let i = 0; i < 500; i++) {
      ended(ring, `busy${i}`, 'busy', 3000);
      expect(ring.bytes).toBeLessThanOrEqual(64 * 1024);
    }
    const quiet = ring.list({ owner: 'quiet', limit: 1000 }).map((r) => r.id);
    expect(quiet).toEqual(['quiet2', 'quiet1', 'quiet0']);
    expect(ring.get('quiet0')).toBeDefined();
    expect(ring.get('busy0')).toBeUndefined();
    expect(ring.list({ owner: 'busy', limit: 1 })[0]!.id).toBe('busy499');
    expect(ring.droppedForOthers.get('quiet')).toBeUndefined();
    // The busy key keeps the rest of the ring: still the most of it.
    expect(ring.list({ owner: 'busy', limit: 1000 }).length).toBeGreaterThan(5);
  });

  it('one key alone still keeps its newest, and the oldest of a key goes first', () => {
    const ring = new CaptureRing({ maxBytes: 64 * 1024, textChars: 4096 });
    for (let i = 0; i < 200; i++) ended(ring, `r${i}`, undefined, 3000);
    const ids = ring.list({ limit: 1000 }).map((r) => r.id);
    expect(ids[0]).toBe('r199');
    expect(ids).toEqual(ids.map((_, i) => `r${199 - i}`));
  });

  it('keys that take turns being the busiest: every read stays whole and in order (records reused)', () => {
    const ring = new CaptureRing({ maxBytes: 48 * 1024, textChars: 4096 });
    const rnd = prng(24);
    const keys = ['a', 'b', 'c', undefined];
    for (let i = 0; i < 3000; i++) {
      const key = keys[Math.floor(rnd() * (i % 700 < 350 ? 2 : 4))];
      ended(ring, `r${i}`, key, 200 + Math.floor(rnd() * 3000));
      expect(ring.bytes).toBeLessThanOrEqual(48 * 1024);
      if (i % 97 !== 0) continue;
      const all = ring.list({ limit: 1000 }).map((r) => r.id);
      expect(new Set(all).size).toBe(all.length);
      expect(all.length).toBe(ring.size);
      const numbers = all.map((id) => Number(id.slice(1)));
      expect(numbers).toEqual([...numbers].sort((x, y) => y - x));
      for (const id of all) expect(ring.get(id)?.id).toBe(id);
      const named = ['a', 'b', 'c'].map((k) => ring.list({ owner: k, limit: 1000 }).length);
      expect(named.reduce((x, y) => x + y, 0)).toBeLessThanOrEqual(all.length);
    }
  });

  it('costs about x4 for x4 keys each holding a record, then x4 records of one key', () => {
    const s = measureScaling(
      (n: number) => n,
      (n: number) => {
        const ring = new CaptureRing({ maxBytes: 64 * n * 1024, textChars: 512 });
        for (let k = 0; k < n; k++) ended(ring, `k${k}`, `key${k}`, 400);
        for (let i = 0; i < 64 * n; i++) ended(ring, `b${i}`, 'busy', 400);
        return ring.size;
      },
      { from: 16, max: 1024 },
    );
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});
