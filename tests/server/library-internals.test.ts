/**
 * The private fields of prom-client and ajv that server/hot-series.ts and
 * policies/kit/validation/validator-cache.ts rely on, asserted directly. Both packages are pinned to an
 * exact version in package.json; an upgrade that moves any of these fails here, by name, rather
 * than as a wrong number on a scrape.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Ajv } from 'ajv';
import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { HistogramInternals } from '../../server/hot-series.js';

const require = createRequire(import.meta.url);
const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  dependencies: Record<string, string>;
};

describe('pinned versions', () => {
  for (const name of ['prom-client', 'ajv']) {
    it(`${name} is pinned exactly and installed at that version`, () => {
      const spec = pkg.dependencies[name]!;
      expect(spec).toMatch(/^\d+\.\d+\.\d+$/);
      expect((require(`${name}/package.json`) as { version: string }).version).toBe(spec);
    });
  }
});

const BUCKETS = [0.01, 0.1, 1];

function histogram() {
  const registry = new Registry();
  const h = new Histogram({
    name: 'h_seconds',
    help: 'h',
    labelNames: ['model', 'route'] as const,
    buckets: BUCKETS,
    registers: [registry],
  });
  return { registry, h, internals: h as unknown as HistogramInternals };
}

async function buckets(h: Histogram<string>) {
  const { values } = await h.get();
  return Object.fromEntries(
    values.map((v) => [`${v.metricName}${v.labels.le === undefined ? '' : `{le=${v.labels.le}}`}`, v.value]),
  );
}

describe('prom-client Histogram internals (server/hot-series.ts)', () => {
  it('exposes labelNames and upperBounds as configured', () => {
    const { internals } = histogram();
    expect(internals.labelNames).toEqual(['model', 'route']);
    expect(internals.upperBounds).toEqual(BUCKETS);
  });

  it('keeps one record per series in hashMap: labels, non-cumulative bucketValues keyed by bound, sum, count', () => {
    const { h, internals } = histogram();
    h.observe({ model: 'm', route: 'r' }, 0.05);
    h.observe({ model: 'm', route: 'r' }, 0.5);
    h.observe({ model: 'm', route: 'r' }, 0.07);
    h.observe({ model: 'other', route: 'r' }, 5);
    const records = Object.values(internals.hashMap);
    expect(records).toHaveLength(2);
    const record = records.find((r) => r.labels.model === 'm')!;
    expect(record.labels).toEqual({ model: 'm', route: 'r' });
    expect(record.bucketValues).toEqual({ 0.01: 0, 0.1: 2, 1: 1 });
    expect(record.sum).toBeCloseTo(0.62, 12);
    expect(record.count).toBe(3);
    // Above the last bound: counted only in count (+Inf is derived from it).
    const above = records.find((r) => r.labels.model === 'other')!;
    expect(above.bucketValues).toEqual({ 0.01: 0, 0.1: 0, 1: 0 });
    expect(above.count).toBe(1);
  });

  it('zero(labels) creates a zeroed record; additions to it are what get() reports, cumulated', async () => {
    const { h, internals } = histogram();
    h.zero({ model: 'm', route: 'r' });
    const [key, ...rest] = Object.keys(internals.hashMap);
    expect(rest).toHaveLength(0);
    const record = internals.hashMap[key!]!;
    expect(record).toMatchObject({ labels: { model: 'm', route: 'r' }, sum: 0, count: 0 });
    expect(record.bucketValues).toEqual({ 0.01: 0, 0.1: 0, 1: 0 });
    // Each record owns its bucketValues (not shared with the metric's template or other series).
    h.zero({ model: 'n', route: 'r' });
    const other = Object.values(internals.hashMap).find((r) => r.labels.model === 'n')!;
    expect(other.bucketValues).not.toBe(record.bucketValues);

    record.bucketValues[0.1]! += 2;
    record.bucketValues[1]! += 1;
    record.sum += 0.7;
    record.count += 4;
    const got = await h.get();
    const mine = got.values.filter((v) => v.labels.model === 'm');
    const byName = Object.fromEntries(
      mine.map((v) => [`${v.metricName}:${(v.labels as Record<string, unknown>).le ?? ''}`, v.value]),
    );
    expect(byName).toEqual({
      'h_seconds_bucket:0.01': 0,
      'h_seconds_bucket:0.1': 2,
      'h_seconds_bucket:1': 3,
      'h_seconds_bucket:+Inf': 4,
      'h_seconds_sum:': 0.7,
      'h_seconds_count:': 4,
    });
  });

  it('reset() replaces hashMap (a held record is no longer the series)', () => {
    const { h, internals } = histogram();
    h.observe({ model: 'm', route: 'r' }, 0.05);
    const [key] = Object.keys(internals.hashMap);
    h.reset();
    expect(internals.hashMap[key!]).toBeUndefined();
    expect(Object.keys(internals.hashMap)).toHaveLength(0);
  });

  it('get() calls the collect assigned after construction, before reading hashMap', async () => {
    const { h, internals } = histogram();
    internals.collect = () => {
      h.observe({ model: 'late', route: 'r' }, 0.05);
    };
    expect(await buckets(h)).toMatchObject({ h_seconds_count: 1 });
  });
});

describe('prom-client Counter internals (server/hot-series.ts)', () => {
  it('exposes labelNames and calls the collect assigned after construction on get()', async () => {
    const c = new Counter({
      name: 'c_total',
      help: 'c',
      labelNames: ['model', 'status'] as const,
      registers: [],
    });
    const internals = c as unknown as { labelNames: readonly string[]; collect?: () => unknown };
    expect(internals.labelNames).toEqual(['model', 'status']);
    internals.collect = () => {
      c.inc({ model: 'm', status: '200' }, 3);
    };
    const { values } = await c.get();
    expect(values).toEqual([{ labels: { model: 'm', status: '200' }, value: 3 }]);
  });
});

describe('ajv internals (policies/kit/validation/validator-cache.ts)', () => {
  it('_cache is a Map holding one entry per distinct compiled schema', () => {
    const ajv = new Ajv({ strict: false });
    const cache = (ajv as unknown as { _cache: unknown })._cache;
    expect(cache).toBeInstanceOf(Map);
    const size = () => (cache as Map<unknown, unknown>).size;
    const before = size();
    const a = { type: 'object', properties: { x: { type: 'string' } } };
    const b = { type: 'array', items: { type: 'number' } };
    ajv.compile(a);
    expect(size()).toBe(before + 1);
    ajv.compile(b);
    expect(size()).toBe(before + 2);
    ajv.compile(a);
    expect(size()).toBe(before + 2);
    ajv.removeSchema(a);
    expect(size()).toBe(before + 1);
  });
});
