/**
 * The bench's fake upstream (bench/lib/fake-upstream.ts) paces a trickled stream as a backend
 * does (llama-server writes each token's event as an HTTP chunk of its own, as decoded): each
 * event a write of its own, a tick apart, so a reader gets about one read an event. The A/B's
 * paced agent turn (bench/run.ts, `--ab-workloads=paced`) depends on it; the burst streams stay
 * back-to-back. Read here off a raw socket: its reads, and the chunked framing of each.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentTurn, toolsStreamBody } from '../../bench/lib/fixtures.js';
import { type Child, startFakeUpstream, stopChild } from '../../bench/lib/procs.js';

const ROOT = new URL('../..', import.meta.url).pathname;

let upstream: { child: Child; port: number };

beforeAll(async () => {
  upstream = await startFakeUpstream(ROOT);
}, 30_000);

afterAll(async () => {
  if (upstream) await stopChild(upstream.child);
});

/** POSTs `body` on a socket of its own; resolves with each read's bytes once the response ended. */
function readsOf(body: Buffer): Promise<Buffer[]> {
  return new Promise((resolve, reject) => {
    const socket = connect(upstream.port, '127.0.0.1');
    const reads: Buffer[] = [];
    socket.on('data', (b: Buffer) => {
      reads.push(b);
      // The chunked body's terminator: the response is whole.
      if (Buffer.concat(reads).includes('\r\n0\r\n\r\n')) {
        socket.destroy();
        resolve(reads);
      }
    });
    socket.on('error', reject);
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n` +
        `content-length: ${body.length}\r\n\r\n`,
    );
    socket.write(body);
  });
}

/** The chunked body's chunks (after the head), as text. */
function chunksOf(reads: Buffer[]): string[] {
  const raw = Buffer.concat(reads);
  let i = raw.indexOf('\r\n\r\n') + 4;
  const out: string[] = [];
  for (;;) {
    const eol = raw.indexOf('\r\n', i);
    const n = Number.parseInt(raw.subarray(i, eol).toString(), 16);
    if (n === 0) return out;
    out.push(raw.subarray(eol + 2, eol + 2 + n).toString());
    i = eol + 2 + n + 2;
  }
}

const events = (text: string) => text.split('\n\n').filter((e) => e.startsWith('data: ')).length;

describe('the bench fake upstream, paced', () => {
  it('writes a trickled stream one event a chunk, a tick apart: about one read an event', async () => {
    // 8 events and [DONE], 25 ms apart: a reader would have to stall a tick to merge two.
    const reads = await readsOf(toolsStreamBody({ chunks: 8, mode: 'trickle', tickMs: 25 }));
    const chunks = chunksOf(reads);
    expect(chunks).toHaveLength(9);
    for (const c of chunks) expect(events(c)).toBe(1);
    expect(chunks.at(-1)).toBe('data: [DONE]\n\n');
    // The head and the first event may share a read; each later event comes on a tick of its own.
    expect(reads.length).toBeGreaterThanOrEqual(6);
  });

  it("paces the A/B's agent turn by its markers, and leaves the burst turn's body as it was", async () => {
    const burst = agentTurn().body.toString();
    expect(burst).toContain('[BENCH-CHUNKS-100 BENCH-CALL-run_shell_command.command]');
    const paced = agentTurn(6, { mode: 'trickle', tickMs: 25 }).body;
    expect(paced.toString()).toContain(
      '[BENCH-CHUNKS-6 BENCH-CALL-run_shell_command.command BENCH-TRICKLE BENCH-TICK-25]',
    );
    const reads = await readsOf(paced);
    const chunks = chunksOf(reads);
    expect(chunks).toHaveLength(7);
    expect(chunks[0]).toContain('"name":"run_shell_command"');
    for (const c of chunks) expect(events(c)).toBe(1);
    expect(reads.length).toBeGreaterThanOrEqual(4);
  });
});
