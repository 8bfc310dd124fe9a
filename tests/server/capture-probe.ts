/**
 * Child-process probes for capture-bounds.test.ts (run with --expose-gc; not a test file itself).
 *
 * `ring COUNT MB [SCALE]`: COUNT requests of a 1 MB body each written into a ring of MB megabytes the way
 * the recorder writes them (client body, the attempt as sent, stream events, the client's
 * response); prints the ring's own count and the heap growth after a full GC (both times SCALE:
 * the figures of the full-size run).
 *
 * `snapshot UPSTREAM CAPTURE_MB[,CAPTURE_MB...] OUT`: for each setting in turn, starts toolproof in
 * front of UPSTREAM, sends chat requests (with and without tools, streamed and not) whose prompt
 * holds a random marker (a new one each time), waits for them to end, writes a heap snapshot to
 * OUT-CAPTURE_MB.heapsnapshot and the marker to that path plus .marker, and closes it. The marker
 * only ever exists here as bytes (a Buffer), never as a JS string of this process's own making,
 * so a snapshot that holds it holds what toolproof kept of a prompt. One process for several
 * settings costs one start-up: a setting's snapshot is taken before the next one's server
 * exists (put capture off first: nothing of a later one can be in its snapshot).
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { writeHeapSnapshot } from 'node:v8';
import { Agent, request } from 'undici';
import { buildApp } from '../../server/app.js';
import { Attempt, CaptureRing } from '../../server/capture/ring.js';
import { loadConfig } from '../../server/config.js';
import { fullGc } from '../support/gc.js';

async function ringProbe(count: number, mb: number, scale: number): Promise<void> {
  // `scale` shrinks the ring, the cut and the body together (1: a ring of MB, 256 KB cuts, 1 MB
  // bodies; 10: a tenth of each), so the ring holds as many records and evicts as often.
  const limits = {
    maxBytes: Math.floor((mb * 1024 * 1024) / scale),
    textChars: Math.floor((256 * 1024) / scale),
  };
  const body = 'x'.repeat(Math.floor((1024 * 1024) / scale));
  let maxBytes = 0;
  const fill = (ring: CaptureRing, n: number) => {
    for (let i = 0; i < n; i++) {
      // A 1 MB body per request (the same text: what the ring keeps of it is its own copy).
      const unique = body;
      const w = ring.open({
        id: `r${i}`,
        at: Date.now(),
        api: 'chat',
        model: 'm',
        stream: true,
        session: `s${i % 7}`,
        method: 'POST',
        path: '/v1/chat/completions',
      });
      w.body = w.text(unique);
      w.attempt(new Attempt(1, 'u', Date.now(), 0, true, w.text(unique)));
      for (let e = 0; e < 50; e++) w.event(`{"choices":[{"delta":{"content":"token ${i}.${e}"}}]}`);
      w.endEvents();
      for (let e = 0; e < 50; e++)
        w.client(`data: {"choices":[{"delta":{"content":"token ${i}.${e}"}}]}\n\n`);
      w.endClient();
      w.record.inFlight = false;
      maxBytes = Math.max(maxBytes, ring.bytes);
    }
  };
  // A warm-up on a ring of its own, dropped before the baseline: the code V8 compiles for the
  // loop (counted in heapUsed: up to ~0.4 MB, which read as 4 MB at a tenth of the sizes) is
  // then not counted as the ring's.
  fill(new CaptureRing(limits), 300);
  await fullGc();
  // Heap and Buffers both: the ring keeps bytes as Buffers (outside V8's heap) until read.
  const used = () => process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
  const before = used();
  maxBytes = 0;
  const ring = new CaptureRing(limits);
  fill(ring, count);
  await fullGc();
  const growth = used() - before;
  process.stdout.write(
    `${JSON.stringify({ growthMb: (growth * scale) / 1024 / 1024, ringMaxMb: (maxBytes * scale) / 1024 / 1024, records: ring.size })}\n`,
  );
}

/** ASCII hex of random bytes, written straight into a Buffer (no JS string holds it). */
function markerBytes(): Buffer {
  const raw = randomBytes(12);
  const out = Buffer.alloc(raw.length * 2 + 7);
  out.write('MARKER-', 0, 'latin1');
  for (let i = 0; i < raw.length; i++) {
    const hex = (n: number) => (n < 10 ? 48 + n : 87 + n);
    out[7 + i * 2] = hex(raw[i]! >> 4);
    out[8 + i * 2] = hex(raw[i]! & 15);
  }
  return out;
}

async function snapshotProbe(upstream: string, captureMb: string, out: string): Promise<void> {
  const config = Object.freeze({
    ...loadConfig({ TOOLPROOF_UPSTREAM_URL: upstream, TOOLPROOF_CAPTURE_MB: captureMb }),
    simulator: true,
  });
  const app = await buildApp(config, { logger: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  const marker = markerBytes();
  writeFileSync(`${out}.marker`, marker);
  const tools = Buffer.from(
    ',"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]',
  );
  const agent = new Agent({ keepAliveTimeout: 10 });
  for (const withTools of [false, true])
    for (const stream of [false, true]) {
      const body = Buffer.concat([
        Buffer.from('{"model":"sim","stream":'),
        Buffer.from(String(stream)),
        Buffer.from(',"messages":[{"role":"user","content":"Tell me about '),
        marker,
        Buffer.from(' please"}],"user":"'),
        // Also the request's user: capture keeps it in the session's label (the affinity key, a
        // string on V8's heap, worked out once the inspector read it: below), where capture on's
        // snapshot finds it; the prompt texts it keeps are bytes outside the heap (the ring's
        // arena, the Buffers received and sent), which a heap snapshot does not show.
        marker,
        Buffer.from('"'),
        withTools ? tools : Buffer.alloc(0),
        Buffer.from('}'),
      ]);
      const res = await request(`http://127.0.0.1:${port}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-sim-scenario': 'echo' },
        body,
        dispatcher: agent,
      });
      await res.body.arrayBuffer();
      if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`);
    }
  // The inspector's list: the records' sessions are worked out from their bodies when first read.
  const list = await request(`http://127.0.0.1:${port}/inspect/api/requests`, { dispatcher: agent });
  await list.body.arrayBuffer();
  await agent.close();
  await new Promise((r) => setTimeout(r, 100));
  await fullGc();
  writeHeapSnapshot(out);
  await app.close();
}

const [mode, a, b, c] = process.argv.slice(2);
if (mode === 'ring') await ringProbe(Number(a), Number(b), Number(c ?? 1));
else if (mode === 'snapshot')
  for (const captureMb of b!.split(','))
    await snapshotProbe(a!, captureMb, `${c!}-${captureMb}.heapsnapshot`);
else throw new Error(`unknown mode ${mode}`);
