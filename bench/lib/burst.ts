/**
 * The A/B benches' load loop (bench/capture-cpu.ts, bench/tracing-ab.ts): a fixed number of
 * chat requests to one toolproof over a pool, `c` at a time, each response read to its end; a
 * status other than 200 stops the bench.
 */
import type { Pool } from 'undici';

/** What a bench request carries: a JSON body and a key (the bench's toolproofs take any). */
export const BENCH_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-type': 'application/json',
  authorization: 'Bearer sk-bench',
});

/** `n` requests of `body` to POST /v1/chat/completions, `c` in flight at once. */
export async function burst(
  pool: Pool,
  body: Buffer,
  n: number,
  c: number,
  headers: Readonly<Record<string, string>> = BENCH_HEADERS,
): Promise<void> {
  let left = n;
  const worker = async () => {
    while (left-- > 0) {
      const r = await pool.request({ method: 'POST', path: '/v1/chat/completions', headers, body });
      if (r.statusCode !== 200) throw new Error(`status ${r.statusCode}: ${await r.body.text()}`);
      for await (const _ of r.body);
    }
  };
  await Promise.all(Array.from({ length: c }, worker));
}
