/**
 * The recorded client disconnect (disconnect__client_disconnect_mid_stream.json), replayed on a
 * raw socket: same request, same "read >= 3000 bytes then close" behaviour. Checks the response
 * head, the chunked framing (the first HTTP chunk carries the role event and the first token, then
 * one event per chunk), and that the simulator records the abort and stops generating.
 * The X-Conversation-Id variant is not replayed: llama-server's replay buffer is not simulated.
 */
import { existsSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSimulator, type Simulator } from '../../simulator/index.js';

const FILE = '/work/shared/wire/llama-server/disconnect__client_disconnect_mid_stream.json';

interface DisconnectRecording {
  request: { method: string; path: string; body: unknown };
  raw_wire_received: string;
  bytes_received_before_disconnect: number;
}

function splitHead(raw: string): { head: string[]; body: string } {
  const at = raw.indexOf('\r\n\r\n');
  return { head: raw.slice(0, at).split('\r\n'), body: raw.slice(at + 4) };
}

/** HTTP chunks of a chunked body; an incomplete last chunk is dropped. */
function chunks(body: string): string[] {
  const out: string[] = [];
  let rest = Buffer.from(body, 'utf8');
  for (;;) {
    const eol = rest.indexOf('\r\n');
    if (eol < 0) break;
    const size = Number.parseInt(rest.subarray(0, eol).toString(), 16);
    if (Number.isNaN(size) || rest.length < eol + 2 + size + 2) break;
    out.push(rest.subarray(eol + 2, eol + 2 + size).toString('utf8'));
    rest = rest.subarray(eol + 2 + size + 2);
  }
  return out;
}

function headerSet(head: string[]): string[] {
  return head
    .slice(1)
    .filter((l) => !/^(connection|date):/i.test(l))
    .map((l) => l.toLowerCase())
    .sort();
}

const rec = existsSync(FILE) ? (JSON.parse(readFileSync(FILE, 'utf8')) as DisconnectRecording) : null;

describe.skipIf(rec === null)('llama-server client disconnect, replayed on a raw socket', () => {
  let sim: Simulator;
  const LONG = Array.from({ length: 3000 }, (_, i) => `tok${i}`).join(' ');
  beforeAll(async () => {
    sim = await createSimulator({
      personality: 'llama-server',
      modelName: 'tiny-random-chatvocab.gguf',
      scenario: [{ say: LONG, chunkDelayMs: 2 }],
    });
  });
  afterAll(() => sim.close());

  it('matches the recorded head and framing, and the abort reaches the simulator', async () => {
    const r = rec as DisconnectRecording;
    const body = JSON.stringify(r.request.body);
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(sim.port, '127.0.0.1');
      let got = Buffer.alloc(0);
      socket.on('data', (d: Buffer) => {
        got = Buffer.concat([got, d]);
        if (got.length >= 3000) {
          socket.destroy();
          resolve(got.toString('utf8'));
        }
      });
      socket.on('error', reject);
      socket.write(
        `${r.request.method} ${r.request.path} HTTP/1.1\r\nHost: 127.0.0.1:${sim.port}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
    });
    const want = splitHead(r.raw_wire_received);
    const got = splitHead(raw);
    expect(got.head[0]).toBe(want.head[0]);
    expect(headerSet(got.head)).toEqual(headerSet(want.head));

    const wantChunks = chunks(want.body);
    const gotChunks = chunks(got.body);
    const events = (c: string) => c.split('\n\n').filter(Boolean).length;
    expect(events(wantChunks[0] as string)).toBe(2);
    expect(events(gotChunks[0] as string)).toBe(2);
    expect(
      gotChunks.slice(1).every((c) => events(c) === 1 && c.startsWith('data: ') && c.endsWith('\n\n')),
    ).toBe(true);

    const until = Date.now() + 10_000;
    while (sim.aborts.length === 0 && Date.now() < until) await new Promise((res) => setTimeout(res, 10));
    expect(sim.aborts).toHaveLength(1);
    expect(sim.aborts[0]).toMatchObject({ midStream: true, path: '/v1/chat/completions' });
    // The client left after ~3000 bytes of a ~3000-event stream: only the first events were sent.
    expect(sim.aborts[0]?.chunksSent).toBeGreaterThanOrEqual(gotChunks.length);
    expect(sim.aborts[0]?.chunksSent).toBeLessThan(200);
  });

  it.skip('disconnect with X-Conversation-Id: the replay buffer (/v1/stream/<id>) is not simulated', () => {});
});
