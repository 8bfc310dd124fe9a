/**
 * What the backends answered at start-up holds across a configuration reload: the reload asks
 * them again (server/backend-probes.ts, main.ts's prepare). Before, it asked for the template
 * only, and `vision`, `audio` and the context window went back to unknown until the next
 * restart: the window's tool-result cuts stopped, and a session's prompt changed at its next turn.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type ToolproofApp } from '../../server/app.js';
import { askBackends } from '../../server/backend-probes.js';
import { loadConfig } from '../../server/config.js';
import { createReloader } from '../../server/reload.js';
import { createSimulator, type Simulator } from '../../simulator/index.js';
import { closeApp } from './stack.js';

describe('askBackends: at start-up and at each reload', () => {
  let sim: Simulator;
  let app: ToolproofApp;
  beforeAll(async () => {
    sim = await createSimulator({ personality: 'llama-server', scenario: 'demo', nCtx: 8192, audio: true });
  });
  afterAll(async () => {
    if (app) await closeApp(app);
    await sim.close();
  });

  it("the window, vision and audio read from llama-server's /props, and read again by a reload", async () => {
    const env = { TOOLPROOF_UPSTREAM_URL: sim.url };
    const config = await askBackends(loadConfig(env));
    expect(config.defaults).toMatchObject({ contextWindow: 8192, vision: false, audio: true });
    app = await buildApp(config, { logger: false });
    const reloader = createReloader(app, env, askBackends);
    try {
      expect(await reloader.reload('test')).toBe(true);
      expect(app.toolproof.config.defaults).toMatchObject({
        contextWindow: 8192,
        vision: false,
        audio: true,
      });
    } finally {
      reloader.close();
    }
  });
});
