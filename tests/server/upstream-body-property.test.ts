/**
 * UpstreamBody (server/upstream-body.ts) against a model of undici's HTTP/1 parser, under random
 * chunkings, random socket reads and random pause points of the reader. The model keeps what
 * matters for the body reader: a socket read hands the parser many events (chunks, the end) at
 * once; the parser delivers them one by one and stops at a pause, keeping the rest; resume()
 * delivers what it kept synchronously, inside the call; no new socket read comes while paused.
 * Properties: every reader (whole, partial, by iteration, dump) settles (no lost wake-up: the
 * bug where a chunked body over 64 KiB hung for ever), with the exact bytes, and the queue stays
 * bounded while the reader is slow.
 */
import fc from 'fast-check';
import type { Dispatcher } from 'undici';
import { describe, expect, it } from 'vitest';
import { UpstreamBody } from '../../server/upstream-body.js';

const HIGH_WATER = 64 * 1024;

type Event = { kind: 'data'; chunk: Buffer } | { kind: 'end' } | { kind: 'fail'; err: Error };

class ModelParser implements Dispatcher.DispatchController {
  aborted = false;
  paused = false;
  reason: Error | null = null;
  body!: UpstreamBody;
  /** Events of the socket reads so far that the parser has not delivered yet. */
  private held: Event[] = [];
  delivered = 0;
  pauses = 0;

  pause(): void {
    if (!this.paused) this.pauses++;
    this.paused = true;
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.run(); // as undici's resume() -> readMore(): synchronously, inside this call
  }

  abort(reason: Error): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.held = [];
    this.body.fail(reason); // undici answers an abort with onResponseError
  }

  /** Whether the socket would be read now (a paused parser has paused its socket). */
  get reading(): boolean {
    return !this.paused && !this.aborted && this.held.length === 0;
  }

  socketRead(events: Event[]): void {
    this.held.push(...events);
    this.run();
  }

  private run(): void {
    while (!this.paused && !this.aborted && this.held.length > 0) {
      const e = this.held.shift()!;
      if (e.kind === 'data') {
        this.delivered += e.chunk.length;
        this.body.push(e.chunk);
      } else if (e.kind === 'end') this.body.end();
      else this.body.fail(e.err);
    }
  }
}

const turn = () => new Promise<void>((r) => setImmediate(r));

interface Scenario {
  sizes: number[];
  /** Where the events are cut into socket reads (indexes into the event list). */
  cuts: number[];
  /** Replace the end by a transport failure. */
  fails: boolean;
  /** Loop turns before the reader starts (data piles up, the parser pauses with nobody waiting). */
  lateStart: number;
  /** Loop turns the iterating reader spends on each chunk. */
  slowness: number[];
  mode: 'bytes' | 'partial' | 'iterate' | 'dump';
  limit: number;
}

const scenario: fc.Arbitrary<Scenario> = fc.record({
  sizes: fc.array(fc.oneof(fc.integer({ min: 1, max: 512 }), fc.integer({ min: 1, max: 40_000 })), {
    minLength: 0,
    maxLength: 40,
  }),
  cuts: fc.array(fc.nat(45), { maxLength: 12 }),
  fails: fc.boolean(),
  lateStart: fc.nat(4),
  slowness: fc.array(fc.nat(3), { minLength: 1, maxLength: 8 }),
  mode: fc.constantFrom('bytes', 'partial', 'iterate', 'dump'),
  limit: fc.integer({ min: 1, max: 400_000 }),
});

function bodyBytes(sizes: number[]): Buffer[] {
  let n = 0;
  return sizes.map((size) => {
    const b = Buffer.alloc(size);
    for (let i = 0; i < size; i++) b[i] = n++ % 251;
    return b;
  });
}

function socketReads(events: Event[], cuts: number[]): Event[][] {
  const at = [...new Set(cuts.filter((c) => c > 0 && c < events.length))].sort((a, b) => a - b);
  const reads: Event[][] = [];
  let from = 0;
  for (const c of [...at, events.length]) {
    reads.push(events.slice(from, c));
    from = c;
  }
  return reads.filter((r) => r.length > 0);
}

type Outcome = { ok: true; bytes: Buffer } | { ok: false; err: unknown };

async function run(
  s: Scenario,
): Promise<{ outcome: Outcome | 'hang'; parser: ModelParser; maxHeld: number }> {
  const chunks = bodyBytes(s.sizes);
  const failure = new Error('socket hang up');
  const events: Event[] = [
    ...chunks.map((chunk) => ({ kind: 'data' as const, chunk })),
    s.fails ? { kind: 'fail' as const, err: failure } : { kind: 'end' as const },
  ];
  const reads = socketReads(events, s.cuts);
  const parser = new ModelParser();
  const body = new UpstreamBody(parser, Number.NaN);
  parser.body = body;
  let consumed = 0;
  let maxHeld = 0;

  const read = async (): Promise<Outcome> => {
    for (let i = 0; i < s.lateStart; i++) await turn();
    try {
      if (s.mode === 'bytes') {
        const got = await body.bytes();
        return { ok: true, bytes: got ?? Buffer.alloc(0) };
      }
      if (s.mode === 'partial') return { ok: true, bytes: await body.partial(s.limit) };
      if (s.mode === 'dump') {
        await body.dump();
        return { ok: true, bytes: Buffer.alloc(0) };
      }
      const parts: Buffer[] = [];
      let k = 0;
      for await (const part of body) {
        parts.push(part);
        consumed += part.length;
        for (let i = 0; i < s.slowness[k++ % s.slowness.length]!; i++) await turn();
      }
      return { ok: true, bytes: Buffer.concat(parts) };
    } catch (err) {
      return { ok: false, err };
    }
  };

  let settled: Outcome | undefined;
  const reader = read().then((o) => {
    settled = o;
  });
  // The socket: one read per loop turn while the parser reads; after the last one, a reader
  // that has not settled within a few more turns never will (nothing else can wake it).
  let idle = 0;
  while (settled === undefined && idle < 20) {
    await turn();
    if (parser.reading && reads.length > 0) parser.socketRead(reads.shift()!);
    else if (reads.length === 0 || parser.paused) idle++;
    maxHeld = Math.max(maxHeld, parser.delivered - consumed);
  }
  if (settled === undefined) {
    parser.abort(new Error('test over')); // let the reader go
    await reader;
    return { outcome: 'hang', parser, maxHeld };
  }
  return { outcome: settled, parser, maxHeld };
}

describe('UpstreamBody under random chunkings and pause points', () => {
  it('every reader settles with the exact bytes; the queue stays bounded for a slow reader', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const { outcome, parser, maxHeld } = await run(s);
        expect(outcome).not.toBe('hang');
        if (outcome === 'hang') return;
        const whole = Buffer.concat(bodyBytes(s.sizes));
        if (s.mode === 'bytes' || s.mode === 'iterate') {
          if (s.fails) {
            expect(outcome.ok).toBe(false);
            if (!outcome.ok) expect((outcome.err as Error).message).toBe('socket hang up');
          } else {
            expect(outcome.ok).toBe(true);
            if (outcome.ok) expect(outcome.bytes.equals(whole)).toBe(true);
          }
        }
        if (s.mode === 'partial' && outcome.ok) {
          // What arrived, whole chunks only, never past the limit.
          expect(outcome.bytes.length).toBeLessThanOrEqual(s.limit);
          expect(outcome.bytes.equals(whole.subarray(0, outcome.bytes.length))).toBe(true);
          if (whole.length <= s.limit && !s.fails) expect(outcome.bytes.length).toBe(whole.length);
        }
        if (s.mode === 'dump') expect(outcome.ok).toBe(true);
        // A reader that has settled leaves no parser paused behind on a body still running.
        if (!parser.aborted && !s.fails) expect(parser.paused).toBe(false);
        if (s.mode === 'iterate') {
          const biggest = Math.max(0, ...s.sizes);
          expect(maxHeld).toBeLessThanOrEqual(2 * (HIGH_WATER + biggest));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('the reported case: a chunked body over 64 KiB in one socket read, read whole after it arrived', async () => {
    const sizes = Array(40).fill(4096);
    const { outcome, parser } = await run({
      sizes,
      cuts: [],
      fails: false,
      lateStart: 2,
      slowness: [0],
      mode: 'bytes',
      limit: 0,
    });
    expect(parser.pauses).toBeGreaterThan(0);
    expect(outcome).not.toBe('hang');
    if (outcome !== 'hang' && outcome.ok) expect(outcome.bytes.length).toBe(40 * 4096);
  });
});
