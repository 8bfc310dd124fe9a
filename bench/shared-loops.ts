/**
 * Agent loops sharing one backend (docs/operations.md, "Fair shares within a class"): the real
 * server on loopback in front of the built-in simulator, admission `concurrency: 2` (two upstream
 * slots), every request holding its slot a fixed time (`x-sim-scenario` delayMs). Key `alice`
 * runs four loops at `concurrency: 3` (she always has a request queued); keys `bob` and `dave`
 * run two loops each at `concurrency: 1` (one turn after another: each next turn reaches the
 * upstream's queue only once the last has ended). Each loop sends its next request as soon as
 * its last is answered, for `--seconds`. Printed: the answers each key got, and its share of
 * the answers against an equal split between the three keys.
 *
 *   npx tsx bench/shared-loops.ts [--seconds=20] [--hold=600]
 *
 * Run it on another commit to compare (it uses only the server's public entry points).
 */
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { Agent, fetch } from 'undici';
import { buildApp } from '../server/app.js';
import { type Config, loadConfig } from '../server/config.js';
import { createSimulator } from '../simulator/index.js';

const { values } = parseArgs({
  options: { seconds: { type: 'string', default: '20' }, hold: { type: 'string', default: '600' } },
});
const SECONDS = Number(values.seconds);
const HOLD_MS = Number(values.hold);
const KEYS = [
  { name: 'alice', key: 'sk-alice-bench-loops-0001', concurrency: 3, loops: 4 },
  { name: 'bob', key: 'sk-bob-bench-loops-000001', concurrency: 1, loops: 2 },
  { name: 'dave', key: 'sk-dave-bench-loops-00001', concurrency: 1, loops: 2 },
];
const log = (line: string) => process.stderr.write(`${line}\n`);

async function loop(origin: string, key: string, until: number, answers: Map<string, number>, name: string) {
  const agent = new Agent({ connections: 1 });
  while (performance.now() < until) {
    const res = await fetch(`${origin}/v1/chat/completions`, {
      method: 'POST',
      dispatcher: agent,
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${key}`,
        'x-sim-scenario': JSON.stringify({ say: 'ok', delayMs: HOLD_MS }),
      },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: name }] }),
    });
    await res.text();
    if (res.status !== 200) throw new Error(`${name}: HTTP ${res.status}`);
    answers.set(name, (answers.get(name) ?? 0) + 1);
  }
  await agent.close();
}

async function main() {
  const sim = await createSimulator({ personality: 'vllm' });
  const base = loadConfig(
    { TOOLPROOF_UPSTREAM_URL: sim.url, TOOLPROOF_LOG_LEVEL: 'silent' },
    {
      defaults: { forceToolUse: false },
      admission: { concurrency: 2, queueTimeoutMs: 120_000 },
      keys: KEYS.map((k) => ({
        name: k.name,
        key: k.key,
        concurrency: k.concurrency,
        queueTimeoutMs: 60_000,
      })),
    },
  );
  const config: Config = Object.freeze({ ...base, simulator: true });
  const app = await buildApp(config, { logger: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const answers = new Map<string, number>();
  const until = performance.now() + SECONDS * 1000;
  await Promise.all(
    KEYS.flatMap((k) => Array.from({ length: k.loops }, () => loop(origin, k.key, until, answers, k.name))),
  );
  await app.close();
  await sim.close();
  const total = [...answers.values()].reduce((a, b) => a + b, 0);
  log(`2 slots, each request holds one ${HOLD_MS} ms, ${SECONDS} s; ${total} answers`);
  for (const k of KEYS) {
    const n = answers.get(k.name) ?? 0;
    log(
      `${k.name.padEnd(6)} ${k.loops} loops, concurrency ${k.concurrency}: ${n} answers, ${((n / total) * 3).toFixed(2)}x an equal share`,
    );
  }
}

void main().then(
  () => process.exit(0),
  (err: unknown) => {
    log(String((err as Error).stack ?? err));
    process.exit(1);
  },
);
