/**
 * The per-request series (request count, request and upstream latency) counted in plain objects
 * and added to their prom-client metric when something reads it (a scrape, the cluster primary
 * gathering the workers, a test calling get()). prom-client's own inc() / observe() validate and
 * hash the label values on every call, a child from labels() included: about 1.5 µs each, three
 * times per request. Here a request costs a few map lookups and additions; the label work is
 * done once per series per scrape.
 *
 * Histograms are added to through prom-client's per-series record (`hashMap`: non-cumulative
 * bucket counts, sum, count), which its public API cannot add to in bulk. The version is pinned
 * exactly in package.json; tests/server/library-internals.test.ts asserts each private field used
 * here (hashMap's record shape, upperBounds, labelNames, a collect assigned after construction)
 * and tests/server/hot-series.test.ts that the exposition equals prom-client's own observe() for
 * the same values, so an upgrade that changes them fails there.
 */
import type { Counter, Histogram } from 'prom-client';

interface CounterSeries {
  labels: Record<string, string>;
  pending: number;
  inc(n?: number): void;
}

interface HistogramSeries {
  labels: Record<string, string>;
  /** Observations per bucket since the last flush (prom-client's rule: first bound >= value). */
  counts: number[];
  sum: number;
  count: number;
  /** The series' key in prom-client's hashMap, once known. */
  key: string | undefined;
  observe(value: number): void;
}

/**
 * prom-client's internal per-series record of a histogram (15.x). These internals are what this
 * file reads and writes; tests/server/library-internals.test.ts checks them against the pinned
 * version through these very types.
 */
export interface HistogramRecord {
  labels: Record<string, string | number>;
  bucketValues: Record<number, number>;
  sum: number;
  count: number;
}

export interface HistogramInternals {
  hashMap: Record<string, HistogramRecord>;
  upperBounds: readonly number[];
  labelNames: readonly string[];
  zero(labels: Record<string, string>): void;
  collect?: () => unknown;
  reset(): void;
}

/** Label values -> series, without joining the values into a key on every request. */
function seriesTable<S>(
  labelNames: readonly string[],
  make: (labels: Record<string, string>) => S,
): { lookup: (values: readonly string[]) => S; all: S[] } {
  const root = new Map<string, unknown>();
  const all: S[] = [];
  const last = labelNames.length - 1;
  return {
    all,
    lookup(values) {
      let level = root;
      for (let i = 0; i < last; i++) {
        let next = level.get(values[i]!) as Map<string, unknown> | undefined;
        if (next === undefined) level.set(values[i]!, (next = new Map()));
        level = next;
      }
      let series = level.get(values[last]!) as S | undefined;
      if (series === undefined) {
        const labels: Record<string, string> = {};
        labelNames.forEach((name, i) => {
          labels[name] = values[i]!;
        });
        series = make(labels);
        level.set(values[last]!, series);
        all.push(series);
      }
      return series;
    },
  };
}

interface Hookable {
  collect?: () => unknown;
  reset(): void;
}

/**
 * Chains `flush` before whatever collect the metric already had, and `drop` after its reset()
 * (what was counted but not yet read is dropped with the rest, as prom-client's own would be).
 */
function hook(metric: Hookable, flush: () => void, drop: () => void): void {
  const collect = metric.collect;
  metric.collect = function (this: unknown) {
    flush();
    return collect?.call(this);
  };
  const reset = metric.reset;
  metric.reset = function (this: unknown) {
    reset.call(this);
    drop();
  };
}

export function hotCounter<T extends string>(counter: Counter<T>): (...values: string[]) => CounterSeries {
  const names = (counter as unknown as { labelNames: readonly string[] }).labelNames;
  const table = seriesTable<CounterSeries>(names, (labels) => ({
    labels,
    pending: 0,
    inc(n = 1) {
      this.pending += n;
    },
  }));
  hook(
    counter as unknown as Hookable,
    () => {
      for (const s of table.all) {
        if (s.pending === 0) continue;
        counter.inc(s.labels as Partial<Record<T, string>>, s.pending);
        s.pending = 0;
      }
    },
    () => {
      for (const s of table.all) s.pending = 0;
    },
  );
  return (...values) => table.lookup(values);
}

export function hotHistogram<T extends string>(
  histogram: Histogram<T>,
): (...values: string[]) => HistogramSeries {
  const h = histogram as unknown as HistogramInternals;
  const bounds = h.upperBounds;
  const table = seriesTable<HistogramSeries>(h.labelNames, (labels) => ({
    labels,
    counts: new Array<number>(bounds.length).fill(0),
    sum: 0,
    count: 0,
    key: undefined,
    observe(value) {
      // prom-client throws on these; a request must never fail over its own latency figure.
      if (!Number.isFinite(value)) return;
      this.sum += value;
      this.count++;
      for (let i = 0; i < bounds.length; i++) {
        if (value <= bounds[i]!) {
          this.counts[i]!++;
          return;
        }
      }
      // Above the last bound: only +Inf (derived from count), as in prom-client.
    },
  }));
  const clear = (s: HistogramSeries) => {
    s.counts.fill(0);
    s.sum = 0;
    s.count = 0;
  };
  hook(
    h,
    () => {
      for (const s of table.all) {
        if (s.count === 0) continue;
        const record = recordOf(h, s);
        for (let i = 0; i < bounds.length; i++) {
          const n = s.counts[i]!;
          if (n === 0) continue;
          record.bucketValues[bounds[i]!] = (record.bucketValues[bounds[i]!] ?? 0) + n;
        }
        record.sum += s.sum;
        record.count += s.count;
        clear(s);
      }
    },
    () => {
      for (const s of table.all) clear(s);
    },
  );
  return (...values) => table.lookup(values);
}

/** The series' record in prom-client, created (zeroed) on first use or after a reset(). */
function recordOf(h: HistogramInternals, s: HistogramSeries): HistogramRecord {
  if (s.key !== undefined) {
    const known = h.hashMap[s.key];
    if (known !== undefined) return known;
  }
  s.key = findKey(h, s.labels);
  if (s.key === undefined) {
    h.zero(s.labels);
    s.key = findKey(h, s.labels);
  }
  if (s.key === undefined) throw new Error('prom-client histogram record not found after zero()');
  return h.hashMap[s.key]!;
}

function findKey(h: HistogramInternals, labels: Record<string, string>): string | undefined {
  for (const key of Object.keys(h.hashMap)) {
    const record = h.hashMap[key]!;
    if (h.labelNames.every((name) => String(record.labels[name]) === labels[name])) return key;
  }
  return undefined;
}
