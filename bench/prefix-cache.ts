/**
 * Prefix-cache bench: an agent-loop workload against simulated replicas, each with its own
 * prefix cache (simulator/prefix-cache.ts), through toolproof and through a plain round-robin
 * proxy (bench/lib/node-hop.ts). Reports, per side, the share of prompt tokens from turn 2 on
 * that a replica served from its cache, and the prefill (prompt tokens not cached) per turn.
 *
 *   npx tsx bench/prefix-cache.ts [--replicas=1,4] [--conversations=32] [--turns=10]
 *                                 [--workers=1,2] [--server=build|dist|tsx] [--stream]
 *
 * Workload: every conversation has a long system prompt (~7.5k tokens, shared, then its own
 * environment block) and 12 tools; each turn the model calls one tool (the simulator's scripted
 * model) and the client appends the call and a ~500-token tool result (a file it read); the last
 * turn answers in prose. All conversations run concurrently.
 * The simulators run in this process (their request records give the cached tokens); toolproof
 * and the hop are child processes.
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { fnv1a } from '../protocol/hash.js';
import { createSimulator, type Simulator, type TurnContext, type TurnAction } from '../simulator/index.js';
import { prepareServer, type ServerMode } from './lib/build.js';
import {
  freePort,
  killAllNow,
  startNode,
  stopAll,
  stopChild,
  waitForHttp,
  waitForLine,
} from './lib/procs.js';

const ROOT = join(import.meta.dirname, '..');

const { values } = parseArgs({
  options: {
    replicas: { type: 'string', default: '1,4' },
    conversations: { type: 'string', default: '32' },
    turns: { type: 'string', default: '10' },
    workers: { type: 'string', default: '1,2' },
    server: { type: 'string', default: 'build' },
    stream: { type: 'boolean', default: false },
  },
});
const REPLICAS = values.replicas.split(',').map(Number);
const CONVERSATIONS = Number(values.conversations);
const TURNS = Number(values.turns);
const WORKERS = values.workers.split(',').map(Number);

const log = (line: string) => process.stderr.write(`${line}\n`);

const TOOLS = Array.from({ length: 12 }, (_, i) => ({
  type: 'function',
  function: {
    name: i === 0 ? 'read_file' : `tool_${i}`,
    description: `Tool number ${i}. ${'It does one precise thing in the workspace and reports what it did. '.repeat(4)}`,
    parameters: {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'A path in the workspace.' },
        n: { type: 'integer' },
      },
      required: ['path'],
    },
  },
}));
const SYSTEM = `You are a coding agent working in a repository. ${'Read before you write; keep changes small; run the tests after every change; explain what you did. '.repeat(300)}`;
/** Like an agent's system prompt, it ends with the session's environment (working directory, git status). */
const environment = (c: number) =>
  `\n\n<env>\ncwd: /home/dev/repo-${c}\ngit status: ${`M src/module-${c}.ts `.repeat(12)}\n</env>`;
const TOOL_RESULT = `export function f(x: number): number {\n  return x * 2;\n}\n`.repeat(40);

/** The scripted model: a tool call on every turn but the last, which answers in prose. */
function agentModel(ctx: TurnContext): TurnAction {
  if (ctx.turn < TURNS - 1)
    return { call: [{ name: 'read_file', arguments: { path: `src/file${ctx.turn}.ts` } }] };
  return { say: 'All done: the tests pass.' };
}

type Msg = Record<string, unknown>;

interface TurnRecord {
  turn: number;
  prompt: number;
  cached: number;
}

/** One conversation of TURNS turns against `origin`; appends what it receives, as an agent does. */
async function conversation(pool: Pool, c: number, stream: boolean): Promise<void> {
  const messages: Msg[] = [
    { role: 'system', content: SYSTEM + environment(c) },
    { role: 'user', content: `Task ${c}: find why test ${c} fails and fix it.` },
  ];
  for (let t = 0; t < TURNS; t++) {
    const body = JSON.stringify({ model: 'agent', messages, tools: TOOLS, stream, max_tokens: 512 });
    const res = await pool.request({
      method: 'POST',
      path: '/v1/chat/completions',
      headers: { 'content-type': 'application/json' },
      body,
    });
    const text = await res.body.text();
    // The agent runs the tool: a different time per turn and conversation (seeded, so runs
    // compare), which also keeps the conversations out of lockstep: in lockstep a round-robin
    // balancer would send conversation c to replica c mod n every turn by accident.
    await sleep(fnv1a(`${c}/${t}`) % 60);
    if (res.statusCode !== 200)
      throw new Error(`turn ${t} of conversation ${c}: ${res.statusCode} ${text.slice(0, 300)}`);
    const message = stream
      ? fromStream(text)
      : (JSON.parse(text) as { choices: Array<{ message: Msg }> }).choices[0]!.message;
    const calls = message.tool_calls as Array<{ id: string }> | undefined;
    messages.push(message);
    if (calls && calls.length > 0) {
      for (const call of calls) messages.push({ role: 'tool', tool_call_id: call.id, content: TOOL_RESULT });
    } else {
      messages.push({ role: 'user', content: 'Thanks. Now the next test.' });
    }
  }
}

/** The assistant message a streamed answer adds up to (content and tool calls). */
function fromStream(text: string): Msg {
  let content = '';
  const calls: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }> = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    const chunk = JSON.parse(line.slice(6)) as {
      choices?: Array<{ delta?: { content?: string | null; tool_calls?: Array<Record<string, unknown>> } }>;
    };
    const delta = chunk.choices?.[0]?.delta;
    if (!delta) continue;
    if (typeof delta.content === 'string') content += delta.content;
    for (const tc of delta.tool_calls ?? []) {
      const i = tc.index as number;
      const fn = (tc.function ?? {}) as { name?: string; arguments?: string };
      calls[i] ??= { id: String(tc.id ?? ''), type: 'function', function: { name: '', arguments: '' } };
      if (typeof tc.id === 'string') calls[i]!.id = tc.id;
      if (fn.name) calls[i]!.function.name += fn.name;
      if (fn.arguments) calls[i]!.function.arguments += fn.arguments;
    }
  }
  return calls.length > 0
    ? { role: 'assistant', content: content || null, tool_calls: calls }
    : { role: 'assistant', content };
}

function records(sims: Simulator[]): TurnRecord[] {
  const out: TurnRecord[] = [];
  for (const sim of sims)
    for (const r of sim.requests) {
      if (r.promptTokens === undefined) continue;
      const msgs = (r.body as { messages?: Msg[] }).messages ?? [];
      out.push({
        turn: msgs.filter((m) => m.role === 'assistant').length + 1,
        prompt: r.promptTokens,
        cached: r.cachedTokens ?? 0,
      });
    }
  return out;
}

interface Row {
  side: string;
  replicas: number;
  ratio: number;
  prefillPerTurn: number;
  promptPerTurn: number;
  requests: number;
  seconds: number;
}

function summarize(side: string, replicas: number, recs: TurnRecord[], seconds: number): Row {
  const later = recs.filter((r) => r.turn >= 2);
  const prompt = later.reduce((a, r) => a + r.prompt, 0);
  const cached = later.reduce((a, r) => a + r.cached, 0);
  return {
    side,
    replicas,
    ratio: prompt === 0 ? 0 : cached / prompt,
    prefillPerTurn: later.length === 0 ? 0 : (prompt - cached) / later.length,
    promptPerTurn: later.length === 0 ? 0 : prompt / later.length,
    requests: recs.length,
    seconds,
  };
}

async function drive(origin: string, sims: Simulator[]): Promise<{ recs: TurnRecord[]; seconds: number }> {
  for (const s of sims) s.reset();
  const pool = new Pool(origin, { connections: CONVERSATIONS, pipelining: 1 });
  const started = Date.now();
  try {
    await Promise.all(Array.from({ length: CONVERSATIONS }, (_, c) => conversation(pool, c, values.stream)));
  } finally {
    await pool.close();
  }
  return { recs: records(sims), seconds: (Date.now() - started) / 1000 };
}

async function main(): Promise<void> {
  const serverArgs = prepareServer(ROOT, values.server as ServerMode, log);
  const rows: Row[] = [];
  for (const n of REPLICAS) {
    const sims = await Promise.all(
      Array.from({ length: n }, () =>
        createSimulator({ personality: 'llama-server', scenario: agentModel, modelName: 'agent' }),
      ),
    );
    try {
      // Plain proxy: the bare Node hop, round-robin over the replicas.
      const hop = startNode({
        name: 'node hop',
        args: ['--import', 'tsx', join(ROOT, 'bench/lib/node-hop.ts'), ...sims.map((s) => s.origin)],
        cwd: ROOT,
        stdinPipe: true,
      });
      const hopPort = Number(await waitForLine(hop, /PORT (\d+)/, 20_000));
      const plain = await drive(`http://127.0.0.1:${hopPort}`, sims);
      rows.push(summarize('plain proxy (round robin)', n, plain.recs, plain.seconds));
      await stopChild(hop);
      const sides: Array<{ name: string; env: Record<string, string> }> = [
        ...WORKERS.map((w) => ({
          name: `toolproof, TOOLPROOF_WORKERS=${w}`,
          env: { TOOLPROOF_WORKERS: String(w) },
        })),
        ...(n > 1 ? [{ name: 'toolproof, TOOLPROOF_AFFINITY=off', env: { TOOLPROOF_AFFINITY: 'off' } }] : []),
      ];
      for (const side of sides) {
        const port = await freePort();
        const env: NodeJS.ProcessEnv = {};
        for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('TOOLPROOF_')) env[k] = v;
        Object.assign(env, {
          TOOLPROOF_UPSTREAM_URL: sims.map((s) => s.url).join(','),
          TOOLPROOF_HOST: '127.0.0.1',
          TOOLPROOF_PORT: String(port),
          TOOLPROOF_LOG_LEVEL: 'warn',
          TOOLPROOF_SHUTDOWN_GRACE_MS: '2000',
          ...side.env,
        });
        const tp = startNode({ name: 'toolproof', args: serverArgs, env, cwd: ROOT });
        await waitForHttp(tp, `http://127.0.0.1:${port}/health`, 60_000);
        const run = await drive(`http://127.0.0.1:${port}`, sims);
        rows.push(summarize(side.name, n, run.recs, run.seconds));
        await stopChild(tp);
      }
    } finally {
      await Promise.all(sims.map((s) => s.close()));
    }
  }
  const fmt = (r: Row) =>
    `| ${r.replicas} | ${r.side} | ${(r.ratio * 100).toFixed(1)}% | ${Math.round(r.prefillPerTurn)} | ${Math.round(r.promptPerTurn)} | ${r.requests} | ${r.seconds.toFixed(1)} |`;
  console.log(
    `${CONVERSATIONS} concurrent conversations x ${TURNS} turns, ${values.stream ? 'streamed' : 'not streamed'}; llama-server simulator, prefix cache per replica\n`,
  );
  console.log(
    '| replicas | path | prompt tokens cached, turn 2 on | prefill tokens / turn | prompt tokens / turn | upstream requests | s |',
  );
  console.log(
    '| -------- | ---- | ------------------------------- | --------------------- | -------------------- | ----------------- | - |',
  );
  for (const r of rows) console.log(fmt(r));
}

process.on('exit', killAllNow);
main()
  .then(() => stopAll())
  .catch(async (err: unknown) => {
    log(String((err as Error)?.stack ?? err));
    await stopAll();
    process.exit(1);
  });
