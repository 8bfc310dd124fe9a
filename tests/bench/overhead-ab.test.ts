/**
 * The A/B bench's statistics (bench/lib/overhead-ab.ts): the palindromic order, the pooled ratio
 * over paired cycles, its bootstrap interval and the three-way verdict.
 */
import { describe, expect, it } from 'vitest';
import {
  abVerdict,
  bootstrapRatioCi,
  type CycleCost,
  cycleOrder,
  fixedCostVerdict,
  groupCpuNs,
  hierarchicalRatioCi,
  median,
  mergeGenerations,
  type AbResult,
  type AbSlice,
  pooledRatio,
  readsPerRequest,
  seededRandom,
} from '../../bench/lib/overhead-ab.js';

/** Cycles of a base and a variant whose CPU per request is `ratio` times the base's, with noise. */
function cycles(n: number, ratio: number, noise: number, seed = 7): { base: CycleCost[]; v: CycleCost[] } {
  const rand = seededRandom(seed);
  const base: CycleCost[] = [];
  const v: CycleCost[] = [];
  for (let i = 0; i < n; i++) {
    // A drift shared by both sides of a cycle (the machine's load), and noise of each side's own.
    const drift = 1 + 0.5 * Math.sin(i);
    const req = 200 + Math.floor(rand() * 100);
    base.push({ cpu: req * 300 * drift * (1 + noise * (rand() - 0.5)), requests: req });
    v.push({ cpu: req * 300 * ratio * drift * (1 + noise * (rand() - 0.5)), requests: req });
  }
  return { base, v };
}

describe('cycleOrder', () => {
  it('is a palindrome of every variant, rotated every cycle', () => {
    expect(cycleOrder(3, 0)).toEqual([0, 1, 2, 2, 1, 0]);
    expect(cycleOrder(3, 1)).toEqual([1, 2, 0, 0, 2, 1]);
    expect(cycleOrder(3, 2)).toEqual([2, 0, 1, 1, 0, 2]);
    expect(cycleOrder(2, 1)).toEqual([1, 0, 0, 1]);
  });

  it("puts each variant's mean position in the cycle's middle, and balances who is doubled", () => {
    const doubled = [0, 0, 0];
    for (let c = 0; c < 3; c++) {
      const order = cycleOrder(3, c);
      for (let v = 0; v < 3; v++) {
        const at = order.flatMap((x, i) => (x === v ? [i] : []));
        expect((at[0]! + at[1]!) / 2).toBe(2.5);
      }
      doubled[order[2]!]!++;
      // No variant runs twice in a row across the boundary to the next cycle.
      expect(order[5]).not.toBe(cycleOrder(3, c + 1)[0]);
    }
    expect(doubled).toEqual([1, 1, 1]);
  });
});

describe('pooledRatio', () => {
  it('divides all CPU by all requests on each side, not the mean of per-cycle ratios', () => {
    const base = [
      { cpu: 100, requests: 1 },
      { cpu: 100, requests: 1 },
    ];
    const v = [
      { cpu: 300, requests: 1 },
      { cpu: 100, requests: 3 },
    ];
    // v: 400 over 4 requests = 100 per request; base: 200 over 2 = 100. The per-cycle ratios
    // are 3 and 1/3 (their mean 1.67).
    expect(pooledRatio(v, base)).toBe(1);
  });

  it('counts a cycle as often as the indices name it (the bootstrap resample)', () => {
    const base = [
      { cpu: 10, requests: 1 },
      { cpu: 10, requests: 1 },
    ];
    const v = [
      { cpu: 20, requests: 1 },
      { cpu: 10, requests: 1 },
    ];
    expect(pooledRatio(v, base, [0, 0])).toBe(2);
    expect(pooledRatio(v, base, [1, 1])).toBe(1);
    expect(pooledRatio(v, base, [0, 1])).toBe(1.5);
  });
});

describe('bootstrapRatioCi', () => {
  it('brackets the true ratio, narrowly when the sides are paired against a shared drift', () => {
    const { base, v } = cycles(30, 1.04, 0.04);
    const [lo, hi] = bootstrapRatioCi(v, base);
    expect(lo).toBeLessThan(1.04);
    expect(hi).toBeGreaterThan(1.04);
    // The drift (±50%) is shared within a cycle; only the ±2% own noise widens the interval.
    expect(hi - lo).toBeLessThan(0.03);
  });

  it('widens with the noise of each side and narrows with more cycles', () => {
    const w = (n: number, noise: number) => {
      const { base, v } = cycles(n, 1, noise);
      const [lo, hi] = bootstrapRatioCi(v, base, { resamples: 1000 });
      return hi - lo;
    };
    expect(w(30, 0.4)).toBeGreaterThan(3 * w(30, 0.04));
    expect(w(120, 0.4)).toBeLessThan(w(10, 0.4));
  });

  it('is the same interval for the same cycles (seeded), and contains the pooled ratio', () => {
    const { base, v } = cycles(20, 1.1, 0.2);
    const a = bootstrapRatioCi(v, base);
    expect(bootstrapRatioCi(v, base)).toEqual(a);
    expect(a[0]).toBeLessThanOrEqual(pooledRatio(v, base));
    expect(a[1]).toBeGreaterThanOrEqual(pooledRatio(v, base));
  });

  it('has no interval without cycles, or when the sides do not pair', () => {
    expect(bootstrapRatioCi([], []).every(Number.isNaN)).toBe(true);
    expect(bootstrapRatioCi([{ cpu: 1, requests: 1 }], []).every(Number.isNaN)).toBe(true);
  });
});

describe('hierarchicalRatioCi and mergeGenerations (process generations pooled)', () => {
  // Generations whose processes run a little faster or slower each (a variant's own speed), the
  // true ratio 1.00: each generation's cycles alone bracket its own process's ratio.
  const generations = (offsets: number[]) =>
    offsets.map((off, g) => {
      const { base, v } = cycles(30, 1 + off, 0.02, 11 + g);
      return { base, v };
    });

  it("widens with the spread between processes, which one pair's cycles cannot show", () => {
    const gs = generations([-0.04, 0.03, 0.01, -0.02, 0.02]);
    const [lo, hi] = hierarchicalRatioCi(
      gs.map((g) => g.v),
      gs.map((g) => g.base),
    );
    expect(lo).toBeLessThan(1);
    expect(hi).toBeGreaterThan(1);
    const [lo1, hi1] = bootstrapRatioCi(gs[0]!.v, gs[0]!.base);
    expect(hi1).toBeLessThan(1); // one pair alone: a false "below 1"
    expect(hi - lo).toBeGreaterThan(2 * (hi1 - lo1));
    // Processes alike: about as narrow as the cycles of all of them.
    const same = generations([0, 0, 0, 0, 0]);
    const [slo, shi] = hierarchicalRatioCi(
      same.map((g) => g.v),
      same.map((g) => g.base),
    );
    expect(shi - slo).toBeLessThan(hi - lo);
    expect(hierarchicalRatioCi([], []).every(Number.isNaN)).toBe(true);
  });

  it('pools every cycle of every generation, and keeps one generation as it was', () => {
    const gs = generations([0.1, 0.0]);
    const result = (g: { base: CycleCost[]; v: CycleCost[] }): AbResult => ({
      workload: 'w',
      title: 't',
      cycles: g.base.length,
      sliceRequests: 1,
      measuredMs: 10,
      slices: [],
      variants: [
        {
          name: 'base',
          cpuUsPerRequest: [],
          pooledUs: 0,
          ratios: [],
          medianRatio: 1,
          ratio: 1,
          ci: [1, 1],
          costs: [g.base],
          readsPerRequest: 0,
          requests: 1,
          errors: 0,
        },
        {
          name: 'v',
          cpuUsPerRequest: [],
          pooledUs: 0,
          ratios: [1],
          medianRatio: 1,
          ratio: pooledRatio(g.v, g.base),
          ci: [0, 2],
          costs: [g.v],
          readsPerRequest: 0,
          requests: 1,
          errors: 0,
        },
      ],
    });
    const one = result(gs[0]!);
    expect(mergeGenerations([one])).toBe(one);
    const merged = mergeGenerations(gs.map(result));
    expect(merged.cycles).toBe(60);
    expect(merged.variants[1]!.ratio).toBeCloseTo(
      pooledRatio([...gs[0]!.v, ...gs[1]!.v], [...gs[0]!.base, ...gs[1]!.base]),
      12,
    );
    expect(merged.variants[1]!.costs).toHaveLength(2);
    const [lo, hi] = merged.variants[1]!.ci;
    expect(lo).toBeLessThan(merged.variants[1]!.ratio);
    expect(hi).toBeGreaterThan(merged.variants[1]!.ratio);
  });
});

describe('readsPerRequest', () => {
  it("is one variant's read syscalls over its requests, over every slice of every cycle", () => {
    const slice = (cycle: number, variant: number, requests: number, reads: number): AbSlice => ({
      cycle,
      variant,
      atMs: 0,
      wallMs: 1,
      requests,
      errors: 0,
      cpuNs: 1,
      ticks: 0,
      machineTicks: 0,
      reads,
    });
    const slices = [slice(0, 0, 32, 3232), slice(0, 1, 32, 64), slice(1, 1, 32, 96), slice(1, 0, 32, 3168)];
    expect(readsPerRequest(slices, 0)).toBe(100);
    expect(readsPerRequest(slices, 1)).toBe(2.5);
    expect(readsPerRequest(slices, 2)).toBe(0);
  });
});

describe('abVerdict', () => {
  it('passes only when the whole interval is under the target, fails only when all of it is over', () => {
    expect(abVerdict([0.98, 1.04], 1.05)).toBe('PASS');
    expect(abVerdict([0.98, 1.05], 1.05)).toBe('PASS');
    expect(abVerdict([1.02, 1.08], 1.05)).toBe('inconclusive');
    expect(abVerdict([1.051, 1.2], 1.05)).toBe('FAIL');
    // A median under the target with an interval across it is not a pass.
    expect(abVerdict([0.9, 1.3], 1.05)).toBe('inconclusive');
  });
});

describe('median', () => {
  it('is the middle value, or the mean of the two middle ones', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });
});

describe('groupCpuNs', () => {
  it.runIf(process.platform === 'linux')("grows by this process's own CPU, to the nanosecond", () => {
    const before = groupCpuNs([process.pid]);
    const t = process.cpuUsage();
    let x = 0;
    while (process.cpuUsage(t).user < 30_000) x += Math.sqrt(x + 1);
    const spent = groupCpuNs([process.pid]) - before;
    expect(x).toBeGreaterThan(0);
    expect(spent).toBeGreaterThan(25e6);
    // Not in 10 ms steps, as /proc/<pid>/stat's ticks are.
    expect(spent % 1e7).not.toBe(0);
  });

  it('counts a pid that is gone as 0', () => {
    expect(groupCpuNs([2 ** 22 + 12345])).toBe(0);
  });
});

describe('fixedCostVerdict', () => {
  // The figures of the quiet run of 5 December 2026, 14:47: the 8-event stream's base 268 µs,
  // tracing 1.159x [1.107, 1.209]; the agent turn's base ~3,852 µs, 5% of it ~193 µs.
  it('judges the added µs and its interval, scaled from the ratio, against the limit', () => {
    const r = fixedCostVerdict({ pooledUs: 268 * 1.159, ci: [1.107, 1.209] }, 268, 0.05 * 3852);
    expect(r.addedUs).toBeCloseTo(42.6, 1);
    expect(r.ci[0]).toBeCloseTo(28.7, 1);
    expect(r.ci[1]).toBeCloseTo(56.0, 1);
    expect(r.verdict).toBe('PASS');
  });

  it('fails when the whole interval is above, and straddling is inconclusive', () => {
    expect(fixedCostVerdict({ pooledUs: 330, ci: [1.2, 1.3] }, 268, 40).verdict).toBe('FAIL');
    expect(fixedCostVerdict({ pooledUs: 310, ci: [1.1, 1.2] }, 268, 40).verdict).toBe('inconclusive');
  });

  it('never passes with no limit (no agent turn in the run)', () => {
    expect(fixedCostVerdict({ pooledUs: 270, ci: [1.0, 1.01] }, 268, Number.NaN).verdict).not.toBe('PASS');
  });
});
