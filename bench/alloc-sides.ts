/**
 * What capture and tracing make the WHOLE server allocate per request, by function: four apps of
 * one build in this process (off, capture, tracing with every request sampled, both), the same
 * requests given to each in turn under V8's sampling heap profiler (every allocation sampled at
 * `--interval` bytes, those collected since included), and each side's allocations by frame
 * (any frame of the process: toolproof's, its dependencies', node's own) set against off's. A
 * count the machine's load does not move: what bench/capture-alloc.ts counts for capture's own
 * frames, here for every frame a side changes (issue 28: an agent turn read +69 KB allocated a
 * request with capture on, of which capture's own frames made 6.6).
 *
 * `--agent`: the agent turn (fixtures.ts agentTurn, c=8) instead of 8-event tool streams (c=32).
 * `--rounds=N`: each side profiled N times, in turn (off, cap, trace, both, off, ...), summed.
 *
 *   npx tsx bench/alloc-sides.ts [--agent] [--requests=2000] [--rounds=2] [--interval=512] [--top=20] [--survivors] [--sides=off,cap] [--dir=DIR]
 */
import { Session } from 'node:inspector/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUILD_DIR, prepareServer } from './lib/build.js';
import { builtApp, type HeapNode } from './lib/built-app.js';
import { burst } from './lib/burst.js';
import { agentTurn, toolsStreamBody } from './lib/fixtures.js';
import { startOtlpSink } from './lib/otlp-sink.js';
import { startFakeUpstream, stopAll } from './lib/procs.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = new Map(
  process.argv.slice(2).map((a) => {
    const i = a.indexOf('=');
    return i < 0 ? [a.replace(/^--/, ''), ''] : [a.slice(0, i).replace(/^--/, ''), a.slice(i + 1)];
  }),
);
const AGENT = args.has('agent');
const REQUESTS = Number(args.get('requests') || (AGENT ? 400 : 2000));
const ROUNDS = Number(args.get('rounds') || 2);
const INTERVAL = Number(args.get('interval') || 512);
const TOP = Number(args.get('top') || 20);
/**
 * `--survivors`: only what survived a young collection (freed by a full one since, or still alive):
 * the allocations a side promotes, by the frame that made them.
 */
const SURVIVORS = args.has('survivors');
/** `--sides=off,cap`: only those sides (off always first). */
const SIDES = args.get('sides')?.split(',');

const app = (dir: string, env: Record<string, string>) => builtApp(dir, env, 32);

/** A frame's name: function, file (from the repository or node_modules on), line. */
function frameName(n: HeapNode): string {
  const url = n.callFrame.url;
  const at = Math.max(url.lastIndexOf('/node_modules/'), url.indexOf('/server/'), url.indexOf('/protocol/'));
  const file = at >= 0 ? url.slice(at + 1) : url || '(native)';
  return `${n.callFrame.functionName || '(anonymous)'} ${file}:${n.callFrame.lineNumber + 1}`;
}

async function main(): Promise<void> {
  prepareServer(ROOT, 'build', console.log);
  const upstream = await startFakeUpstream(ROOT);
  const sink = await startOtlpSink();
  // --dir=DIR: another build (a copy of bench/results/.build, edited for an experiment).
  const dir = resolve(args.get('dir') || resolve(ROOT, BUILD_DIR));
  const base = {
    TOOLPROOF_UPSTREAM_URL: `${upstream.origin}/v1`,
    TOOLPROOF_HOST: '127.0.0.1',
    TOOLPROOF_PORT: '0',
    TOOLPROOF_LOG_LEVEL: 'warn',
    TOOLPROOF_CAPTURE_MB: '0',
  };
  const traced = { OTEL_EXPORTER_OTLP_ENDPOINT: sink.origin, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' };
  const sides: Array<[string, Record<string, string>]> = [
    ['off', base],
    ['cap', { ...base, TOOLPROOF_CAPTURE_MB: '10' }],
    ['trace', { ...base, ...traced }],
    ['both', { ...base, ...traced, TOOLPROOF_CAPTURE_MB: '10' }],
  ];
  if (SIDES) for (let k = sides.length - 1; k > 0; k--) if (!SIDES.includes(sides[k]![0])) sides.splice(k, 1);
  const apps = [];
  for (const [, env] of sides) apps.push(await app(dir, env));
  const agent = AGENT ? agentTurn() : undefined;
  const body = agent ? agent.body : toolsStreamBody({ chunks: 8 });
  const headers = agent ? { ...agent.headers, 'content-type': 'application/json' } : undefined;
  const c = agent ? 8 : 32;
  // Warm-up: each app's code compiled, each ring past its first lap (a 10 MB ring: ~120 agent turns).
  for (const a of apps) await burst(a.pool, body, agent ? 300 : 3000, c, headers);
  const session = new Session();
  session.connect();
  const byFrame = sides.map(() => new Map<string, number>());
  const totals = sides.map(() => 0);
  for (let round = 0; round < ROUNDS; round++)
    for (let k = 0; k < sides.length; k++) {
      await session.post('HeapProfiler.collectGarbage');
      await session.post('HeapProfiler.startSampling', {
        samplingInterval: INTERVAL,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: !SURVIVORS,
      });
      await burst(apps[k]!.pool, body, REQUESTS, c, headers);
      const { profile } = (await session.post('HeapProfiler.stopSampling')) as {
        profile: { head: HeapNode };
      };
      const walk = (n: HeapNode) => {
        if (n.selfSize > 0) {
          const f = frameName(n);
          byFrame[k]!.set(f, (byFrame[k]!.get(f) ?? 0) + n.selfSize);
          totals[k]! += n.selfSize;
        }
        for (const ch of n.children) walk(ch);
      };
      walk(profile.head);
    }
  const n = REQUESTS * ROUNDS;
  const kb = (b: number) => (b / 1024 / n).toFixed(2);
  console.log(
    `${n} ${agent ? 'agent turns (c=8)' : 'short streams (8 events, c=32)'} a side, sampled every ${INTERVAL} bytes (the load generator's frames in this process too, alike on every side); KB allocated per request: ${sides.map(([name], k) => `${name} ${kb(totals[k]!)}`).join(', ')}`,
  );
  for (let k = 1; k < sides.length; k++) {
    const diff = new Map<string, number>();
    for (const [f, v] of byFrame[k]!) diff.set(f, v - (byFrame[0]!.get(f) ?? 0));
    for (const [f, v] of byFrame[0]!) if (!byFrame[k]!.has(f)) diff.set(f, -v);
    console.log(
      `\n${sides[k]![0]} - off: ${kb(totals[k]! - totals[0]!)} KB a request; the frames that differ most:`,
    );
    for (const [f, v] of [...diff.entries()].sort((a, b) => Math.abs(b[1]) - Math.abs(a[1])).slice(0, TOP))
      console.log(`  ${kb(v).padStart(8)} KB  ${f}`);
  }
  session.disconnect();
  for (const a of apps) {
    await a.pool.close();
    await a.close();
  }
  sink.close();
  await stopAll();
}

main().catch(async (err) => {
  console.error(err);
  await stopAll();
  process.exit(1);
});
