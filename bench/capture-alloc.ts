/**
 * What capture allocates per request, by function: a count the machine's load does not move. The
 * bench's server apps run in THIS process (a build's app, capture on; `--before=DIR`: another
 * build's beside it), short forced tool streams from the fake upstream, and V8's sampling heap
 * profiler (the inspector's HeapProfiler, every allocation sampled at `--interval` bytes, those the
 * collector has freed since included) attributes each allocation to the JavaScript function that
 * made it. Printed per app: KB per request allocated in server/capture/'s functions (self), the
 * top ones, and in the whole server build (toolproof's and its dependencies' frames under the
 * build folder; the load generator's are left out).
 *
 * Why it matters: what a request allocates sets how often the young generation is collected,
 * and what it allocates and keeps to the request's end is copied by those collections or
 * promoted (bench/README.md, issue 28).
 *
 * `--agent`: the agent turn (fixtures.ts agentTurn, c=8) instead of short streams.
 *
 *   npx tsx bench/capture-alloc.ts [--requests=3000] [--c=32] [--interval=512] [--before=DIR] [--agent]
 */
import { dirname, join, resolve } from 'node:path';
import { Session } from 'node:inspector/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { BUILD_DIR, prepareServer } from './lib/build.js';
import { builtApp, type HeapNode } from './lib/built-app.js';
import { burst } from './lib/burst.js';
import { agentTurn, toolsStreamBody } from './lib/fixtures.js';
import { startFakeUpstream, stopAll } from './lib/procs.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = new Map(
  process.argv.slice(2).map((a) => {
    const i = a.indexOf('=');
    return i < 0 ? [a.replace(/^--/, ''), ''] : [a.slice(0, i).replace(/^--/, ''), a.slice(i + 1)];
  }),
);
const REQUESTS = Number(args.get('requests') || 3000);
const C = Number(args.get('c') || 32);
const INTERVAL = Number(args.get('interval') || 512);

const app = (dir: string, upstream: string) =>
  builtApp(
    dir,
    {
      TOOLPROOF_UPSTREAM_URL: `${upstream}/v1`,
      TOOLPROOF_HOST: '127.0.0.1',
      TOOLPROOF_PORT: '0',
      TOOLPROOF_LOG_LEVEL: 'warn',
    },
    C,
  );

async function main(): Promise<void> {
  prepareServer(ROOT, 'build', console.log);
  const upstream = await startFakeUpstream(ROOT);
  const dirs: Array<[string, string]> = [['on', resolve(ROOT, BUILD_DIR)]];
  const before = args.get('before');
  if (before) dirs.push(['before', resolve(before)]);
  const apps = await Promise.all(dirs.map(([, d]) => app(d, upstream.origin)));
  // --agent: the agent turn (Qwen Code's 87 KB request with its headers, c=8) instead of short streams.
  const agent = args.has('agent') ? agentTurn() : undefined;
  const body = agent ? agent.body : toolsStreamBody({ chunks: 8 });
  const headers = agent ? { ...agent.headers, 'content-type': 'application/json' } : undefined;
  const c = agent ? Math.min(C, 8) : C;
  for (const a of apps) await burst(a.pool, body, agent ? 200 : 2000, c, headers);
  const session = new Session();
  session.connect();
  for (let k = 0; k < apps.length; k++) {
    const [name, dir] = dirs[k]!;
    await session.post('HeapProfiler.collectGarbage');
    await session.post('HeapProfiler.startSampling', {
      samplingInterval: INTERVAL,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
    await burst(apps[k]!.pool, body, REQUESTS, c, headers);
    const { profile } = (await session.post('HeapProfiler.stopSampling')) as { profile: { head: HeapNode } };
    const prefix = pathToFileURL(dir).href;
    const byFrame = new Map<string, number>();
    let capture = 0;
    let server = 0;
    const walk = (n: HeapNode) => {
      const url = n.callFrame.url;
      if (url.startsWith(prefix) || url.startsWith(dir)) {
        server += n.selfSize;
        if (url.includes('/server/capture/')) {
          capture += n.selfSize;
          const key = `${n.callFrame.functionName || '(anonymous)'} ${url.slice(url.indexOf('/server/capture/') + 16)}:${n.callFrame.lineNumber + 1}`;
          byFrame.set(key, (byFrame.get(key) ?? 0) + n.selfSize);
        }
      }
      for (const c of n.children) walk(c);
    };
    walk(profile.head);
    const kb = (b: number) => (b / 1024 / REQUESTS).toFixed(3);
    console.log(
      `${name} (${dir}): ${REQUESTS} ${agent ? `agent turns, c=${c}` : `short streams, c=${C}`}, sampled every ${INTERVAL} bytes; KB allocated per request: the server build's frames ${kb(server)}, server/capture/'s ${kb(capture)}`,
    );
    for (const [k, v] of [...byFrame.entries()].sort((a, b) => b[1] - a[1]).slice(0, 12))
      console.log(`  ${kb(v).padStart(7)} KB  ${k}`);
  }
  session.disconnect();
  for (const a of apps) {
    await a.pool.close();
    await a.close();
  }
  await stopAll();
}

main().catch(async (err) => {
  console.error(err);
  await stopAll();
  process.exit(1);
});
