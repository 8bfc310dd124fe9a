/**
 * What a feature costs toolproof per request, A against B in one run: toolproof processes that
 * differ only in one setting (the capture ring on or off, tracing on or off), the same requests
 * sent to each in turn, and each process's own CPU time (user + sys of all its threads) per
 * request.
 *
 * The method (bench/README.md, "How the A/B is judged"): many short slices of load in cycles
 * whose order is a palindrome (0 1 2 2 1 0, the next cycle 2 1 0 0 1 2), so a drift of the shared
 * machine within a cycle falls on every variant alike; each process's CPU is read to the
 * nanosecond from /proc/<pid>/task/<tid>/schedstat (the tick counts of /proc/<pid>/stat are 10 ms
 * steps) and counted from the start of its slice to the start of its next one, so work it does
 * after its slice (a collection, a timer's export) is its own. The figure is the pooled ratio
 * (all of a variant's CPU over all its requests, against the base's), with a 95% bootstrap
 * interval over the cycles (paired: a resampled cycle brings every variant's slices of that
 * cycle); the verdict is PASS only when the whole interval is under the target, FAIL when it is
 * all above, and inconclusive when it straddles it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { Pool } from 'undici';
import { prng } from '../../tests/support/cost-scaling.js';
import { runLoad } from './load.js';
import { groupCpuSplit, machineTicks } from './procs.js';

export interface AbVariant {
  /** e.g. 'capture off', 'capture on'. */
  name: string;
  pool: Pool;
  /** The pids whose CPU counts (toolproof, its workers). */
  pids: number[];
}

export interface AbWorkload {
  id: string;
  title: string;
  body: Buffer;
  stream: boolean;
  concurrency: number;
  /**
   * One slice of load on one variant: this many requests (every variant serves the same count,
   * whatever the machine's load; a slice of a fixed time held 8 agent turns on a loaded box).
   */
  sliceRequests: number;
  /** Stop starting cycles once the measured ones have run this long (at least minCycles). */
  budgetMs?: number;
  minCycles?: number;
  /** Load on each variant before the measured cycles. */
  warmupMs: number;
  /**
   * Cycles run as the measured ones are, after the warm-up, and not counted: the processes' JIT
   * and heaps settle (the first measured cycles of a fresh process cost up to 2-4x the later ones).
   */
  burnInCycles?: number;
}

/** One slice of load on one variant (kept in the JSON, to judge where the spread comes from). */
export interface AbSlice {
  cycle: number;
  variant: number;
  /** ms since the first measured slice began. */
  atMs: number;
  wallMs: number;
  requests: number;
  errors: number;
  /** The variant's CPU during the slice itself, ns (schedstat). */
  cpuNs: number;
  /** The same from /proc/<pid>/stat, clock ticks (1/CLK_TCK s). */
  ticks: number;
  /** Busy CPU of the whole machine during the slice, clock ticks (all processes, ours too). */
  machineTicks: number;
  /**
   * The variant's read syscalls during the slice (/proc/<pid>/io syscr: its sockets' reads, and
   * any other): how many reads a request's events reached it in (a paced stream's ~one an event).
   */
  reads: number;
}

export interface AbVariantResult {
  name: string;
  /** CPU µs per request of each cycle (slice start to next slice start), in cycle order. */
  cpuUsPerRequest: number[];
  /** All its CPU over all its requests, µs. */
  pooledUs: number;
  /** This variant / the base, per cycle (the base itself: all 1). */
  ratios: number[];
  /** Median of the per-cycle ratios (shown beside the pooled ratio; not judged). */
  medianRatio: number;
  /** Pooled CPU per request / the base's: the figure judged. */
  ratio: number;
  /** 95% bootstrap interval of `ratio`, resampling cycles (and processes: mergeGenerations). */
  ci: [number, number];
  /** Per cycle: its CPU (ns) and requests, as pooled; per process generation when merged. */
  costs: CycleCost[][];
  /** Its read syscalls over its requests, during its slices (AbSlice.reads). */
  readsPerRequest: number;
  requests: number;
  errors: number;
  firstError?: string;
}

export interface AbResult {
  workload: string;
  title: string;
  cycles: number;
  sliceRequests: number;
  /** ms the measured cycles took. */
  measuredMs: number;
  /** The first variant is the base every ratio is against. */
  variants: AbVariantResult[];
  slices: AbSlice[];
}

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/**
 * The order of the variants in cycle `c`: a palindrome (each variant's mean position is the
 * cycle's middle, so a drift that is linear over a cycle hits all alike) of the variants rotated
 * by `c`, so that over `variants` cycles each one is as often at the edges, next to itself in the
 * middle and after each other one.
 */
export function cycleOrder(variants: number, c: number): number[] {
  const half = Array.from({ length: variants }, (_, i) => (i + c) % variants);
  return [...half, ...[...half].reverse()];
}

/** Per cycle: a variant's CPU (any unit) and the requests it served. */
export interface CycleCost {
  cpu: number;
  requests: number;
}

/**
 * The pooled ratio of `v` to `base` over the cycles `idx` (indices into both, repeats allowed):
 * (sum of v's CPU / sum of v's requests) / (the same for base).
 */
export function pooledRatio(
  v: readonly CycleCost[],
  base: readonly CycleCost[],
  idx: readonly number[] = v.map((_, i) => i),
): number {
  let vc = 0;
  let vr = 0;
  let bc = 0;
  let br = 0;
  for (const i of idx) {
    vc += v[i]!.cpu;
    vr += v[i]!.requests;
    bc += base[i]!.cpu;
    br += base[i]!.requests;
  }
  return vc / vr / (bc / br);
}

/** A small seeded generator (mulberry32, shared with the tests' inputs), so one set of cycles always gives one interval. */
export const seededRandom: (seed: number) => () => number = prng;

/** Nearest-rank quantile of an ascending array (q in 0..1). */
function quantile(sorted: readonly number[], q: number): number {
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i]!;
}

/**
 * Percentile bootstrap interval of pooledRatio(v, base): cycles resampled with replacement,
 * each resample taking the same cycles from both (the pairing), `resamples` times.
 */
export function bootstrapRatioCi(
  v: readonly CycleCost[],
  base: readonly CycleCost[],
  { level = 0.95, resamples = 4000, seed = 1 } = {},
): [number, number] {
  const n = v.length;
  if (n === 0 || base.length !== n) return [Number.NaN, Number.NaN];
  const rand = seededRandom(seed);
  const idx = new Array<number>(n);
  const out: number[] = [];
  for (let b = 0; b < resamples; b++) {
    for (let i = 0; i < n; i++) idx[i] = Math.floor(rand() * n);
    out.push(pooledRatio(v, base, idx));
  }
  out.sort((a, b) => a - b);
  const tail = (1 - level) / 2;
  return [quantile(out, tail), quantile(out, 1 - tail)];
}

export type AbVerdict = 'PASS' | 'FAIL' | 'inconclusive';

/** PASS when the whole interval is at or under the target, FAIL when all of it is above. */
export function abVerdict(ci: readonly [number, number], target: number): AbVerdict {
  if (ci[1] <= target) return 'PASS';
  if (ci[0] > target) return 'FAIL';
  return 'inconclusive';
}

/**
 * A cost that is fixed per request, judged in µs: the variant's added CPU per request over the
 * base's and its interval (the ratio's interval scaled by the base), against `limitUs`.
 */
export function fixedCostVerdict(
  variant: { pooledUs: number; ci: readonly [number, number] },
  baseUs: number,
  limitUs: number,
): { addedUs: number; ci: [number, number]; verdict: AbVerdict } {
  const ci: [number, number] = [(variant.ci[0] - 1) * baseUs, (variant.ci[1] - 1) * baseUs];
  return { addedUs: variant.pooledUs - baseUs, ci, verdict: abVerdict(ci, limitUs) };
}

/** Run time of every thread of `pids`, ns (schedstat's first field, summed over /proc/<pid>/task). */
export function groupCpuNs(pids: readonly number[]): number {
  let ns = 0;
  for (const pid of pids) {
    let tids: string[];
    try {
      tids = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue; // exited
    }
    for (const tid of tids) {
      try {
        const s = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8');
        ns += Number(s.slice(0, s.indexOf(' ')));
      } catch {
        // the thread ended meanwhile
      }
    }
  }
  return ns;
}

/** Read syscalls of `pids` so far (/proc/<pid>/io's syscr, all threads; an exited one counts 0). */
export function groupReadSyscalls(pids: readonly number[]): number {
  let n = 0;
  for (const pid of pids) {
    try {
      const io = readFileSync(`/proc/${pid}/io`, 'utf8');
      n += Number(/^syscr: (\d+)$/m.exec(io)?.[1] ?? 0);
    } catch {
      // exited
    }
  }
  return n;
}

/** Read syscalls over requests of variant `i`'s slices. */
export function readsPerRequest(slices: readonly AbSlice[], i: number): number {
  let reads = 0;
  let requests = 0;
  for (const s of slices)
    if (s.variant === i) {
      reads += s.reads;
      requests += s.requests;
    }
  return reads / Math.max(1, requests);
}

const groupTicks = (pids: readonly number[]) => {
  const c = groupCpuSplit(pids);
  return c.user + c.sys;
};

/**
 * Measures `variants` (the first is the base) on one workload: `cycles` palindromic cycles, or
 * fewer when `w.budgetMs` runs out first (never fewer than `w.minCycles`).
 */
export async function measureAb(
  variants: readonly AbVariant[],
  w: AbWorkload,
  cycles: number,
): Promise<AbResult> {
  const run = (v: AbVariant, bound: { durationMs: number } | { requests: number }) =>
    runLoad({ pool: v.pool, body: w.body, stream: w.stream, concurrency: w.concurrency, ...bound });
  const slice = (v: AbVariant) => run(v, { requests: w.sliceRequests });
  for (const v of variants) await run(v, { durationMs: w.warmupMs });
  const n = variants.length;
  for (let c = 0; c < (w.burnInCycles ?? 0); c++) for (const i of cycleOrder(n, c)) await slice(variants[i]!);
  // Per variant: the CPU reading at the start of each of its cycles (its first slice in it).
  const marks = variants.map(() => [] as number[]);
  const perCycle = variants.map(() => [] as CycleCost[]);
  const totals = variants.map(() => ({
    requests: 0,
    errors: 0,
    firstError: undefined as string | undefined,
  }));
  const slices: AbSlice[] = [];
  const t0 = performance.now();
  let done = 0;
  for (let c = 0; c < cycles; c++) {
    if (w.budgetMs !== undefined && c >= (w.minCycles ?? 2) && performance.now() - t0 > w.budgetMs) break;
    done++;
    const served = new Array<number>(n).fill(0);
    for (const i of cycleOrder(n, c)) {
      const v = variants[i]!;
      const before = groupCpuNs(v.pids);
      if (marks[i]!.length === c) marks[i]!.push(before);
      const ticksBefore = groupTicks(v.pids);
      const machineBefore = machineTicks();
      const readsBefore = groupReadSyscalls(v.pids);
      const start = performance.now();
      const res = await slice(v);
      const wallMs = performance.now() - start;
      slices.push({
        cycle: c,
        variant: i,
        atMs: start - t0,
        wallMs,
        requests: res.count - res.errors,
        errors: res.errors,
        cpuNs: groupCpuNs(v.pids) - before,
        ticks: groupTicks(v.pids) - ticksBefore,
        machineTicks: machineTicks() - machineBefore,
        reads: groupReadSyscalls(v.pids) - readsBefore,
      });
      served[i]! += res.count - res.errors;
      totals[i]!.requests += res.count;
      totals[i]!.errors += res.errors;
      totals[i]!.firstError ??= res.firstError;
    }
    for (let i = 0; i < n; i++) perCycle[i]!.push({ cpu: Number.NaN, requests: served[i]! });
  }
  const measuredMs = performance.now() - t0;
  // Let what the last slices left (collections, a batch export) finish before the last reading.
  await new Promise((r) => setTimeout(r, 300));
  for (let i = 0; i < n; i++) {
    const m = [...marks[i]!, groupCpuNs(variants[i]!.pids)];
    for (let c = 0; c < done; c++) perCycle[i]![c]!.cpu = m[c + 1]! - m[c]!;
  }
  const base = perCycle[0]!;
  return {
    workload: w.id,
    title: w.title,
    cycles: done,
    sliceRequests: w.sliceRequests,
    measuredMs,
    variants: variants.map((v, i) => {
      const own = perCycle[i]!;
      const us = own.map((x) => x.cpu / 1000 / Math.max(1, x.requests));
      const ratios = us.map((x, c) => x / (base[c]!.cpu / 1000 / Math.max(1, base[c]!.requests)));
      const t = totals[i]!;
      const requests = own.reduce((a, x) => a + x.requests, 0);
      return {
        name: v.name,
        cpuUsPerRequest: us,
        pooledUs: own.reduce((a, x) => a + x.cpu, 0) / 1000 / Math.max(1, requests),
        ratios,
        medianRatio: median(ratios),
        ratio: pooledRatio(own, base),
        ci: i === 0 ? [1, 1] : bootstrapRatioCi(own, base),
        costs: [own],
        readsPerRequest: readsPerRequest(slices, i),
        requests: t.requests,
        errors: t.errors,
        ...(t.firstError ? { firstError: t.firstError } : {}),
      };
    }),
    slices,
  };
}

/**
 * Percentile bootstrap interval of the pooled ratio over several process generations (each a
 * fresh process per variant, measured in cycles of its own): generations resampled with
 * replacement, then cycles within each, paired as in bootstrapRatioCi. A process's own speed
 * (its heap's layout, what its JIT made) shifts all its cycles alike, so an interval over the
 * cycles of one pair of processes says nothing of it: an A/A of two identical processes read
 * 0.963x [0.908, 1.018] (6 December 2026), a spread the size of the 5% judged.
 */
export function hierarchicalRatioCi(
  v: readonly (readonly CycleCost[])[],
  base: readonly (readonly CycleCost[])[],
  { level = 0.95, resamples = 4000, seed = 1 } = {},
): [number, number] {
  const g = v.length;
  if (g === 0 || base.length !== g) return [Number.NaN, Number.NaN];
  const rand = seededRandom(seed);
  const out: number[] = [];
  for (let b = 0; b < resamples; b++) {
    let vc = 0;
    let vr = 0;
    let bc = 0;
    let br = 0;
    for (let k = 0; k < g; k++) {
      const gi = Math.floor(rand() * g);
      const vs = v[gi]!;
      const bs = base[gi]!;
      for (let i = 0; i < vs.length; i++) {
        const c = Math.floor(rand() * vs.length);
        vc += vs[c]!.cpu;
        vr += vs[c]!.requests;
        bc += bs[c]!.cpu;
        br += bs[c]!.requests;
      }
    }
    out.push(vc / vr / (bc / br));
  }
  out.sort((a, b) => a - b);
  const tail = (1 - level) / 2;
  return [quantile(out, tail), quantile(out, 1 - tail)];
}

/**
 * One workload's results from several process generations as one: every cycle pooled, the
 * interval over generations and their cycles (hierarchicalRatioCi). One generation: as it was.
 */
export function mergeGenerations(results: readonly AbResult[]): AbResult {
  if (results.length === 1) return results[0]!;
  const first = results[0]!;
  let offset = 0;
  const slices: AbSlice[] = [];
  for (const r of results) {
    for (const s of r.slices) slices.push({ ...s, cycle: s.cycle + offset });
    offset += r.cycles;
  }
  const baseCosts = results.flatMap((r) => r.variants[0]!.costs);
  return {
    workload: first.workload,
    title: first.title,
    cycles: offset,
    sliceRequests: first.sliceRequests,
    measuredMs: results.reduce((a, r) => a + r.measuredMs, 0),
    slices,
    variants: first.variants.map((v0, i) => {
      const costs = results.flatMap((r) => r.variants[i]!.costs);
      const all = costs.flat();
      const baseAll = baseCosts.flat();
      const ratios = results.flatMap((r) => r.variants[i]!.ratios);
      const requests = all.reduce((a, x) => a + x.requests, 0);
      const firstError = results.map((r) => r.variants[i]!.firstError).find((e) => e !== undefined);
      return {
        name: v0.name,
        cpuUsPerRequest: results.flatMap((r) => r.variants[i]!.cpuUsPerRequest),
        pooledUs: all.reduce((a, x) => a + x.cpu, 0) / 1000 / Math.max(1, requests),
        ratios,
        medianRatio: median(ratios),
        ratio: pooledRatio(all, baseAll),
        ci: i === 0 ? [1, 1] : hierarchicalRatioCi(costs, baseCosts),
        costs,
        readsPerRequest: readsPerRequest(slices, i),
        requests: results.reduce((a, r) => a + r.variants[i]!.requests, 0),
        errors: results.reduce((a, r) => a + r.variants[i]!.errors, 0),
        ...(firstError ? { firstError } : {}),
      };
    }),
  };
}
