/**
 * Budget checks for the surface tables (tests/hardening/surface-budgets.test.ts): an input scaled
 * 4x along one size must cost at most about 4x, in time and in retained memory. Robust on a
 * loaded 2-core box: the base size is grown until one run takes a measurable time, 1x and 4x
 * runs are interleaved (load drifts hit both), medians of CPU time are compared, and the bound is x10 plus
 * a small constant: linear work gives x4 (x6-8 with noise), a quadratic x16, so it is flagged
 * without flaking. Retained memory: the heap after a full GC with the result held, minus the heap
 * after one with it released.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose_gc');
const gc = runInNewContext('gc') as () => void;

export interface Scaling {
  /** Median CPU ms of one run at 1x and 4x. */
  t1: number;
  t4: number;
  /** Median bytes retained by one result at 1x and 4x. */
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
 * CPU ms of one run (user + system of this process): other processes on a loaded box stretch
 * the wall clock, not this process's CPU time.
 */
function timed(run: () => unknown): number {
  const c0 = process.cpuUsage();
  run();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000;
}

/**
 * Bytes one result retains: the heap after a full GC with the result alive, minus the heap after
 * another with it released. Garbage the call leaves that V8 frees late (a WeakMap memo keyed by the
 * input's schema lives until a later GC) is in both and cancels out; what the result holds is not.
 */
function retained(run: () => unknown): number {
  let result: unknown = run();
  gc();
  const held = process.memoryUsage().heapUsed;
  // read after the GC: the result is alive across it
  if (result === Symbol.for('never')) throw new Error('unreachable');
  result = undefined;
  gc();
  return Math.max(0, held - process.memoryUsage().heapUsed);
}

/** Bytes retained by `one`'s and `four`'s results (four full GCs). */
function retainedPair(one: () => unknown, four: () => unknown): [number, number] {
  return [retained(one), retained(four)];
}

/**
 * `make(size)` builds an input of `size` units (deterministic for a size); `run(input)` is the
 * surface, returning what it keeps. The base size starts at `from` and doubles (up to `max`)
 * until a 1x run takes `targetMs` of CPU (default 8: the 4x run then takes ~32 ms, a quadratic
 * ~128 ms, far apart from the budget's constant).
 *
 * Cheap first, thorough when it matters: `runs` interleaved time pairs (default 3) and one
 * memory pair; only when that first look is over `withinBudget` are more pairs measured (7 for
 * time, 3 for memory, medians of all), so a noisy first look cannot fail a linear surface and a
 * real quadratic fails the thorough look too. A full GC costs in proportion to the worker's
 * whole heap, so the memory pairs are the expensive part.
 */
export function measureScaling<I>(
  make: (size: number) => I,
  run: (input: I) => unknown,
  opts: { from: number; max: number; targetMs?: number; runs?: number; slackMs?: number },
): Scaling {
  const target = opts.targetMs ?? 8;
  let base = opts.from;
  let one = make(base);
  run(one); // warm up
  // the fastest of three: one slow run (a GC, a compile) must not stop the growth early
  while (
    base * 2 <= opts.max &&
    Math.min(
      timed(() => run(one)),
      timed(() => run(one)),
      timed(() => run(one)),
    ) < target
  ) {
    base *= 2;
    one = make(base);
  }
  const four = make(base * 4);
  run(four);
  const t1: number[] = [];
  const t4: number[] = [];
  const m1: number[] = [];
  const m4: number[] = [];
  const timePairs = (n: number) => {
    for (let k = 0; k < n; k++) {
      t1.push(timed(() => run(one)));
      t4.push(timed(() => run(four)));
    }
  };
  const memoryPairs = (n: number) => {
    for (let k = 0; k < n; k++) {
      const [a, b] = retainedPair(
        () => run(one),
        () => run(four),
      );
      m1.push(a);
      m4.push(b);
    }
  };
  timePairs(opts.runs ?? 3);
  memoryPairs(1);
  const now = (): Scaling => ({ t1: median(t1), t4: median(t4), m1: median(m1), m4: median(m4), base });
  const first = withinBudget(now(), opts.slackMs ?? 5);
  if (!first.time) timePairs(4);
  if (!first.memory) memoryPairs(2);
  return now();
}

/** 4x the input costs at most about 4x: x10 plus a constant (ms; bytes). */
export function withinBudget(s: Scaling, slackMs: number): { time: boolean; memory: boolean } {
  return {
    time: s.t4 <= 10 * s.t1 + slackMs,
    memory: s.m4 <= 10 * s.m1 + 4 * 1024 * 1024,
  };
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
