/**
 * Upstream transport figures (docs/upstream-transport.md), against the real app on loopback:
 *   1. a non-streamed chat answer sent chunked (no Content-Length) at 64 KiB + 1, 1 MiB and
 *      8 MiB: time per request (median of 5; "hang" past 10 s);
 *   2. /health latency (p50, max over samples every 10 ms) while 8 such 8 MiB requests run;
 *   3. a server that closes idle connections after 50 ms without saying so (no Keep-Alive
 *      header, as uvicorn does after 5 s): requests spaced around its timer, and how many failed.
 * The upstreams run in this process too: /health latency includes their work.
 *   npx tsx bench/transport.ts
 */
import { createServer as createHttpServer } from 'node:http';
import { createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { buildApp } from '../server/app.js';
import { loadConfig } from '../server/config.js';

function completion(bytes: number): Buffer {
  const head =
    '{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"';
  const tail = '"},"finish_reason":"stop"}]}';
  return Buffer.from(head + 'x'.repeat(Math.max(0, bytes - head.length - tail.length)) + tail);
}

async function chunkedUpstream(): Promise<{ url: string; close(): void }> {
  const server = createHttpServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const size = Number(req.headers['x-bench-size'] ?? 100_000);
      const body = completion(size);
      res.writeHead(200, { 'content-type': 'application/json' });
      for (let at = 0; at < body.length; at += 16_384) res.write(body.subarray(at, at + 16_384));
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** HTTP/1.1 keep-alive with no Keep-Alive header; idle connections closed after `idleMs`. */
async function closingUpstream(idleMs: number): Promise<{ url: string; close(): void }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
    let buf = Buffer.alloc(0);
    let idle = setTimeout(() => socket.end(), idleMs);
    socket.on('data', (d: Buffer) => {
      clearTimeout(idle);
      buf = Buffer.concat([buf, d]);
      for (;;) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const length = Number(
          /content-length: *(\d+)/i.exec(buf.subarray(0, end).toString('latin1'))?.[1] ?? 0,
        );
        if (buf.length < end + 4 + length) return;
        buf = buf.subarray(end + 4 + length);
        const body = completion(200);
        socket.write(
          `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
        );
        idle = setTimeout(() => socket.end(), idleMs);
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

async function proxy(upstreamUrl: string) {
  const app = await buildApp(loadConfig({ TOOLPROOF_UPSTREAM_URL: upstreamUrl }), { logger: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, origin: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}` };
}

const chat = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });

async function timedChat(origin: string, size: number): Promise<number | 'hang'> {
  const started = performance.now();
  try {
    const res = await fetch(`${origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-bench-size': String(size) },
      body: chat,
      signal: AbortSignal.timeout(10_000),
    });
    await res.arrayBuffer();
    return performance.now() - started;
  } catch {
    return 'hang';
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (v: number | 'hang') => (v === 'hang' ? 'hang (>10 s)' : `${v.toFixed(1)} ms`);

async function main(): Promise<void> {
  const up = await chunkedUpstream();
  const { app, origin } = await proxy(up.url);
  console.log('1. non-streamed chat answer, chunked, no Content-Length');
  for (const size of [64 * 1024 + 1, 1024 * 1024, 8 * 1024 * 1024]) {
    const times: Array<number | 'hang'> = [];
    for (let i = 0; i < 5; i++) {
      const t = await timedChat(origin, size);
      times.push(t);
      if (t === 'hang') break;
    }
    const hung = times.includes('hang');
    console.log(`   ${String(size).padStart(8)} B: ${hung ? fmt('hang') : fmt(median(times as number[]))}`);
  }

  for (const concurrent of [1, 8]) {
    const samples: number[] = [];
    let running = true;
    const sampler = (async () => {
      while (running) {
        const t = performance.now();
        await (await fetch(`${origin}/health`)).arrayBuffer();
        samples.push(performance.now() - t);
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    const load: Array<number | 'hang'> = [];
    for (let round = 0; round < 3; round++)
      load.push(
        ...(await Promise.all(Array.from({ length: concurrent }, () => timedChat(origin, 8 * 1024 * 1024)))),
      );
    running = false;
    await sampler;
    const sorted = [...samples].sort((a, b) => a - b);
    console.log(
      `2. /health while ${concurrent} chunked 8 MiB answer(s) at a time are read (3 rounds): ${load.filter((t) => t === 'hang').length} of ${load.length} hung; /health p50 ${median(sorted).toFixed(1)} ms, max ${sorted.at(-1)!.toFixed(1)} ms over ${samples.length} samples`,
    );
  }
  await app.close();
  up.close();

  console.log('3. an upstream closing idle connections after 50 ms (no Keep-Alive header)');
  const closing = await closingUpstream(50);
  const p = await proxy(closing.url);
  let failed = 0;
  const n = 300;
  for (let i = 0; i < n; i++) {
    const res = await fetch(`${p.origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: chat,
    });
    await res.arrayBuffer();
    if (res.status !== 200) failed++;
    await new Promise((r) => setTimeout(r, 47 + (i % 6)));
  }
  console.log(`   ${failed} of ${n} requests failed`);
  await p.app.close();
  closing.close();
}

await main();
