/**
 * Long and short prompts sharing one backend slot (docs/operations.md, "Fair shares within a
 * class"): the real server on loopback in front of the built-in simulator, admission
 * `concurrency: 1`, each request holding the slot for a time proportional to its prompt (a
 * prefill: `--msPerKb` per KB of prompt, `x-sim-scenario` delayMs). Key `long` runs two loops of
 * `--longKb` prompts, key `short` two loops of `--shortKb` prompts (an agent and its sub-agent
 * each; `--loops=1`: one agent each, one turn after another); every loop sends its next request as soon as its last is answered, for `--seconds`.
 * Decode work (`--longWords=N`): key `long` asks for an answer of N words, streamed at
 * `--msPerWord` each after its prefill (its slot held that much longer); with `--longKb` equal to
 * `--shortKb` the two keys differ only in what they generate.
 * Printed per key: answers, its share of the slot's time, and its requests' mean and p95 wait for
 * the slot (time to the answer less the hold).
 *
 *   npx tsx bench/prompt-fairness.ts [--seconds=20] [--longKb=90] [--shortKb=2] [--msPerKb=10] [--loops=2]
 *     [--longWords=0] [--msPerWord=2]
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
  options: {
    seconds: { type: 'string', default: '20' },
    longKb: { type: 'string', default: '90' },
    shortKb: { type: 'string', default: '2' },
    msPerKb: { type: 'string', default: '10' },
    loops: { type: 'string', default: '2' },
    longWords: { type: 'string', default: '0' },
    msPerWord: { type: 'string', default: '2' },
  },
});
const SECONDS = Number(values.seconds);
const MS_PER_KB = Number(values.msPerKb);
const MS_PER_WORD = Number(values.msPerWord);
const KEYS = [
  {
    name: 'long',
    key: 'sk-long-bench-prompts-0001',
    kb: Number(values.longKb),
    loops: Number(values.loops),
    words: Number(values.longWords),
  },
  {
    name: 'short',
    key: 'sk-short-bench-prompts-001',
    kb: Number(values.shortKb),
    loops: Number(values.loops),
    words: 0,
  },
];
const log = (line: string) => process.stderr.write(`${line}\n`);

interface Tally {
  answers: number;
  heldMs: number;
  waits: number[];
}

async function loop(origin: string, k: (typeof KEYS)[number], until: number, tally: Tally) {
  const agent = new Agent({ connections: 1 });
  const holdMs = Math.round(k.kb * MS_PER_KB);
  const content = `${k.name} ${'word '.repeat(Math.max(0, (k.kb * 1024) / 5 - 2))}`;
  // A long answer streams its words after the prefill: its hold is about words x msPerWord more
  // (the timer's own lateness on a loaded box aside), and its wait is not measured.
  const decode = k.words > 0;
  const scenario = decode
    ? { say: 'word '.repeat(k.words).trim(), delayMs: holdMs, chunkDelayMs: MS_PER_WORD }
    : { say: 'ok', delayMs: holdMs };
  while (performance.now() < until) {
    const t0 = performance.now();
    const res = await fetch(`${origin}/v1/chat/completions`, {
      method: 'POST',
      dispatcher: agent,
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${k.key}`,
        'x-sim-scenario': JSON.stringify(scenario),
      },
      body: JSON.stringify({
        model: 'm',
        messages: [{ role: 'user', content }],
        ...(decode ? { stream: true } : {}),
      }),
    });
    await res.text();
    if (res.status !== 200) throw new Error(`${k.name}: HTTP ${res.status}`);
    tally.answers++;
    tally.heldMs += holdMs + k.words * MS_PER_WORD;
    if (!decode) tally.waits.push(performance.now() - t0 - holdMs);
  }
  await agent.close();
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * p)] ?? 0;

async function main() {
  const sim = await createSimulator({ personality: 'vllm', prefixCache: false });
  const base = loadConfig(
    { TOOLPROOF_UPSTREAM_URL: sim.url, TOOLPROOF_LOG_LEVEL: 'silent' },
    {
      defaults: { forceToolUse: false },
      admission: { concurrency: 1, queueTimeoutMs: 120_000 },
      keys: KEYS.map((k) => ({ name: k.name, key: k.key })),
    },
  );
  const config: Config = Object.freeze({ ...base, simulator: true });
  const app = await buildApp(config, { logger: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const tallies = new Map(KEYS.map((k) => [k.name, { answers: 0, heldMs: 0, waits: [] } as Tally]));
  const until = performance.now() + SECONDS * 1000;
  await Promise.all(
    KEYS.flatMap((k) => Array.from({ length: k.loops }, () => loop(origin, k, until, tallies.get(k.name)!))),
  );
  await app.close();
  await sim.close();
  const held = [...tallies.values()].reduce((a, t) => a + t.heldMs, 0);
  log(
    `1 slot, ${MS_PER_KB} ms of hold per KB of prompt, ${SECONDS} s` +
      (KEYS[0]!.words > 0 ? `; long answers ${KEYS[0]!.words} words at ${MS_PER_WORD} ms a word` : ''),
  );
  for (const k of KEYS) {
    const t = tallies.get(k.name)!;
    const mean = t.waits.reduce((a, b) => a + b, 0) / Math.max(1, t.waits.length);
    log(
      `${k.name.padEnd(6)} ${k.loops} loops of ${k.kb} KB: ${t.answers} answers, ${((t.heldMs / held) * 100).toFixed(0)}% of the slot's time, ` +
        (t.waits.length > 0
          ? `wait mean ${mean.toFixed(0)} ms, p95 ${pct(t.waits, 0.95).toFixed(0)} ms`
          : 'waits not measured (streamed answers)'),
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
