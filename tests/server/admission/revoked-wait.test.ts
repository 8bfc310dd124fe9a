/**
 * A key revoked while its requests wait for an upstream slot (the replica's admission queue, past
 * the key's own queue), over real HTTP with the real SDKs: a reload of the keys file refuses them
 * at once with the 401 in each door's shape, and none of them reaches the upstream. Before
 * (key-waits.ts), they waited out the queue and were served on the revoked key: measured with
 * two workers, a revoked key's stream was served 2.7 s after the reload. With TOOLPROOF_WORKERS
 * the wait is in the cluster primary's queue: the revoked request leaves it there too.
 */
import Anthropic from '@anthropic-ai/sdk';
import { mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RequestAbort } from '../../../server/abort.js';
import type { ApiKeyEntry } from '../../../server/config-keys.js';
import { GroupGate } from '../../../server/group-admission.js';
import { KeyWaits } from '../../../server/key-waits.js';
import { buildApp, type ToolproofApp } from '../../../server/app.js';
import { type Config, loadConfig } from '../../../server/config.js';
import { createReloader, type Reloader } from '../../../server/reload.js';
import { createSimulator, type Simulator } from '../../../simulator/index.js';
import { inProcessGroup, turn } from '../../support/group-channel.js';
import { closeApp, waitFor } from '../stack.js';

let sim: Simulator;
let app: ToolproofApp;
let reloader: Reloader;
let origin: string;
const dir = mkdtempSync(join(tmpdir(), 'tp-revoked-wait-'));
const keysFile = join(dir, 'keys.yaml');

function writeKeys(names: string[]): void {
  writeFileSync(`${keysFile}.tmp`, names.map((k) => `- name: ${k}\n  key: sk-${k}-0123456789\n`).join(''));
  renameSync(`${keysFile}.tmp`, keysFile);
}

const HOLD = JSON.stringify({ say: 'held', delayMs: 1_500 });

beforeAll(async () => {
  sim = await createSimulator({ personality: 'vllm', scenario: 'echo' });
  const yaml = join(dir, 'toolproof.yaml');
  writeFileSync(
    yaml,
    `defaults:\n  forceToolUse: false\nadmission:\n  concurrency: 1\nmodels:\n  m:\n    upstream: ${sim.url}\n    admission:\n      concurrency: 1\n`,
  );
  writeKeys(['alice', 'bob']);
  const env = { TOOLPROOF_CONFIG: yaml, TOOLPROOF_KEYS_FILE: keysFile };
  // simulator: the x-sim-scenario header reaches the backend (alice's request holds the slot).
  const config: Config = Object.freeze({ ...loadConfig(env), simulator: true });
  app = await buildApp(config, { logger: false });
  reloader = createReloader(app, env, async (c) => Object.freeze({ ...c, simulator: true }));
  await app.listen({ host: '127.0.0.1', port: 0 });
  origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  reloader.close();
  await closeApp(app);
  await sim.close();
});

describe('a key revoked while its requests wait for an upstream slot', () => {
  it('refuses them at once with the 401 (chat stream, Messages), none reaching the model', async () => {
    const alice = new OpenAI({ baseURL: `${origin}/v1`, apiKey: 'sk-alice-0123456789', maxRetries: 0 });
    const held = alice.chat.completions.create(
      { model: 'm', messages: [{ role: 'user', content: 'hold the slot' }] },
      { headers: { 'x-sim-scenario': HOLD } },
    );
    await waitFor(() => sim.requests.length === 1);
    const bobChat = new OpenAI({ baseURL: `${origin}/v1`, apiKey: 'sk-bob-0123456789', maxRetries: 0 });
    const bobMessages = new Anthropic({ baseURL: origin, apiKey: 'sk-bob-0123456789', maxRetries: 0 });
    const settle = <T>(p: Promise<T>) =>
      p.then(
        () => ({ status: 200, at: Date.now(), error: undefined as unknown }),
        (e: { status?: number; error?: unknown }) => ({ status: e.status, at: Date.now(), error: e.error }),
      );
    const chat = settle(
      bobChat.chat.completions
        .create({ model: 'm', stream: true, messages: [{ role: 'user', content: 'bob on chat' }] })
        .then(async (s) => {
          for await (const _ of s);
        }),
    );
    const messages = settle(
      bobMessages.messages.create({
        model: 'm',
        max_tokens: 50,
        messages: [{ role: 'user', content: 'bob on messages' }],
      }),
    );
    // Both past bob's key (it has no limits) and queued for the one slot.
    await waitFor(() =>
      app.toolproof.upstreams.all().some((c) => c.admissionLoad().some((l) => l.queued === 2)),
    );
    writeKeys(['alice']);
    expect(await reloader.reload('test')).toBe(true);
    const revokedAt = Date.now();
    const [c, m] = await Promise.all([chat, messages]);
    expect(c.status).toBe(401);
    expect(m.status).toBe(401);
    expect((m.error as { type?: string; error?: { type?: string } }).error?.type).toBe(
      'authentication_error',
    );
    // At once, not when alice's request gives the slot back (1.5 s after it began).
    expect(Math.max(c.at, m.at) - revokedAt).toBeLessThan(500);
    expect((await held).choices[0]?.message.content).toBe('held');
    // Only alice's request reached the model.
    expect(sim.requests.length).toBe(1);
    expect(app.toolproof.keyWaits.size).toBe(0);
  });
});

describe("a revoked key's wait in the cluster primary's queue (TOOLPROOF_WORKERS > 1)", () => {
  it('leaves the queue: the freed slot goes to the next request, not to the revoked one', async () => {
    const { ch } = inProcessGroup();
    const gate = new GroupGate(
      ch,
      'm#0',
      { concurrency: 1, reserved: 0, queueSize: 8, queueTimeoutMs: 5_000 },
      {},
    );
    const waits = new KeyWaits();
    const alice: ApiKeyEntry = { name: 'alice', key: 'sk-alice-0123456789' };
    const bob: ApiKeyEntry = { name: 'bob', key: 'sk-bob-0123456789' };
    const holder = await gate.enter('normal', new RequestAbort(), {
      id: 'key alice',
      named: true,
      key: 'alice',
    });
    const joined = waits.join(bob, new RequestAbort());
    const queued = gate.enter('normal', joined.signal, { id: 'key bob', named: true, key: 'bob' });
    const outcome = Promise.resolve(queued).then(
      () => 'admitted',
      (err: { code?: string }) => err.code,
    );
    await turn();
    await turn();
    expect(gate.load.queued).toBe(1);
    waits.reloaded([alice]);
    expect(await outcome).toBe('TP_ERR_UNAUTHORIZED');
    joined.leave();
    holder.release();
    // Had bob's place stayed in the primary's queue, the slot would have gone to it and this would wait.
    const next = await gate.enter('normal', new RequestAbort(), {
      id: 'key alice',
      named: true,
      key: 'alice',
    });
    expect(next.queuedMs).toBe(0);
    next.release();
    expect(waits.size).toBe(0);
  });
});
