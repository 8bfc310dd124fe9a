/**
 * Configuration reload (docs/operations.md): SIGHUP, or a change of the YAML file (or the keys
 * file, TOOLPROOF_KEYS_FILE / `keysFile`) when
 * TOOLPROOF_CONFIG_WATCH is on, reads the environment and the YAML again, validates them whole,
 * and swaps the new configuration in at once (one assignment: a request reads either the old or
 * the new one, never a mix). Each worker of TOOLPROOF_WORKERS reloads itself (the primary passes
 * SIGHUP on).
 *
 * - Requests that started keep what they resolved (their route, settings, upstream client):
 *   open streams finish on the configuration they started with.
 * - The next request sees the new one: keys (a revoked key is refused at once), models, routes,
 *   fallbacks, admission limits (the running gates take the new limits, queued requests stay).
 * - An invalid file keeps the old configuration, with an error line naming the bad key and
 *   toolproof_config_reloads_total{result="error"}; toolproof_config_reload_ok reads 0 until a
 *   reload succeeds.
 * - What only a restart changes: listen address and port, body and client limits, timeouts,
 *   affinity, workers, the Responses item store's size; a reload that changes them logs that
 *   they were kept.
 */
import { type FSWatcher, watch } from 'node:fs';
import { ConfigError, type Config, loadConfig, simulatorUpstream } from './config.js';
import type { ToolproofApp } from './app.js';

/** Settings a running process cannot change: a reload keeps the running ones. */
const FIXED = [
  'host',
  'port',
  'bodyLimitBytes',
  'clientTimeouts',
  'timeouts',
  'shutdownGraceMs',
  'affinity',
  'workers',
  'corsOrigins',
  'protectOps',
  'logLevel',
  // The Responses item store is sized once (server/front-doors/responses/item-store.ts).
  'responsesStoreBytes',
] as const;

export interface Reloader {
  /** Reads and swaps the configuration; resolves true when the new one is in force. */
  reload(reason: string): Promise<boolean>;
  close(): void;
}

export function createReloader(
  app: ToolproofApp,
  env: NodeJS.ProcessEnv,
  /** Applied to a freshly loaded configuration before the swap (main.ts: the template probe). */
  prepare: (config: Config) => Promise<Config> = async (c) => c,
): Reloader {
  const state = app.toolproof;
  const watchers: FSWatcher[] = [];
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<boolean> = Promise.resolve(true);

  const reloadOnce = async (reason: string): Promise<boolean> => {
    const old = state.config;
    let next: Config;
    try {
      next = await prepare(loadConfig(env));
    } catch (err) {
      const message = err instanceof ConfigError ? err.message : String((err as Error)?.message ?? err);
      state.metrics.configReloads.labels('error').inc();
      state.metrics.configReloadOk.set(0);
      app.log.error(
        { reason, error: message },
        'configuration reload failed: the running configuration is kept',
      );
      return false;
    }
    const kept: string[] = [];
    const merged: Record<string, unknown> = { ...next };
    for (const key of FIXED) {
      if (JSON.stringify(next[key]) !== JSON.stringify(old[key])) kept.push(key);
      merged[key] = old[key];
    }
    // Simulator mode: the built-in simulator stays the default upstream, with the new admission.
    if (old.simulator && next.simulator && old.defaultUpstream)
      merged.defaultUpstream = simulatorUpstream(old.defaultUpstream.urls[0]!, next.simulatorAdmission);
    const config = Object.freeze(merged) as unknown as Config;
    // The swap: every later request reads these.
    state.config = config;
    state.chatDeps.config = config;
    // Requests waiting for a slot of a revoked key are refused now, not admitted when one frees.
    state.keyLimits.reloaded(config.keys);
    // ... and those past it, waiting for an upstream slot (key-waits.ts).
    state.keyWaits.reloaded(config.keys);
    state.metrics.configReloads.labels('ok').inc();
    state.metrics.configReloadOk.set(1);
    app.log.info(
      {
        reason,
        models: Object.keys(config.models).length,
        keys: config.keys.length,
        routes: config.routes.length,
        ...(kept.length > 0 ? { keptUntilRestart: kept } : {}),
      },
      'configuration reloaded',
    );
    return true;
  };

  const reloader: Reloader = {
    reload(reason) {
      // One at a time, in order: the last reload reads the file as it is last.
      running = running.then(() => reloadOnce(reason));
      return running;
    },
    close() {
      for (const w of watchers) w.close();
      clearTimeout(timer);
    },
  };

  // The YAML and the separate keys file (the one in force at start; a reload that names another
  // reads it, and SIGHUP re-reads both).
  const paths = [env.TOOLPROOF_CONFIG, state.config.keysFile].filter((p): p is string => !!p);
  if (paths.length > 0 && /^(1|on|true)$/i.test(env.TOOLPROOF_CONFIG_WATCH ?? '')) {
    // The directory, not the file: editors and config managers replace the file by a rename,
    // which a watch on the file itself would lose. A burst of events is one reload.
    const byDir = new Map<string, Set<string>>();
    for (const path of paths) {
      const { dir, base } = splitPath(path);
      byDir.set(dir, (byDir.get(dir) ?? new Set()).add(base));
    }
    for (const [dir, bases] of byDir) {
      const watcher = watch(dir, { persistent: false }, (_event, name) => {
        if (name !== null && !bases.has(name)) return;
        clearTimeout(timer);
        timer = setTimeout(() => void reloader.reload('file changed'), 100);
        timer.unref();
      });
      watcher.on('error', (err) => app.log.warn({ err }, 'configuration file watch failed'));
      watchers.push(watcher);
    }
  }
  return reloader;
}

function splitPath(path: string): { dir: string; base: string } {
  const i = path.lastIndexOf('/');
  return i < 0 ? { dir: '.', base: path } : { dir: path.slice(0, i) || '/', base: path.slice(i + 1) };
}
