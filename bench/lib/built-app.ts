/**
 * A toolproof app built from a compiled tree (`dir`: the bench's build, or a `--before` tree) in
 * this process, listening on loopback, and a keep-alive pool of `connections` to it; the
 * allocation benches (capture-alloc, alloc-sides) run several of them side by side.
 */
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Pool } from 'undici';

/** A node of a V8 sampling heap profile (what the allocation benches read). */
export interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapNode[];
}

export async function builtApp(
  dir: string,
  env: Record<string, string>,
  connections: number,
): Promise<{ pool: Pool; close: () => Promise<void> }> {
  const at = (p: string) => pathToFileURL(resolve(join(dir, p))).href;
  const { loadConfig } = (await import(at('server/config.js'))) as {
    loadConfig: (env: Record<string, string>) => unknown;
  };
  const { buildApp } = (await import(at('server/app.js'))) as {
    buildApp: (c: unknown) => Promise<{
      listen: (o: object) => Promise<unknown>;
      server: { address: () => { port: number } };
      close: () => Promise<void>;
    }>;
  };
  const a = await buildApp(loadConfig(env));
  await a.listen({ host: '127.0.0.1', port: 0 });
  const pool = new Pool(`http://127.0.0.1:${a.server.address().port}`, { connections, pipelining: 1 });
  return { pool, close: () => a.close() };
}
