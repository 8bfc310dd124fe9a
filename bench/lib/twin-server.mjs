/**
 * bench/tracing-twin.ts's server: two toolproof apps of one build in one process, one with
 * tracing off and one with it on (every request sampled unless TWIN_SAMPLER and TWIN_SAMPLER_ARG
 * name another sampler, OTLP/HTTP protobuf to the endpoint
 * given), each on a port of its own; prints `{"off":PORT,"on":PORT}` once both listen, and exits
 * when stdin closes. Capture is off in both.
 *
 * TWIN_MODE=quad: two more apps, `cap` (capture alone) and `both` (capture and tracing).
 *
 * With a fourth argument, another build's app with tracing on beside them (`before`: a copy of
 * bench/results/.build made before a change), so that before and after share one process too.
 *
 *   node [npm start's flags] bench/lib/twin-server.mjs <build dir> <upstream origin> <OTLP endpoint> [<before build dir>]
 */
import { join, resolve } from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';

const [buildDir, upstream, otlp, beforeDir] = process.argv.slice(2);
const at = (dir, p) => pathToFileURL(resolve(join(dir, p))).href;
await import(at(buildDir, 'server/v8-tuning.js'));
async function build(dir) {
  const { loadConfig } = await import(at(dir, 'server/config.js'));
  const { buildApp } = await import(at(dir, 'server/app.js'));
  const { resolvePreserveThinking } = await import(at(dir, 'server/template-probe.js'));
  const { resolveCapabilities } = await import(at(dir, 'server/capability-probe.js'));
  return async (env) => {
    let config = loadConfig(env);
    config = await resolvePreserveThinking(config);
    config = await resolveCapabilities(config);
    return buildApp(config);
  };
}
const start = await build(buildDir);
const startBefore = beforeDir ? await build(beforeDir) : undefined;

const base = {};
for (const [k, v] of Object.entries(process.env))
  if (!k.startsWith('TOOLPROOF_') && !k.startsWith('OTEL_')) base[k] = v;
Object.assign(base, {
  TOOLPROOF_UPSTREAM_URL: `${upstream}/v1`,
  TOOLPROOF_HOST: '127.0.0.1',
  TOOLPROOF_PORT: '0',
  TOOLPROOF_LOG_LEVEL: 'warn',
  TOOLPROOF_CAPTURE_MB: '0',
});
// TWIN_MODE=capture: the `on` (and `before`) apps capture (the default 10 MB ring, or
// TWIN_CAPTURE_MB) with tracing off, instead of tracing with capture off.
const traced =
  process.env.TWIN_MODE === 'capture'
    ? { ...base, TOOLPROOF_CAPTURE_MB: process.env.TWIN_CAPTURE_MB || '10' }
    : { ...base, OTEL_EXPORTER_OTLP_ENDPOINT: otlp, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' };
// bench/tracing-twin.ts --sampler=NAME[:ARG]: the traced apps' sampler (default: every request).
if (process.env.TWIN_SAMPLER) traced.OTEL_TRACES_SAMPLER = process.env.TWIN_SAMPLER;
if (process.env.TWIN_SAMPLER_ARG) traced.OTEL_TRACES_SAMPLER_ARG = process.env.TWIN_SAMPLER_ARG;
// TWIN_MODE=quad: four apps, off, `on` (tracing alone), `cap` (capture alone) and `both`
// (capture and tracing): issue 28's both-on excess in one process.
const quad = process.env.TWIN_MODE === 'quad';
const captured = { ...base, TOOLPROOF_CAPTURE_MB: process.env.TWIN_CAPTURE_MB || '10' };
// TWIN_MODE=overcap: every app captures (the default 10 MB ring, or TWIN_CAPTURE_MB): `off` is
// capture alone, `on` (and `before`) capture and tracing: what tracing adds over capture.
if (process.env.TWIN_MODE === 'overcap') {
  base.TOOLPROOF_CAPTURE_MB = process.env.TWIN_CAPTURE_MB || '10';
  traced.TOOLPROOF_CAPTURE_MB = base.TOOLPROOF_CAPTURE_MB;
}
const ports = {};
// TWIN_BEFORE_ENV="K=V;...": set in this process's environment while the before app is built (a
// build-time switch of an experiment read from process.env), then removed.
const beforeEnv = (process.env.TWIN_BEFORE_ENV ?? '')
  .split(';')
  .filter(Boolean)
  .map((kv) => kv.split('='));
for (const [name, make, env] of [
  ['off', start, base],
  ['on', start, traced],
  ...(startBefore ? [['before', startBefore, traced]] : []),
  ...(quad
    ? [
        ['cap', start, captured],
        ['both', start, { ...traced, TOOLPROOF_CAPTURE_MB: captured.TOOLPROOF_CAPTURE_MB }],
      ]
    : []),
]) {
  if (name === 'before') for (const [k, v] of beforeEnv) process.env[k] = v;
  const app = await make(env);
  if (name === 'before') for (const [k] of beforeEnv) delete process.env[k];
  await app.listen({ host: '127.0.0.1', port: 0 });
  ports[name] = app.server.address().port;
}
process.stdout.write(`${JSON.stringify(ports)}\n`);
// An exit of its own (a --cpu-prof profile is written then), on stdin's end or a SIGTERM.
process.stdin.on('end', () => process.exit(0));
// bench/tracing-twin.ts --heap: a line `heap` on stdin answers the heap in use (after two full
// collections when the line says `heap gc`) and the collections counted so far, as
// `{"heap":BYTES,"gcs":N}` (needs --expose-gc). The answer waits 20 ms: the count of a collection
// comes to the observer after it.
let gcs = 0;
new PerformanceObserver((list) => {
  gcs += list.getEntries().length;
}).observe({ entryTypes: ['gc'] });
let pending = '';
process.stdin.on('data', (d) => {
  pending += d.toString();
  let i = pending.indexOf('\n');
  while (i >= 0) {
    const line = pending.slice(0, i).trim();
    pending = pending.slice(i + 1);
    if (line.startsWith('heap')) {
      if (line.endsWith('gc')) {
        globalThis.gc();
        globalThis.gc();
      }
      const heap = process.memoryUsage().heapUsed;
      setTimeout(() => process.stdout.write(`${JSON.stringify({ heap, gcs })}\n`), 20);
    }
    i = pending.indexOf('\n');
  }
});
