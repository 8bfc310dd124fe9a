/**
 * The real app (buildApp) on loopback in front of a scripted upstream, for the one-request
 * benches (bench/products.ts, bench/bounds.ts): only public entry points (buildApp, loadConfig),
 * so the same scripts measure an older checkout for a before column.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { buildApp } from '../../server/app.js';
import { loadConfig } from '../../server/config.js';

/** What the upstream answers: `body` is the request it received, whole. */
export type UpstreamHandler = (body: Buffer, res: ServerResponse) => void;

export interface ScriptedApp {
  origin: string;
  /** What the upstream answers (read at each request: set it before posting). */
  handler: UpstreamHandler;
  /** Bytes the upstream has received so far. */
  upstreamBytes(): number;
  close(): Promise<void>;
}

export async function scriptedApp(
  env: Record<string, string>,
  file: Parameters<typeof loadConfig>[1] = {},
): Promise<ScriptedApp> {
  let bytes = 0;
  const pair: ScriptedApp = {
    origin: '',
    handler: (_b, res) => res.end('{}'),
    upstreamBytes: () => bytes,
    close: async () => {},
  };
  const upstream = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => {
      bytes += c.length;
      parts.push(c);
    });
    req.on('end', () => pair.handler(Buffer.concat(parts), res));
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;
  const app = await buildApp(loadConfig({ TOOLPROOF_UPSTREAM_URL: upstreamUrl, ...env }, file), {
    logger: false,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  pair.origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  pair.close = async () => {
    await app.close();
    upstream.closeAllConnections();
    upstream.close();
  };
  return pair;
}

/** A non-streamed chat completion holding `message`. */
export const completion = (message: unknown) =>
  JSON.stringify({
    id: 'c1',
    object: 'chat.completion',
    created: 1,
    model: 'm1',
    choices: [{ index: 0, message, finish_reason: 'stop' }],
  });

/**
 * Runs `work`, polling `${origin}/health` meanwhile: wall time, the loop's longest delay,
 * /health's longest wait.
 */
export async function during<T>(
  origin: string,
  work: () => Promise<T>,
): Promise<{ wallMs: number; loopMs: number; healthMs: number; result: T }> {
  const h = monitorEventLoopDelay({ resolution: 5 });
  h.enable();
  let done = false;
  let healthMs = 0;
  const start = performance.now();
  const w = work().finally(() => {
    done = true;
  });
  const poll = (async () => {
    while (!done) {
      const t = performance.now();
      await fetch(`${origin}/health`).then((r) => r.arrayBuffer());
      healthMs = Math.max(healthMs, performance.now() - t);
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  const result = await w;
  const wallMs = performance.now() - start;
  await poll;
  h.disable();
  return { wallMs, loopMs: h.max / 1e6, healthMs, result };
}
