/**
 * Admission bench (issue 29): one GPU server with two slots (the simulator's slot model:
 * simulator/slots.ts, llama-server personality, /props total_slots 2), one agent's main loop
 * (a ~4k-token system prompt, 10 turns, streamed) beside 8 background streams that loop without
 * pause. Measures the main loop's time to first token (first content byte at the client) in
 * four runs, the same process and box:
 *
 *   alone        the main loop by itself, toolproof without admission
 *   contention   with the 8 background streams, no admission: every request goes upstream at once
 *                and waits in the backend's FIFO
 *   priority     admission from /props (2 slots), background streams `x-toolproof-priority:
 *                background`, the main loop normal: it goes first, but waits for a slot to free
 *   reserved     the same and `reserved: 1`: background work never takes the last slot
 *
 *   npx tsx bench/admission.ts [--rounds=3] [--prefill=0.1] [--token=10] [--bg-tokens=60]
 *
 * Prints p50 / p95 TTFT per run and the ratios to `alone`; any non-200 a client received is
 * counted (the target: none).
 */
import { parseArgs } from 'node:util';
import { buildApp, type ToolproofApp } from '../server/app.js';
import { type Config, loadConfig } from '../server/config.js';
import { createSimulator, type Simulator } from '../simulator/index.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    prefill: { type: 'string', default: '0.1' },
    token: { type: 'string', default: '10' },
    'bg-tokens': { type: 'string', default: '60' },
  },
});
const ROUNDS = Number(values.rounds);
const PREFILL_MS = Number(values.prefill);
const TOKEN_MS = Number(values.token);
const BG_TOKENS = Number(values['bg-tokens']);
const TURNS = 10;
const BACKGROUND = 8;

const log = (line: string) => process.stderr.write(`${line}\n`);

const SYSTEM = `You are a coding agent. ${'Follow the repository conventions, read before you write, run the tests you touch, and report what you changed. '.repeat(140)}`;
const words = (n: number, seed: string) => Array.from({ length: n }, (_, i) => `${seed}${i}`).join(' ');

interface Run {
  name: string;
  ttfts: number[];
  errors: number;
  backgroundDone: number;
}

async function startProxy(
  sim: Simulator,
  file: Parameters<typeof loadConfig>[1],
): Promise<{ app: ToolproofApp; origin: string }> {
  const base = loadConfig({ TOOLPROOF_UPSTREAM_URL: sim.url, TOOLPROOF_LOG_LEVEL: 'silent' }, file);
  // The simulator's scenario header is forwarded only to the built-in simulator.
  const config: Config = Object.freeze({ ...base, simulator: true });
  const app = await buildApp(config, { logger: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return { app, origin: `http://127.0.0.1:${port}` };
}

/** One streamed chat turn: the time to its first content byte, or throws on a non-200. */
async function turn(
  origin: string,
  messages: unknown[],
  say: string,
  headers: Record<string, string>,
  signal?: AbortSignal,
): Promise<number> {
  const started = performance.now();
  const res = await fetch(`${origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-sim-scenario': JSON.stringify({ say }), ...headers },
    body: JSON.stringify({ model: 'm', stream: true, messages }),
    ...(signal ? { signal } : {}),
  });
  if (res.status !== 200) {
    await res.body?.cancel();
    throw new Error(`HTTP ${res.status}`);
  }
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let ttft = -1;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    if (ttft < 0 && /"content":"[^"]/.test(text)) ttft = performance.now() - started;
  }
  if (text.includes('"error"')) throw new Error('stream error');
  return ttft;
}

async function mainLoop(origin: string, run: Run): Promise<void> {
  for (let round = 0; round < ROUNDS; round++) {
    const messages: unknown[] = [{ role: 'system', content: `${SYSTEM} Session ${round}.` }];
    for (let t = 0; t < TURNS; t++) {
      messages.push({ role: 'user', content: `Turn ${t}: ${words(150, `r${round}t${t}w`)}` });
      const answer = `Done with step ${t} of the task, moving on.`;
      try {
        run.ttfts.push(await turn(origin, messages, answer, {}));
      } catch {
        run.errors++;
      }
      messages.push({ role: 'assistant', content: answer });
    }
  }
}

async function backgroundStream(
  origin: string,
  id: number,
  run: Run,
  stop: AbortSignal,
  headers: Record<string, string>,
) {
  let n = 0;
  while (!stop.aborted) {
    const messages = [
      { role: 'user', content: `Summarize item ${id}.${n++}: ${words(400, `b${id}n${n}w`)}` },
    ];
    try {
      await turn(origin, messages, words(BG_TOKENS, 'x'), headers, stop);
      run.backgroundDone++;
    } catch {
      if (!stop.aborted) run.errors++;
    }
  }
}

async function measure(
  name: string,
  file: Parameters<typeof loadConfig>[1],
  background: Record<string, string> | undefined,
): Promise<Run> {
  const sim = await createSimulator({
    personality: 'llama-server',
    slots: { count: 2, prefillMsPerToken: PREFILL_MS, msPerToken: TOKEN_MS },
  });
  const { app, origin } = await startProxy(sim, file);
  const run: Run = { name, ttfts: [], errors: 0, backgroundDone: 0 };
  const stop = new AbortController();
  const bg = background
    ? Array.from({ length: BACKGROUND }, (_, i) => backgroundStream(origin, i, run, stop.signal, background))
    : [];
  // Let the background streams fill the slots (and the queue) first.
  if (background) await new Promise((r) => setTimeout(r, 300));
  await mainLoop(origin, run);
  stop.abort();
  await Promise.allSettled(bg);
  await app.close();
  await sim.close();
  return run;
}

function pct(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

async function main(): Promise<void> {
  const admission = { admission: { concurrency: 'auto' as const, queueTimeoutMs: 120_000 } };
  const runs: Run[] = [];
  await measure('warm-up', {}, undefined); // the JIT and the first connections, not measured
  runs.push(await measure('alone', {}, undefined));
  runs.push(await measure('contention', {}, {}));
  runs.push(await measure('priority', admission, { 'x-toolproof-priority': 'background' }));
  runs.push(
    await measure(
      'reserved',
      { admission: { ...admission.admission, reserved: 1 } },
      { 'x-toolproof-priority': 'background' },
    ),
  );
  const alone = pct(runs[0]!.ttfts, 95);
  log(
    `two slots, prefill ${PREFILL_MS} ms/token, ${TOKEN_MS} ms/token, background answers ${BG_TOKENS} tokens`,
  );
  log('run          turns  p50 ms  p95 ms  p95/alone  background done  client errors');
  for (const r of runs) {
    const p95 = pct(r.ttfts, 95);
    log(
      `${r.name.padEnd(12)} ${String(r.ttfts.length).padStart(5)} ${pct(r.ttfts, 50).toFixed(0).padStart(7)} ${p95.toFixed(0).padStart(7)} ${(p95 / alone).toFixed(2).padStart(10)} ${String(r.backgroundDone).padStart(16)} ${String(r.errors).padStart(14)}`,
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
