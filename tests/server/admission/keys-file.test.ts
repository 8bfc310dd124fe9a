/**
 * Keys in a separate file (TOOLPROOF_KEYS_FILE, or the YAML's `keysFile` relative to the YAML),
 * over real HTTP: watched with the YAML, a key revoked in that file is refused within a second;
 * re-read on a reload (what SIGHUP runs) without the watch; an invalid keys file is kept out and
 * the running keys serve on.
 */
import { mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type ToolproofApp } from '../../../server/app.js';
import { type Config, loadConfig } from '../../../server/config.js';
import { createReloader, type Reloader } from '../../../server/reload.js';
import { loadFactor } from '../../hardening/loop-probe.js';
import { createSimulator, type Simulator } from '../../../simulator/index.js';
import { closeApp } from '../stack.js';

let sim: Simulator;
const running: Array<{ app: ToolproofApp; reloader: Reloader }> = [];

function write(path: string, text: string): void {
  // As a secret store's mount or a config manager does: a new file renamed over the old one.
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
}

const keyList = (names: string[]) => names.map((k) => `- name: ${k}\n  key: sk-${k}-0123456789\n`).join('');

async function start(env: Record<string, string>): Promise<{ origin: string; reloader: Reloader }> {
  const config: Config = Object.freeze({ ...loadConfig(env), simulator: true });
  const app = await buildApp(config, { logger: false });
  const reloader = createReloader(app, env, async (c) => Object.freeze({ ...c, simulator: true }));
  await app.listen({ host: '127.0.0.1', port: 0 });
  running.push({ app, reloader });
  return { origin: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, reloader };
}

function chat(origin: string, key: string) {
  return fetch(`${origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer sk-${key}-0123456789` },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hello there' }] }),
  });
}

beforeAll(async () => {
  sim = await createSimulator({ personality: 'vllm', scenario: 'echo' });
});

afterAll(async () => {
  for (const r of running) {
    r.reloader.close();
    await closeApp(r.app);
  }
  await sim.close();
});

describe('keys file', () => {
  it("the YAML's keysFile, watched: a key revoked in it is refused within a second", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tp-keys-'));
    const yaml = join(dir, 'toolproof.yaml');
    const keys = join(dir, 'keys.yaml');
    write(keys, `keys:\n${keyList(['alice', 'bob']).replace(/^/gm, '  ')}`);
    write(
      yaml,
      `defaults:\n  forceToolUse: false\nmodels:\n  m:\n    upstream: ${sim.url}\nkeysFile: keys.yaml\n`,
    );
    const { origin } = await start({ TOOLPROOF_CONFIG: yaml, TOOLPROOF_CONFIG_WATCH: '1' });
    expect((await chat(origin, 'bob')).status).toBe(200);
    expect((await chat(origin, 'mallory')).status).toBe(401);
    write(keys, keyList(['alice']));
    const revokedAt = Date.now();
    let status = 200;
    while (status === 200 && Date.now() - revokedAt < 10_000) {
      status = (await chat(origin, 'bob')).status;
      if (status === 200) await new Promise((r) => setTimeout(r, 25));
    }
    expect(status).toBe(401);
    // Within a second on a small box at rest; a loaded box stretches the watch, its debounce and
    // the reload alike (loadFactor, measured only when over).
    const took = Date.now() - revokedAt;
    if (took >= 1_000) expect(took).toBeLessThan(1_000 * loadFactor());
    expect((await chat(origin, 'alice')).status).toBe(200);
  });

  it('TOOLPROOF_KEYS_FILE without the watch: a reload (SIGHUP) re-reads it; a bad file is kept out', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tp-keys-'));
    const yaml = join(dir, 'toolproof.yaml');
    const keys = join(dir, 'secret-keys.yaml');
    write(keys, keyList(['alice']));
    write(yaml, `defaults:\n  forceToolUse: false\nmodels:\n  m:\n    upstream: ${sim.url}\n`);
    const { origin, reloader } = await start({ TOOLPROOF_CONFIG: yaml, TOOLPROOF_KEYS_FILE: keys });
    expect((await chat(origin, 'alice')).status).toBe(200);
    expect((await chat(origin, 'carol')).status).toBe(401);
    write(keys, keyList(['carol']));
    expect(await reloader.reload('SIGHUP')).toBe(true);
    expect((await chat(origin, 'carol')).status).toBe(200);
    expect((await chat(origin, 'alice')).status).toBe(401);
    // A key too short for the schema: the reload fails, carol's key still works.
    write(keys, '- name: dave\n  key: short\n');
    expect(await reloader.reload('SIGHUP')).toBe(false);
    expect((await chat(origin, 'carol')).status).toBe(200);
    // The per-client request counter carries the names of the file's keys, and only those (an
    // unknown key is refused before it has a name: no series of its own).
    const metrics = await (await fetch(`${origin}/metrics`)).text();
    const series = metrics.split('\n').filter((l) => l.startsWith('toolproof_key_requests_total{'));
    expect(series).toContain('toolproof_key_requests_total{key="alice",status="200"} 1');
    expect(series).toContain('toolproof_key_requests_total{key="carol",status="200"} 2');
    expect(series.every((l) => /key="(alice|carol)"/.test(l))).toBe(true);
  });
});
