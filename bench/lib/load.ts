/**
 * The load generator: a closed loop of `concurrency` workers on one keep-alive undici Pool, each
 * sending the next request as soon as its previous response body was read completely. A run is
 * bounded by a request count or by a duration. Latency is measured from just before
 * pool.request() to the last body byte; for streams also to the first body byte.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Pool } from 'undici';

export interface LoadSpec {
  pool: Pool;
  body: Buffer;
  stream: boolean;
  concurrency: number;
  /** Stop after this many requests (all workers together)... */
  requests?: number;
  /** ...or after this many milliseconds (requests in flight finish). */
  durationMs?: number;
  /**
   * Stagger the workers' first requests evenly over this many ms (worker i waits i/c of it), so
   * that streams of a fixed length arrive and end spread out instead of all in the same turn.
   */
  spreadStartMs?: number;
}

export interface LoadResult {
  /** Completed requests (errors included). */
  count: number;
  errors: number;
  firstError?: string;
  /** Wall time of the whole run, ms. */
  wallMs: number;
  /** Per request, ms: to the last body byte. */
  latencies: number[];
  /** Per request, ms: to the first body byte (streams only). */
  firstByte: number[];
  /** Per successful request, performance.now() when it was sent (same order as latencies). */
  starts: number[];
}

const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const { pool, body, stream, concurrency } = spec;
  const maxRequests = spec.requests ?? Number.POSITIVE_INFINITY;
  const start = performance.now();
  const deadline = spec.durationMs === undefined ? Number.POSITIVE_INFINITY : start + spec.durationMs;
  const latencies: number[] = [];
  const firstByte: number[] = [];
  const starts: number[] = [];
  let issued = 0;
  let errors = 0;
  let firstError: string | undefined;

  const worker = async (_: unknown, i: number) => {
    if (spec.spreadStartMs) await sleep((spec.spreadStartMs * i) / concurrency);
    while (issued < maxRequests && performance.now() < deadline) {
      issued++;
      const t0 = performance.now();
      try {
        const res = await pool.request({
          path: '/v1/chat/completions',
          method: 'POST',
          headers: HEADERS,
          body,
        });
        let first = -1;
        if (stream) {
          for await (const _chunk of res.body) {
            if (first < 0) first = performance.now();
          }
        } else {
          await res.body.arrayBuffer();
        }
        const t1 = performance.now();
        if (res.statusCode !== 200) {
          errors++;
          firstError ??= `HTTP ${res.statusCode}`;
          continue;
        }
        latencies.push(t1 - t0);
        starts.push(t0);
        if (stream) firstByte.push((first < 0 ? t1 : first) - t0);
      } catch (err) {
        errors++;
        firstError ??= (err as Error).message;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return {
    count: latencies.length + errors,
    errors,
    firstError,
    wallMs: performance.now() - start,
    latencies,
    firstByte,
    starts,
  };
}

/** One request, its status and the whole body as text (for the correctness probe). */
export async function probe(pool: Pool, body: Buffer): Promise<{ status: number; text: string }> {
  const res = await pool.request({ path: '/v1/chat/completions', method: 'POST', headers: HEADERS, body });
  return { status: res.statusCode, text: await res.body.text() };
}

/** Nearest-rank percentile of ascending-sorted values (q in 0..100). */
export function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((q / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export interface LatencySummary {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  mean: number;
  max: number;
}

export function summarize(values: readonly number[]): LatencySummary {
  const sorted = [...values].sort((a, b) => a - b);
  const sum = sorted.reduce((a, b) => a + b, 0);
  return {
    n: sorted.length,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    mean: sorted.length ? sum / sorted.length : Number.NaN,
    max: sorted.length ? sorted[sorted.length - 1]! : Number.NaN,
  };
}
