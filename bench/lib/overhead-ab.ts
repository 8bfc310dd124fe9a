/**
 * What a feature costs toolproof per request, A against B in one run: toolproof processes that
 * differ only in one setting (the capture ring on or off, tracing on or off), the same requests
 * sent to each in turn, the order rotating every round, and each process's own CPU time
 * (/proc/<pid>/stat) per request. Each round gives a ratio per variant against the base measured
 * in the same round; the report is the median of those ratios (and of the µs per request), so
 * the drift of a shared machine hits both sides of every ratio alike and one disturbed round
 * does not move the figure.
 */
import type { Pool } from 'undici';
import { runLoad } from './load.js';
import { CLK_TCK, groupCpuSplit } from './procs.js';

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
  durationMs: number;
  warmupMs: number;
}

export interface AbVariantResult {
  name: string;
  /** CPU µs per request of each round, in round order. */
  cpuUsPerRequest: number[];
  /** Median of the rounds. */
  medianUs: number;
  /** This variant / the base, per round (the base itself: all 1). */
  ratios: number[];
  /** Median of the per-round ratios. */
  medianRatio: number;
  requests: number;
  errors: number;
  firstError?: string;
}

export interface AbResult {
  workload: string;
  title: string;
  rounds: number;
  /** The first variant is the base every ratio is against. */
  variants: AbVariantResult[];
}

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

const cpuUs = (pids: readonly number[]) => {
  const c = groupCpuSplit(pids);
  return ((c.user + c.sys) / CLK_TCK) * 1e6;
};

/** Measures `variants` (the first is the base) on one workload, `rounds` interleaved rounds. */
export async function measureAb(
  variants: readonly AbVariant[],
  w: AbWorkload,
  rounds: number,
): Promise<AbResult> {
  const load = (v: AbVariant, durationMs: number) =>
    runLoad({ pool: v.pool, body: w.body, stream: w.stream, concurrency: w.concurrency, durationMs });
  for (const v of variants) await load(v, w.warmupMs);
  const perRound = variants.map(() => [] as number[]);
  const totals = variants.map(() => ({
    requests: 0,
    errors: 0,
    firstError: undefined as string | undefined,
  }));
  for (let r = 0; r < rounds; r++) {
    const order = variants.map((_, i) => (i + r) % variants.length);
    for (const i of order) {
      const v = variants[i]!;
      const before = cpuUs(v.pids);
      const res = await load(v, w.durationMs);
      const used = cpuUs(v.pids) - before;
      perRound[i]!.push(used / Math.max(1, res.count - res.errors));
      totals[i]!.requests += res.count;
      totals[i]!.errors += res.errors;
      totals[i]!.firstError ??= res.firstError;
    }
  }
  const base = perRound[0]!;
  return {
    workload: w.id,
    title: w.title,
    rounds,
    variants: variants.map((v, i) => {
      const ratios = perRound[i]!.map((x, r) => x / base[r]!);
      const t = totals[i]!;
      return {
        name: v.name,
        cpuUsPerRequest: perRound[i]!,
        medianUs: median(perRound[i]!),
        ratios,
        medianRatio: median(ratios),
        requests: t.requests,
        errors: t.errors,
        ...(t.firstError ? { firstError: t.firstError } : {}),
      };
    }),
  };
}
