import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { hotCounter, hotHistogram } from '../../server/hot-series.js';
import { createMetrics } from '../../server/metrics.js';
import { seededRng } from './test-utils.js';

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];

/**
 * Sums differ in the last bits with the order of additions: compared to 9 significant digits.
 * Series order is not part of the format (after a reset, prom-client lists them in the order of
 * their next observation, the hot path in the order first seen): lines are sorted.
 */
const roundSums = (text: string) =>
  text
    .replace(/(_sum\{[^}]*\} )(\S+)/g, (_, head: string, v: string) => head + Number(v).toPrecision(9))
    .split('\n')
    .sort()
    .join('\n');

function pair() {
  const make = () => {
    const registry = new Registry();
    const histogram = new Histogram({
      name: 'h_seconds',
      help: 'h',
      labelNames: ['model', 'route'] as const,
      buckets: BUCKETS,
      registers: [registry],
    });
    const counter = new Counter({
      name: 'c_total',
      help: 'c',
      labelNames: ['model', 'status'] as const,
      registers: [registry],
    });
    return { registry, histogram, counter };
  };
  return { plain: make(), hot: make() };
}

describe('hot series: counted locally, handed to prom-client when read', () => {
  for (const seed of [1, 2, 3, 4, 5]) {
    it(`render the same exposition as prom-client's own inc()/observe() (seed ${seed})`, async () => {
      const { plain, hot } = pair();
      const observe = hotHistogram(hot.histogram);
      const inc = hotCounter(hot.counter);
      const next = seededRng(seed);
      const models = ['a', 'b', 'c"quoted'];
      for (let i = 0; i < 2_000; i++) {
        const model = models[Math.floor(next() * models.length)]!;
        const route = next() < 0.5 ? 'chat' : 'other';
        // Exact bounds, values above the last bound and zero all occur.
        const r = next();
        const value =
          r < 0.1 ? BUCKETS[Math.floor(next() * BUCKETS.length)]! : r < 0.15 ? 3 : r < 0.2 ? 0 : next();
        plain.histogram.labels(model, route).observe(value);
        observe(model, route).observe(value);
        const status = next() < 0.9 ? '200' : 'aborted';
        plain.counter.labels(model, status).inc();
        inc(model, status).inc();
        // Reads in the middle flush what was counted so far; a reset drops everything, as in prom-client.
        if (i % 397 === 0)
          expect(roundSums(await hot.registry.metrics())).toBe(roundSums(await plain.registry.metrics()));
        if (i === 1_000) {
          plain.registry.resetMetrics();
          hot.registry.resetMetrics();
        }
      }
      expect(roundSums(await hot.registry.metrics())).toBe(roundSums(await plain.registry.metrics()));
      // The JSON the cluster primary gathers from each worker, sums to within rounding.
      const json = (r: Registry) =>
        r.getMetricsAsJSON().then((ms) =>
          ms.map((m) => ({
            ...m,
            values: m.values
              .map((v) => ({ ...v, value: Number(v.value.toPrecision(9)) }))
              .sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1)),
          })),
        );
      expect(await json(hot.registry)).toEqual(await json(plain.registry));
    });
  }

  it('counts nothing before the first read and is read once (no double counting)', async () => {
    const { hot } = pair();
    hotCounter(hot.counter)('m', '200').inc(3);
    hotHistogram(hot.histogram)('m', 'chat').observe(0.02);
    const first = await hot.registry.metrics();
    expect(first).toContain('c_total{model="m",status="200"} 3');
    expect(first).toContain('h_seconds_count{model="m",route="chat"} 1');
    expect(await hot.registry.metrics()).toBe(first);
  });

  it("a non-finite latency is dropped instead of throwing in the request's path", async () => {
    const { hot } = pair();
    const series = hotHistogram(hot.histogram)('m', 'chat');
    expect(() => series.observe(Number.NaN)).not.toThrow();
    series.observe(0.2);
    expect(await hot.registry.metrics()).toContain('h_seconds_count{model="m",route="chat"} 1');
  });

  it("toolproof's per-request series show on /metrics through the hot path", async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    metrics.hot.requests('m1', 'chat/completions', '200', 'chat').inc();
    metrics.hot.requestDuration('m1', 'chat/completions', 'false', 'chat').observe(0.003);
    metrics.hot.upstreamDuration('m1', 'chat', 'http://up/v1').observe(0.002);
    const text = await metrics.render();
    expect(text).toContain(
      'toolproof_requests_total{model="m1",route="chat/completions",status="200",api="chat"} 1',
    );
    expect(text).toContain(
      'toolproof_request_duration_seconds_bucket{le="0.005",model="m1",route="chat/completions",stream="false",api="chat"} 1',
    );
    expect(text).toContain(
      'toolproof_upstream_duration_seconds_count{model="m1",route="chat",upstream="http://up/v1"} 1',
    );
  });
});
