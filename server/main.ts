/**
 * The process: load and validate config (fail fast, naming the bad key), start the built-in
 * simulator when no upstream is configured (and say so loudly), listen, and shut down
 * gracefully: stop accepting, let open streams finish up to a deadline, then cut them.
 */
// First: V8 settings that must hold before any of the server's code runs.
import './v8-tuning.js';
import { announceListening, inWorkerGroup, joinWorkerGroup, runPrimary, workerCount } from './cluster.js';
import { ConfigError, type Config, loadConfig, simulatorUpstream } from './config.js';
import { describeListenError, shutdownGracefully } from './shutdown.js';

async function main(): Promise<void> {
  let config: Config;
  let workers: number;
  try {
    config = loadConfig(process.env);
    workers = workerCount(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`toolproof: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  // TOOLPROOF_WORKERS > 1: this process only supervises the workers (server/cluster.ts).
  if (
    runPrimary({
      workers,
      shutdownGraceMs: config.shutdownGraceMs,
      logLevel: config.logLevel,
      simulator: config.simulator,
    })
  )
    return;

  let simulator: { url: string; close(): Promise<void> } | undefined;
  if (config.simulator) {
    // Loaded only here: a process with a real upstream never loads the simulator's code.
    const { createSimulator } = await import('../simulator/index.js');
    // Cached prompt tokens reported (vLLM's --enable-prompt-tokens-details), so the inspector's
    // session view and the metrics show a cached ratio on the demo, not "–".
    simulator = await createSimulator({
      personality: 'vllm',
      scenario: 'demo',
      promptTokensDetails: true,
      host: '127.0.0.1',
      port: 0,
    });
    config = Object.freeze({
      ...config,
      defaultUpstream: simulatorUpstream(simulator.url, config.simulatorAdmission),
    });
  }

  // preserveThinking, startsInReasoning, vision and audio 'auto', contextWindow 0: asked of the
  // upstream once, before the first request (and again at each reload, below).
  // An upstream that refuses them without a key is said now, in one line, not at the first request.
  const { askBackends } = await import('./backend-probes.js');
  const { describeRefusal, refusalFetcher, servedModelIds } = await import('./capability-probe.js');
  const refused = new Map<string, string>();
  const fetcher = refusalFetcher((r) => refused.set(new URL(r.url).origin, describeRefusal(r)));
  config = await askBackends(config, fetcher);
  const served = config.defaultUpstream ? await servedModelIds(config.defaultUpstream, fetcher) : [];
  for (const line of refused.values()) process.stderr.write(`toolproof: ${line}\n`);

  // Loaded after the primary returned: a supervising primary never loads the server's code.
  const { buildApp, compileBodyValidators } = await import('./app.js');
  const app = await buildApp(config);
  app.toolproof.modelLabels.serve(served);
  if (simulator) {
    // A YAML that names no upstream (keys only, say) is the usual way to get here with
    // TOOLPROOF_CONFIG set: say which file, not "set TOOLPROOF_CONFIG".
    const file = process.env.TOOLPROOF_CONFIG;
    const fix = file
      ? `TOOLPROOF_CONFIG (${file}) names no upstream: add a top-level \`upstream:\` (or one under a model) there, or set TOOLPROOF_UPSTREAM_URL=http://your-vllm:8000/v1`
      : 'Set TOOLPROOF_UPSTREAM_URL=http://your-vllm:8000/v1 or TOOLPROOF_CONFIG';
    app.log.warn(
      { simulator: simulator.url },
      `*** NO UPSTREAM CONFIGURED: toolproof is running on its BUILT-IN SIMULATED BACKEND (a scripted small model that leaks tool calls and answers in prose). ${fix} to use a real model. ***`,
    );
  }
  joinWorkerGroup(app.toolproof.metrics);
  // SIGHUP (passed on by the cluster primary) and, when asked, a change of the YAML file.
  const { createReloader } = await import('./reload.js');
  // A reload asks the backends again, as the start did (before, it asked the template only, and
  // vision, audio and the window went back to unknown until the next restart).
  const reloader = createReloader(app, process.env, askBackends);
  process.on('SIGHUP', () => void reloader.reload('SIGHUP'));
  try {
    // A worker of a group compiles its routes' body validators before it serves (app.ts compiles
    // them at a route's first request): a cold worker's first requests reached the group's key
    // queue 0.1-0.3 s late, behind requests that came after them to a warm worker.
    if (inWorkerGroup()) {
      await app.ready();
      const started = performance.now();
      const validators = compileBodyValidators();
      app.log.debug(
        { validators, ms: Math.round(performance.now() - started) },
        'request body validators compiled before listening',
      );
    }
    await app.listen({ host: config.host, port: config.port });
  } catch (err) {
    process.stderr.write(`toolproof: ${describeListenError(err, config.host, config.port)}\n`);
    await simulator?.close();
    process.exit(1);
  }
  // With TOOLPROOF_WORKERS > 1: its private socket, for the requests whose Responses state it
  // holds that reach other workers (worker-relay.ts), before it counts as serving.
  const { WorkerRelay } = await import('./worker-relay.js');
  const relay = await WorkerRelay.join(app, app.toolproof);
  // With TOOLPROOF_WORKERS > 1: this worker serves now (the simulator's own listen does not count).
  announceListening(app.server.address(), simulator !== undefined);

  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    reloader.close();
    relay?.close();
    app.log.info(
      { signal, graceMs: config.shutdownGraceMs },
      'shutting down: no new requests, open streams may finish',
    );
    shutdownGracefully(app, { graceMs: config.shutdownGraceMs })
      .then(() => simulator?.close())
      .then(() => process.exit(0))
      .catch((err: unknown) => {
        app.log.error({ err }, 'shutdown failed');
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

void main().catch((err: unknown) => {
  process.stderr.write(`toolproof: failed to start: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
