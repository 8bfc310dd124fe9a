/**
 * A closed app lets go of its state. prom-client's default metrics hold their registry for the
 * life of the process (a GC PerformanceObserver and an event-loop delay histogram it gives no way
 * to stop), and the registry held the app's metrics, whose collect callbacks hold its state: the
 * capture ring, the upstream pools. Every app a process built stayed alive after close (the test
 * suite's workers build hundreds: their live heap grew ~30 -> 260 MB over 70 files, and every full
 * GC after paid for it).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { expect, it } from 'vitest';
import { buildApp } from '../../server/app.js';
import { loadConfig } from '../../server/config.js';

setFlagsFromString('--expose_gc');
const gc = runInNewContext('gc') as () => void;

async function closedApp(): Promise<WeakRef<object>> {
  const app = await buildApp(loadConfig({ TOOLPROOF_UPSTREAM_URL: 'http://127.0.0.1:9/v1' }), {
    logger: false,
  });
  await app.ready();
  // the metrics read the app's state when collected: the chain that held it
  expect(await app.toolproof.metrics.registry.metrics()).toContain('toolproof_');
  const state = new WeakRef<object>(app.toolproof);
  await app.close();
  return state;
}

it('a closed app (default metrics on) is garbage: its state is collected', async () => {
  const state = await closedApp();
  for (let i = 0; i < 5 && state.deref() !== undefined; i++) {
    await new Promise((r) => setTimeout(r, 10));
    gc();
  }
  expect(state.deref() === undefined, "the closed app's state is still reachable").toBe(true);
});
