/**
 * npx tsx bench/sse.ts: throughput of the SSE framer (server/sse.ts) on three shapes of input:
 * many small events in one read (the case that used to rescan the buffer per line), the same
 * bytes in 1 KiB reads, and one large event arriving in 1 KiB reads. Prints MB/s per case.
 */
import { SseParser } from '../server/sse.js';

const encoder = new TextEncoder();

function smallEvents(count: number): Uint8Array {
  const payload = JSON.stringify({
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    choices: [{ index: 0, delta: { content: 'hello' }, finish_reason: null }],
  });
  return encoder.encode(`data: ${payload}\n\n`.repeat(count));
}

function chunks(bytes: Uint8Array, size: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.subarray(i, i + size));
  return out;
}

function run(label: string, reads: Uint8Array[], rounds: number): void {
  const total = reads.reduce((n, r) => n + r.length, 0);
  let best = Number.POSITIVE_INFINITY;
  let events = 0;
  for (let round = 0; round < rounds; round++) {
    const start = process.hrtime.bigint();
    const p = new SseParser();
    events = 0;
    for (const r of reads) events += p.push(r).length;
    events += p.finish().length;
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    best = Math.min(best, ms);
  }
  const mbs = total / 1e6 / (best / 1e3);
  console.log(
    `${label.padEnd(34)} ${(total / 1e6).toFixed(2).padStart(6)} MB  ${String(events).padStart(6)} events  ${best.toFixed(1).padStart(8)} ms  ${mbs.toFixed(1).padStart(7)} MB/s`,
  );
}

const sixteenK = smallEvents(16_384);
run('16k events, one read', [sixteenK], 5);
run('16k events, 1 KiB reads', chunks(sixteenK, 1024), 5);
const big = encoder.encode(`data: ${JSON.stringify({ content: 'x'.repeat(4_000_000) })}\n\n`);
run('one 4 MB event, 1 KiB reads', chunks(big, 1024), 3);
