/**
 * Budget checks for the surface tables (tests/hardening/surface-budgets.test.ts): an input scaled
 * 4x along one size must cost at most about 4x, in time and in retained memory. Robust on a
 * loaded 2-core box: the base size is grown until one run takes a measurable time, 1x and 4x
 * runs are interleaved (load drifts hit both), medians of CPU time less GC pauses (timed) are
 * compared, and the bound is x10 plus a small constant: linear work gives x4 (x6-8 with noise), a
 * quadratic x16, so it is flagged without flaking. Retained memory: the heap after a full GC with
 * the result held, minus the heap after one with it released. Every full GC costs in proportion to the worker's whole heap, so the
 * measure takes as few as it can (two or three per memory pair, one memory pair unless it looks
 * over).
 */
import { GCProfiler, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose_gc');
const gc = runInNewContext('gc') as () => void;
const NEVER = Symbol.for('never');

export interface Scaling {
  /**
   * Median CPU ms of one run at 1x and 4x; when the first look stopped early, the smallest t1
   * and largest t4 those medians could have had (measureScaling).
   */
  t1: number;
  t4: number;
  /**
   * Median bytes retained by one result at 1x and 4x (a pair whose 4x result kept no more than
   * the budget's constant counts its 1x one as 0: not measured, as no m1 could fail it).
   */
  m1: number;
  m4: number;
  /** The 1x size the calibration settled on. */
  base: number;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1]!;
}

/**
 * CPU ms of one run (user + system of this process: other processes on a loaded box stretch
 * the wall clock, not this process's CPU time), less its share spent in V8's GC pauses: the
 * surface's own work. A run's GC is linear in what it allocates only on average, and lumpy: a
 * scavenge copies whatever of the run's own structure is alive when the young generation fills,
 * so a 1x run that fits in the young generation's free space pays none, and the 4x run pays all
 * of it (the improvised reader's attributes: 1x 3.3-4.3 ms with no GC, 4x 40-78 ms of which
 * 25-45 ms in 2-3 scavenges, x11-18 read whole; the surface's own work x4-6). Whether the 1x
 * run fit depended on what the runs before it left in the young generation (flakes18's minor
 * GC before every run made it fit every time: x11 on every run), and a major GC costs in
 * proportion to the worker's whole heap. Allocation itself stays billed (the mutator writes
 * every byte), so a surface that copies a quadratic amount still reads x16. The GCs' wall time
 * (GCProfiler) is taken as the same share of the run's CPU: on a loaded box the pauses are
 * stretched as much as the rest of the run.
 */
function timed(run: () => unknown): number {
  const stop = startClock();
  run();
  return stop();
}

/**
 * Starts timing a run: the returned function, called when it ends, gives its CPU ms less the
 * GCs' share (`timed`), leaving out at most the pauses' own wall time (the GC runs on the
 * worker's thread: vitest.config.ts's --single-threaded-gc). For a run that also waits (I/O,
 * a thread pool), the share is of a wall time that includes the waits: less is left out.
 */
function startClock(): () => number {
  const gcs = new GCProfiler();
  gcs.start();
  const w0 = performance.now();
  const c0 = process.cpuUsage();
  return () => {
    const c = process.cpuUsage(c0);
    const wall = performance.now() - w0;
    const paused = gcs.stop().statistics.reduce((sum, g) => sum + g.cost, 0) / 1000;
    const cpu = (c.user + c.system) / 1000;
    return wall > 0 ? Math.max(0, cpu - Math.min(paused, (cpu * paused) / wall)) : cpu;
  };
}

/** The heap after a full GC: what is alive now. */
function heapAfterGc(): number {
  gc();
  return process.memoryUsage().heapUsed;
}

/**
 * `make(size)` builds an input of `size` units (deterministic for a size); `run(input)` is the
 * surface, returning what it keeps. The base size starts at `from` and doubles (up to `max`)
 * until a 1x run takes `targetMs` of CPU (default 8: the 4x run then takes ~32 ms, a quadratic
 * ~128 ms, far apart from the budget's constant).
 *
 * Cheap first, thorough when it matters: `runs` interleaved time pairs (default 3), the second
 * of them also a memory pair, and the third left out when the first two already decide the look
 * (the slower 4x run within the budget of the faster 1x one); only when that first look is over
 * the budget (`judge`) are more pairs measured (4 more for time, the last 2 of them memory pairs
 * when memory was over, medians of all), so a noisy first look cannot fail a linear surface and a real quadratic fails the
 * thorough look too.
 *
 * Retained memory: a memory pair keeps both timed runs' results alive across a full GC, then
 * releases the 4x one for a second and the 1x one for a third: the differences are what each
 * result holds. Garbage a call leaves that V8 frees late (a WeakMap memo keyed by the input,
 * alive as long as the input) is in all three readings and cancels out.
 * A full GC costs in proportion to the worker's whole heap, so the GCs are the expensive part:
 * three per memory pair, two when the 4x result keeps no more than the budget's constant (then
 * no 1x reading can fail it), and the runs they measure are the timed ones (no extra runs).
 */
export function measureScaling<I>(
  make: (size: number) => I,
  run: (input: I) => unknown,
  opts: { from: number; max: number; targetMs?: number; runs?: number; slackMs?: Slack },
): Scaling {
  const target = opts.targetMs ?? 8;
  let base = opts.from;
  let one = make(base);
  run(one); // warm up
  // Grow while the faster of two runs is under the target (one slow run must not stop the
  // growth early: the first run at a new size is the cold one, 2-20x its warm time in the
  // parser tables, compiling for the new shapes; a GC's pauses are left out of every reading).
  // A first run under the target already decides it: the second is timed only when it is not.
  // Until ci20 the fastest of three: the third run at the base the growth stops at (8-30 ms)
  // was 6-12% of three budget files' CPU, interleaved (26.4 and 26.0 s against 25.0 and 22.9).
  const under = () => timed(() => run(one)) < target || timed(() => run(one)) < target;
  while (base * 2 <= opts.max && under()) {
    base *= 2;
    one = make(base);
  }
  // No warm-up run at 4x (one 4x run, ~14% of a parser row's CPU): a first 4x run slowed by
  // its cold start is one of the three timed ones, whose median it does not move, and a slow
  // reading can only fail a first look (then measured again), never pass a quadratic.
  const four = make(base * 4);
  const t1: number[] = [];
  const t4: number[] = [];
  const m1: number[] = [];
  const m4: number[] = [];
  // A memory pair keeps both timed results alive, then takes its full GCs after both runs
  // (a forced GC's sweeping goes on in other threads, which would bill the next timed run): the
  // heap with both, with the 1x one only, with neither (this third one only when the 4x result
  // keeps more than the budget's constant: most rows keep less, and skip it).
  const pair = (memory: boolean) => {
    let r1: unknown;
    let r4: unknown;
    t1.push(
      timed(() => {
        r1 = run(one);
      }),
    );
    if (!memory) r1 = undefined;
    t4.push(
      timed(() => {
        r4 = run(four);
      }),
    );
    if (!memory) return;
    const both = heapAfterGc();
    // read after the GCs: each result is alive across them
    if (r4 === NEVER) throw new Error('unreachable');
    r4 = undefined;
    const withOne = heapAfterGc();
    if (r1 === NEVER) throw new Error('unreachable');
    const kept4 = Math.max(0, both - withOne);
    m4.push(kept4);
    // Within the budget's constant whatever the 1x result keeps (m4 <= 10 * m1 + the constant
    // holds for any m1 >= 0): the third full GC, which would measure m1, is not taken, and m1
    // counts as 0, which can only make the median of m1 smaller and the budget stricter.
    if (kept4 <= MEMORY_SLACK) {
      m1.push(0);
      return;
    }
    r1 = undefined;
    const without = heapAfterGc();
    m1.push(Math.max(0, withOne - without));
  };
  const runs = Math.max(1, opts.runs ?? 3);
  const now = (): Scaling => ({ t1: median(t1), t4: median(t4), m1: median(m1), m4: median(m4), base });
  // The first look stops early once its pairs so far decide it: with the pairs not yet taken
  // at their worst (a 4x run as slow as can be, a 1x run as fast), the medians of all `runs`
  // would still be within the budget. For 3 runs, after 2 pairs: the slower 4x run against the
  // faster 1x one (a median of three is at most the larger of any two and at least the
  // smaller). The memory pair is the last of those pairs, so it is taken either way. What it
  // returns then are those bounds, not medians: whatever a full first look would have read, a
  // caller's judgement of them is no looser. A row that is clearly linear saves a third of its
  // timed runs; one near the bound, or over it, is measured as before.
  const early = runs - (runs >> 1);
  const slack = opts.slackMs === undefined ? 5 : typeof opts.slackMs === 'number' ? opts.slackMs : 0;
  for (let k = 0; k < runs; k++) {
    pair(k === early - 1);
    if (k !== early - 1 || k === runs - 1) continue;
    const sure = { ...now(), ...worstMedians(t1, t4, runs) };
    const ok = withinBudget(sure, slack);
    if (ok.time && ok.memory) return sure;
  }
  const first = judge(now(), opts.slackMs ?? 5);
  const more = Math.max(first.time ? 0 : 4, first.memory ? 0 : 2);
  const moreMemory = first.memory ? 0 : 2;
  // the memory pairs last, as in the first look
  for (let k = 0; k < more; k++) pair(k >= more - moreMemory);
  return now();
}

/**
 * The medians of `n` samples when only these are taken: the largest t4 and the smallest t1 they
 * can reach with the rest at their worst (a t4 of +inf, a t1 of 0).
 */
function worstMedians(t1: number[], t4: number[], n: number): { t1: number; t4: number } {
  const m = n >> 1;
  const missing = n - t1.length;
  const up = [...t4].sort((a, b) => a - b);
  const down = [...t1].sort((a, b) => a - b);
  return { t4: up[m] ?? Number.POSITIVE_INFINITY, t1: down[m - missing] ?? 0 };
}

/**
 * The time budget's constant, in ms, or a function that computes it (a load probe, say), called
 * only when the time is over the budget without it.
 */
export type Slack = number | (() => number);

/** `withinBudget` with the slack computed only when the time needs it. */
export function judge(s: Scaling, slackMs: Slack): { time: boolean; memory: boolean } {
  const strict = withinBudget(s, 0);
  if (strict.time) return strict;
  return withinBudget(s, typeof slackMs === 'function' ? slackMs() : slackMs);
}

/** 4x the input costs at most about 4x: x10 plus a constant (ms; bytes). */
export function withinBudget(s: Scaling, slackMs: number): { time: boolean; memory: boolean } {
  return {
    time: s.t4 <= 10 * s.t1 + slackMs,
    memory: s.m4 <= 10 * s.m1 + MEMORY_SLACK,
  };
}

const MEMORY_SLACK = 4 * 1024 * 1024;

/**
 * CPU ms of one run less its GCs' share (`timed`): for a comparison whose runs each need a fresh
 * input built outside the timing (compareCosts).
 */
export function cpuMsOf(run: () => unknown): number {
  return timed(run);
}

export interface Comparison {
  /** Medians of the runs below, in CPU ms less GC (cpuMsOf). */
  a: number;
  b: number;
  as: number[];
  bs: number[];
  /** `within(a, b)` on the medians. */
  ok: boolean;
}

/**
 * Two costs compared, for a fix that makes one input cost what another does (20,000 keys against
 * 10, a full store against one with room): `a()` and `b()` each time one run (cpuMsOf, the input
 * built outside it) and return its ms. `runs` interleaved pairs (default 3: load drifts hit both
 * sides), medians, judged by `within(a, b)`; a first look over it is measured again with four more
 * pairs and judged on the medians of all, so one slow run (a GC the worker's heap grew into,
 * another process on the core) cannot fail a fix that holds, and a gap that is real (x10 and
 * more before each fix guarded this way) fails the thorough look too. A test's own min-of-three
 * or median-of-three read with the wall clock or process.cpuUsage failed the official CI (a
 * budget read 4.9 -> 59 ms where ~x4 was due).
 */
export function compareCosts(
  a: () => number,
  b: () => number,
  within: (a: number, b: number) => boolean,
  runs = 3,
): Comparison {
  const as: number[] = [];
  const bs: number[] = [];
  const pair = () => {
    as.push(a());
    bs.push(b());
  };
  const now = (): Comparison => {
    const ma = median(as);
    const mb = median(bs);
    return { a: ma, b: mb, as, bs, ok: within(ma, mb) };
  };
  for (let k = 0; k < runs; k++) pair();
  if (now().ok) return now();
  for (let k = 0; k < 4; k++) pair();
  return now();
}

/** A deterministic PRNG (mulberry32) for building inputs from a fast-check drawn seed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * measureScaling for work that finishes later, off the event loop (a request body decoded in
 * zlib's thread pool, a request through a server on loopback): CPU time of the whole process
 * around the awaited run less its GCs' share (`startClock`; cpuUsage counts every thread, the
 * pool's included; a worker runs one file at a time, so nothing else is billed), the base grown
 * to `targetMs` as there, then `runs` interleaved 1x/4x pairs, medians (the first look stopped
 * early as measureScaling's is), four more pairs when the first look is over the budget. Time
 * only: m1 and m4 are 0 (what such work keeps is its output, which the caller bounds: a body
 * limit).
 */
export async function measureScalingAsync<I>(
  make: (size: number) => I,
  run: (input: I) => Promise<unknown>,
  opts: { from: number; max: number; targetMs?: number; runs?: number; slackMs?: number },
): Promise<Scaling> {
  const timedAsync = async (input: I) => {
    const clock = startClock();
    await run(input);
    return clock();
  };
  const target = opts.targetMs ?? 8;
  let base = opts.from;
  let one = make(base);
  await run(one); // warm up
  while (base * 2 <= opts.max && (await timedAsync(one)) < target) {
    base *= 2;
    one = make(base);
  }
  const four = make(base * 4);
  const t1: number[] = [];
  const t4: number[] = [];
  const pair = async () => {
    t1.push(await timedAsync(one));
    t4.push(await timedAsync(four));
  };
  const now = (): Scaling => ({ t1: median(t1), t4: median(t4), m1: 0, m4: 0, base });
  // The first look stops early as measureScaling's does: once its pairs so far decide it with
  // the pairs not yet taken at their worst, it returns those bounds (no looser than the medians).
  const runs = Math.max(1, opts.runs ?? 3);
  const early = runs - (runs >> 1);
  const slack = opts.slackMs ?? 5;
  for (let k = 0; k < runs; k++) {
    await pair();
    if (k !== early - 1 || k === runs - 1) continue;
    const sure = { ...now(), ...worstMedians(t1, t4, runs) };
    if (withinBudget(sure, slack).time) return sure;
  }
  if (!withinBudget(now(), slack).time) for (let k = 0; k < 4; k++) await pair();
  return now();
}
