/**
 * Fair shares bench (docs/operations.md, "Fair shares within a class"): the real server on
 * loopback in front of the built-in simulator, admission `concurrency: 2` (two upstream slots),
 * every request holding its slot a fixed time (`x-sim-scenario` delayMs, 500 ms). Client A sends
 * 30 requests at once; once all have arrived, client B sends one. Measured at B's
 * client: its time to the answer, less the hold (= its wait for a slot), and how many of A's
 * answers came before B's. Two runs: named keys (A and B are keys `alice`, `bob`) and an open
 * proxy (A from 127.0.0.1, B from 127.0.0.2, no keys).
 *
 *   npx tsx bench/fair-admission.ts [--rounds=5] [--hold=500] [--burst=30]
 *
 * Run it on another commit to compare (it uses only the server's public entry points).
 */
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { Agent, fetch } from 'undici';
import { buildApp, type ToolproofApp } from '../server/app.js';
import { type Config, loadConfig } from '../server/config.js';
import { createSimulator } from '../simulator/index.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    hold: { type: 'string', default: '500' },
    burst: { type: 'string', default: '30' },
  },
});
const ROUNDS = Number(values.rounds);
const HOLD_MS = Number(values.hold);
const BURST = Number(values.burst);
const SLOTS = 2;
const KEYS = { alice: 'sk-alice-bench-000000001', bob: 'sk-bob-bench-00000000001' };
const log = (line: string) => process.stderr.write(`${line}\n`);

async function ask(origin: string, from: string, key: string | undefined, done: string[], name: string) {
  const agent = new Agent({ localAddress: from });
  const started = performance.now();
  const res = await fetch(`${origin}/v1/chat/completions`, {
    method: 'POST',
    dispatcher: agent,
    headers: {
      'content-type': 'application/json',
      'x-sim-scenario': JSON.stringify({ say: 'ok', delayMs: HOLD_MS }),
      ...(key ? { authorization: `Bearer ${key}` } : {}),
    },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: name }] }),
  });
  await res.text();
  const ms = performance.now() - started;
  done.push(name);
  await agent.close();
  if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
  return ms;
}

async function round(app: ToolproofApp, origin: string, keyed: boolean) {
  const done: string[] = [];
  const burst = Array.from({ length: BURST }, (_, i) =>
    ask(origin, '127.0.0.1', keyed ? KEYS.alice : undefined, done, `a${i}`),
  );
  const load = () => app.toolproof.upstreams.all()[0]?.admissionLoad()[0];
  // every one of A's requests has arrived (queued, in flight or answered)
  const arrived = () => (load()?.queued ?? 0) + (load()?.active ?? 0) + done.length;
  while (arrived() < BURST) await new Promise((r) => setTimeout(r, 5));
  const ahead = load()?.queued ?? 0;
  const b = ask(origin, '127.0.0.2', keyed ? KEYS.bob : undefined, done, 'b');
  const [ms] = await Promise.all([b, ...burst]);
  return { waitMs: ms - HOLD_MS, before: done.indexOf('b'), ahead };
}

async function run(keyed: boolean) {
  const sim = await createSimulator({ personality: 'vllm' });
  const base = loadConfig(
    { TOOLPROOF_UPSTREAM_URL: sim.url, TOOLPROOF_LOG_LEVEL: 'silent' },
    {
      defaults: { forceToolUse: false },
      admission: { concurrency: SLOTS, queueTimeoutMs: 120_000 },
      ...(keyed
        ? {
            keys: [
              { name: 'alice', key: KEYS.alice },
              { name: 'bob', key: KEYS.bob },
            ],
          }
        : {}),
    },
  );
  const config: Config = Object.freeze({ ...base, simulator: true });
  const app = await buildApp(config, { logger: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const rounds = [];
  await round(app, origin, keyed); // warm-up
  for (let i = 0; i < ROUNDS; i++) rounds.push(await round(app, origin, keyed));
  await app.close();
  await sim.close();
  const waits = rounds.map((r) => r.waitMs).sort((a, b) => a - b);
  const befores = rounds.map((r) => r.before).sort((a, b) => a - b);
  const aheads = rounds.map((r) => r.ahead).sort((a, b) => a - b);
  log(
    `${keyed ? 'named keys ' : 'open proxy '} B's wait median ${waits[waits.length >> 1]!.toFixed(0)} ms (min ${waits[0]!.toFixed(0)}, max ${waits.at(-1)!.toFixed(0)}); A's answers before B's: median ${befores[befores.length >> 1]} (of ${BURST}); A's queued when B came: median ${aheads[aheads.length >> 1]}`,
  );
}

async function main() {
  log(
    `${SLOTS} slots, each request holds one ${HOLD_MS} ms; A sends ${BURST} at once, then B one; ${ROUNDS} rounds`,
  );
  await run(true);
  await run(false);
}

void main().then(
  () => process.exit(0),
  (err: unknown) => {
    log(String((err as Error).stack ?? err));
    process.exit(1);
  },
);
