/**
 * Reload with TOOLPROOF_WORKERS=2 (the real process: node --import tsx server/main.ts): 50
 * streams open on both workers, the YAML changes (a key revoked) and the primary gets SIGHUP;
 * every worker swaps its configuration, the revoked key is refused within a second on fresh
 * connections (whichever worker takes them), and none of the 50 streams breaks: each ends whole.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSimulator, type Simulator } from '../../../simulator/index.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../../..');

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

interface Proc {
  child: ChildProcess;
  /** Every JSON log line so far (primary and workers share stdout). */
  lines: Array<Record<string, unknown>>;
  text(): string;
  waitFor(
    match: (line: Record<string, unknown>) => boolean,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>;
  exited: Promise<number | null>;
}

function start(env: Record<string, string>): Proc {
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'server/main.ts')], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: Array<Record<string, unknown>> = [];
  let raw = '';
  let pending = '';
  const waiters = new Set<() => void>();
  child.stdout!.on('data', (chunk: Buffer) => {
    raw += chunk.toString();
    pending += chunk.toString();
    const parts = pending.split('\n');
    pending = parts.pop() ?? '';
    for (const part of parts) {
      try {
        lines.push(JSON.parse(part) as Record<string, unknown>);
      } catch {
        // not a log line
      }
    }
    for (const w of [...waiters]) w();
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    raw += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    lines,
    text: () => raw,
    exited,
    waitFor(match, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        let seen = 0;
        const check = () => {
          for (; seen < lines.length; seen++) {
            if (match(lines[seen]!)) {
              cleanup();
              resolve(lines[seen]!);
              return;
            }
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`no matching log line within ${timeoutMs} ms:\n${raw.slice(-3000)}`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
  };
}

const WORDS = Array.from({ length: 30 }, (_, i) => `w${i}`).join(' ');
const dir = mkdtempSync(join(tmpdir(), 'tp-reload-cluster-'));
const file = join(dir, 'toolproof.yaml');
let sim: Simulator;
let proc: Proc;
let origin: string;

const yaml = (keys: string[]) => `
defaults:
  forceToolUse: false
models:
  m:
    upstream: ${sim.url}
keys:
${keys.map((k) => `  - name: ${k}\n    key: sk-${k}-0123456789`).join('\n')}
`;

beforeAll(async () => {
  // Every answer streams 30 words, 40 ms apart: about 1.2 s per stream.
  sim = await createSimulator({ personality: 'vllm', scenario: [{ say: WORDS, chunkDelayMs: 40 }] });
  writeFileSync(file, yaml(['alice', 'bob']));
  const port = await freePort();
  origin = `http://127.0.0.1:${port}`;
  proc = start({
    TOOLPROOF_CONFIG: file,
    TOOLPROOF_WORKERS: '2',
    TOOLPROOF_PORT: String(port),
    TOOLPROOF_LOG_LEVEL: 'info',
  });
  await proc.waitFor((l) => typeof l.msg === 'string' && l.msg.includes('2 workers listening'), 60_000);
}, 90_000);

afterAll(async () => {
  proc.child.kill('SIGTERM');
  await proc.exited;
  await sim.close();
});

async function status(key: string): Promise<number> {
  const client = new Client(origin);
  try {
    const res = await client.request({
      method: 'POST',
      path: '/v1/chat/completions',
      headers: { 'content-type': 'application/json', authorization: `Bearer sk-${key}-0123456789` },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    });
    await res.body.dump();
    return res.statusCode;
  } finally {
    await client.close();
  }
}

async function openStream(): Promise<Promise<string>> {
  const client = new Client(origin);
  const res = await client.request({
    method: 'POST',
    path: '/v1/chat/completions',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bob-0123456789' },
    body: JSON.stringify({
      model: 'm',
      stream: true,
      messages: [{ role: 'user', content: 'stream please' }],
    }),
  });
  expect(res.statusCode).toBe(200);
  return res.body.text().finally(() => client.close());
}

describe('reload with two workers', () => {
  it('SIGHUP under 50 open streams breaks none, and a revoked key is refused within a second', async () => {
    const streams = await Promise.all(Array.from({ length: 50 }, () => openStream()));
    writeFileSync(file, yaml(['alice']));
    const hup = Date.now();
    proc.child.kill('SIGHUP');
    // Fresh connections, spread over both workers by the primary: refused once each worker swapped.
    let refusedInARow = 0;
    while (refusedInARow < 6) {
      expect(Date.now() - hup).toBeLessThan(1_000);
      refusedInARow = (await status('bob')) === 401 ? refusedInARow + 1 : 0;
    }
    expect(await status('alice')).toBe(200);
    const bodies = await Promise.all(streams);
    for (const body of bodies) {
      expect(body).toContain('w29');
      expect(body).not.toContain('"error"');
      expect(body.trimEnd().endsWith('data: [DONE]')).toBe(true);
    }
    const reloaded = proc.lines.filter((l) => l.msg === 'configuration reloaded');
    expect(new Set(reloaded.map((l) => l.pid)).size).toBe(2);
  }, 60_000);
});
