/**
 * bench/tracing-twin.ts's server: two toolproof apps of one build in one process, one with
 * tracing off and one with it on (every request sampled unless TWIN_SAMPLER and TWIN_SAMPLER_ARG
 * name another sampler, OTLP/HTTP protobuf to the endpoint
 * given), each on a port of its own; prints `{"off":PORT,"on":PORT}` once both listen, and exits
 * when stdin closes. Capture is off in both.
 *
 * With a fourth argument, another build's app with tracing on beside them (`before`: a copy of
 * bench/results/.build made before a change), so that before and after share one process too.
 *
 *   node [npm start's flags] bench/lib/twin-server.mjs <build dir> <upstream origin> <OTLP endpoint> [<before build dir>]
 */
import { join, resolve } from 'node:path';
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
process.on('SIGTERM', () => process.exit(0));
process.stdin.resume();
