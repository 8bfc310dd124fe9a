/**
 * Arrival order across cold workers (docs/operations.md, "Several workers or replicas"): the real
 * process with `TOOLPROOF_WORKERS=2` in front of its built-in simulator, one key at
 * `concurrency: 1`. Each round starts a fresh group, then: a holder takes the key's slot for
 * `--hold` ms (its connection reaches one worker, which is warm from then on); request X comes on
 * a new connection (the other worker, cold: its first request), and request Y `--gap` ms later on
 * another (back to the warm worker). Both wait in the key's queue; X came first, so X should be
 * answered first. Printed: the rounds in which Y went first.
 *
 *   npx tsx bench/cold-worker-order.ts [--rounds=5] [--gap=60] [--hold=1500]
 *
 * Run it on another commit to compare (it uses only the server's process and HTTP).
 */
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Agent, fetch } from 'undici';
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    gap: { type: 'string', default: '60' },
    hold: { type: 'string', default: '1500' },
  },
});
const KEY = 'sk-bench-cold-worker-0001';

/** One request on a connection of its own; resolves with when it was answered. */
async function ask(origin: string, name: string, delayMs = 0): Promise<{ name: string; at: number }> {
  const dispatcher = new Agent({ connections: 1, pipelining: 0 });
  const res = await fetch(`${origin}/v1/chat/completions`, {
    method: 'POST',
    dispatcher,
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${KEY}`,
      'x-sim-scenario': JSON.stringify({ say: name, delayMs }),
    },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: name }] }),
  });
  await res.text();
  const at = performance.now();
  await dispatcher.close();
  if (res.status !== 200) throw new Error(`${name}: HTTP ${res.status}`);
  return { name, at };
}

const freePort = async (): Promise<number> => {
  const s = createServer().listen(0, '127.0.0.1');
  await once(s, 'listening');
  const { port } = s.address() as { port: number };
  s.close();
  return port;
};

/** server/main.ts (under tsx) with two workers on `config`, once both listen. */
async function startGroup(config: string): Promise<{ child: ChildProcess; origin: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts'], {
    env: {
      ...process.env,
      TOOLPROOF_CONFIG: config,
      TOOLPROOF_WORKERS: '2',
      TOOLPROOF_PORT: String(port),
      TOOLPROOF_LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('2 workers listening')) resolve();
    });
    child.on('exit', (code) => reject(new Error(`toolproof exited ${code}`)));
  });
  child.stdout!.resume();
  return { child, origin: `http://127.0.0.1:${port}` };
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'tp-cold-order-'));
  const file = join(dir, 'toolproof.yaml');
  writeFileSync(
    file,
    `admission:\n  concurrency: 4\nkeys:\n  - name: bench\n    key: ${KEY}\n    concurrency: 1\n    queueTimeoutMs: 60000\n`,
  );
  let yFirst = 0;
  try {
    for (let round = 0; round < Number(values.rounds); round++) {
      const { child, origin } = await startGroup(file);
      try {
        const holder = ask(origin, 'holder', Number(values.hold));
        // Let the holder reach the key's slot before the two contenders come.
        await new Promise((r) => setTimeout(r, 300));
        const x = ask(origin, 'x');
        await new Promise((r) => setTimeout(r, Number(values.gap)));
        const y = ask(origin, 'y');
        const [, ax, ay] = await Promise.all([holder, x, y]);
        const first = ax.at < ay.at ? 'x' : 'y';
        if (first === 'y') yFirst++;
        process.stderr.write(
          `round ${round + 1}: ${first} first (answers ${Math.abs(ax.at - ay.at).toFixed(0)} ms apart)\n`,
        );
      } finally {
        child.kill('SIGTERM');
        await once(child, 'exit');
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(
    `Y (sent ${values.gap} ms after X, to the warm worker) answered first in ${yFirst} of ${values.rounds} rounds`,
  );
}

void main();
