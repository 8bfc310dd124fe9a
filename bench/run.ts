/**
 * npm run bench: toolproof against a direct connection to a fast local fake upstream, in one
 * run, cases interleaved (direct and proxied rounds alternate, so drift hits both equally).
 *
 *   load generator (this process, undici Pool, keep-alive)
 *     ├── direct ──────────────────────────────► fake upstream (child process, node:http)
 *     └── proxied ──► toolproof (child process) ─► fake upstream
 *
 * toolproof runs as its own process so its CPU time (/proc/<pid>/stat) and RSS (/proc/<pid>/status)
 * can be read. Prints a table and writes bench/results/proxy.json. See bench/README.md.
 *
 * Options:
 *   --quick              half the rounds and shorter timed runs (a smoke test, ~1 minute)
 *   --rounds=N           measured rounds per side and case (default 6)
 *   --cases=a,b          only these cases (ids: small-c1, small-c64, history-c1, history-c8,
 *                        stream-c1, stream500-c32, tools-stream500-c32, tools-stream8-c32, tools-c1,
 *                        tools-c64, and
 *                        the open-stream probes open-memory, event-loop; default all)
 *   --server=build|dist|tsx  how toolproof is started (default build; see bench/lib/build.ts)
 *   --cpu-prof           run toolproof under node --cpu-prof and print the top frames, and the
 *                        node hop too (its profiles in bench/results/prof/node-hop-*: set side
 *                        by side, they show what toolproof pays that the hop does not; the
 *                        profiler slows both down: use the timings of a run without it)
 *   --out=PATH           where the JSON goes (default bench/results/proxy.json)
 *   --baseline           also measure a bare pass-through proxy (bench/lib/bare-proxy.ts: node:http
 *                        + undici, nothing else): the floor any Node proxy pays on this machine
 *   --direct-only        do not start toolproof: measure the fake upstream alone (checks the
 *                        bench itself, and the machine's baseline)
 *   --workers=N          run toolproof with TOOLPROOF_WORKERS=N (CPU and RSS summed over workers)
 *   --no-open-streams    skip the open-stream probes (RSS per open stream, event-loop delay)
 *                        (with --cases they run only when named: open-memory, event-loop)
 *   --capture-ab         the capture's cost (docs/inspect.md): a second toolproof with
 *                        TOOLPROOF_CAPTURE_MB=0 takes the bare proxy's place (its column reads
 *                        "capture off"); the toolproof side keeps the default 10 MB ring, and a
 *                        line per case prints CPU per request on / off (e.g. --cases=stream-c1,tools-stream8-c32)
 *   --node-flags="..."   extra node options for the toolproof process (e.g. "--max-semi-space-size=32")
 *
 * `--cases=ab-tracing,ab-aa` adds an A/A side (ab-aa, only when named): the base again, a process
 * of its own, judged like a variant: the method's spread between two identical processes.
 * `--cases=ab-both` (only when named) adds a process with capture and tracing both on, judged like
 * each alone (`captureTracingCpu`).
 *
 * The A/B cases ab-capture and ab-tracing (run by default; with --cases only when named) start
 * their own toolproof processes that differ in one setting: capture off and tracing off (the
 * base), the capture ring on (the default 10 MB), tracing on (OTLP/HTTP to a sink in this
 * process, every request sampled). Short and long forced tool streams and a real agent turn
 * (fixtures.ts agentTurn) go to each in turn, in palindromic cycles of slices of a fixed request
 * count (bench/lib/overhead-ab.ts); printed: each one's CPU per request (all its CPU over all its
 * requests) and its ratio to the base with a 95% bootstrap interval over the cycles, judged
 * against issue 28's "at most 5% more": PASS when the interval is under it, FAIL when above,
 * inconclusive when it straddles it (not met either). The fake upstream writes those three
 * streams back-to-back (toolproof reads each in 1-2 reads); the workload `paced` is the agent
 * turn as a backend streams it, each event a write of its own every PACED_MS (llama-server and
 * vLLM write a token's event as it is decoded), so toolproof pays a read, a parse, a transform
 * and a write per event, as on a real backend. Each variant's read syscalls per request are
 * printed beside its CPU (/proc/<pid>/io: ~3 a burst agent turn, ~100 a paced one of 101 events
 * and [DONE]: the check that the pacing reaches toolproof). The 5% the short stream's fixed cost
 * is compared with stays the burst agent turn's.
 *   --ab-cycles=N        at most N measured cycles per workload (default 60, --quick 12)
 *   --ab-budget=S        stop starting cycles after S seconds per workload (default 75, --quick 25)
 *   --ab-workloads=LIST  only these A/B workloads: short, long, agent, paced (default all four;
 *                        a narrower interval for one in the same time; a paced slice takes ~1 s
 *                        of wall time, ~10x a burst one's: 60 cycles of four variants take
 *                        --ab-budget=420 on a quiet box)
 *   --ab-processes=K     K generations of processes (a fresh one per variant each, the cycles
 *                        and budget split among them), pooled; the interval resamples the
 *                        generations, then their cycles: a process's own speed is in it (default 1)
 */
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Pool } from 'undici';
import { prepareServer, type ServerMode } from './lib/build.js';
import {
  AGENT_CALL,
  AGENT_TURN_EVENTS,
  agentTurn,
  FINAL_ANSWER_TEXT,
  finalAnswerPieces,
  historyBody,
  PACED_MS,
  PLAIN_ANSWER_TEXT,
  STREAM_CHUNKS,
  smallBody,
  streamBody,
  toolsBody,
  toolsStreamBody,
} from './lib/fixtures.js';
import { type LatencySummary, probe, runLoad, summarize } from './lib/load.js';
import {
  type AbResult,
  type AbVariant,
  abVerdict,
  fixedCostVerdict,
  measureAb,
  mergeGenerations,
} from './lib/overhead-ab.js';
import {
  CLK_TCK,
  type Child,
  cpuTicks,
  freePort,
  groupCpuSplit,
  groupMemoryMb,
  killAllNow,
  machineTicks,
  startFakeUpstream,
  startNode,
  stopAll,
  stopChild,
  waitForHttp,
  waitForLine,
  withChildren,
} from './lib/procs.js';
import { startOtlpSink } from './lib/otlp-sink.js';
import { fmtProbe, type OpenStreamsReport, type ProbeTarget, probeOpenStreams } from './lib/open-streams.js';
import { formatProfile, type ProfileSummary, summarizeProfile } from './lib/profile.js';
import { fmtDeltaMs, fmtMb, fmtMs, fmtRatio, fmtRps, fmtUs, renderTable } from './lib/report.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** Events per response of the long-stream cases. */
const LONG_CHUNKS = 500;
/** Events per response of the short tool stream (its cost is per request, not per chunk). */
const SHORT_CHUNKS = 8;
const LOG_LEVEL = 'warn';

/**
 * The targets, from issue 12 ("the streaming hot path"). Every one is judged against the bare Node
 * hop of the same run (or, for the open-stream probes, as an absolute figure on fresh processes),
 * so machine drift and other jobs hit both sides of each ratio alike.
 */
const TARGETS = {
  /** toolproof p50 - hop p50, small request, c=1. */
  addedP50OverHopMs: 0.2,
  /** toolproof CPU / hop CPU per small request, c=64. */
  cpuPerRequestVsHop: 1.25,
  /** toolproof throughput / hop throughput, small request, c=64. */
  throughputVsHop: 0.8,
  /** toolproof first byte p50 - hop first byte p50, 50-chunk stream, c=1. */
  firstByteOverHopMs: 0.15,
  /** toolproof CPU / hop CPU per chunk, 500-chunk stream with one tool (the harness), c=32. */
  toolStreamCpuPerChunkVsHop: 1.5,
  /** RSS per open stream, 1,000 held, with and without a tool. */
  rssPerOpenStreamKb: 32,
  /** Event-loop delay p99 with 500 open tool streams, arrivals spread (steady state). */
  eventLoopP99Ms: 50,
  /** Issue 28: toolproof CPU per streamed request with the capture ring on / off (same run). */
  captureCpuVsOff: 1.05,
  /** Issue 28: the same with tracing on (every request sampled) / off. */
  tracingCpuVsOff: 1.05,
} as const;
/**
 * Issue 28's bound is a share of each streamed request's CPU, judged on every workload as the
 * issue says it. Capture's and tracing's cost is mostly fixed per request (a record, two spans):
 * the 8-event stream, the cheapest streamed request there is, shows that fixed cost alone, so its
 * row also prints the added µs and whether they are under 5% of the agent turn's CPU in the same
 * run (what would keep every request at least as costly as an agent turn under 5%): said, not judged.
 */
const AB_FIXED_COST_WORKLOAD = 'tools-stream8-c32';
const AB_REFERENCE_WORKLOAD = 'agent-turn-c8';
const TARGET_SOURCE =
  `targets from issue 12, against the node hop of the same run: added p50 at c=1 < ${TARGETS.addedP50OverHopMs} ms ` +
  `over the hop; small c=64 CPU/request <= ${TARGETS.cpuPerRequestVsHop}x hop and throughput >= ` +
  `${TARGETS.throughputVsHop}x hop; stream first byte p50 within ${TARGETS.firstByteOverHopMs} ms of the hop; ` +
  `tool-stream CPU/chunk <= ${TARGETS.toolStreamCpuPerChunkVsHop}x hop; RSS per open stream <= ` +
  `${TARGETS.rssPerOpenStreamKb} KB (with and without a tool); event-loop delay p99 < ${TARGETS.eventLoopP99Ms} ms ` +
  'with 500 open tool streams (steady state). Issue 28: capture on and tracing on cost at most ' +
  `${Math.round((TARGETS.captureCpuVsOff - 1) * 100)}% more toolproof CPU per streamed request than off ` +
  '(ab-capture, ab-tracing: pooled ratio over palindromic cycles of short slices, on every workload; the ' +
  "8-event stream's added CPU, the fixed cost per request, is printed beside 5% of the agent turn's; PASS " +
  'when its 95% bootstrap interval is under the target, FAIL when above, inconclusive when it straddles ' +
  'it). A target whose case was not run is not judged.';

/** Case ids of the open-stream probes (run after the timed cases, on fresh processes). */
const PROBE_IDS = ['open-memory', 'event-loop'] as const;
/**
 * Requests per slice of the A/B cases: about 0.1 s each on the 2-core box when quiet, several
 * waves of the closed loop (a slice of 250 ms held only the 8 first agent turns under load), and
 * short enough for tens of cycles in the budget at load 14 (128 long streams a slice gave 6).
 * The paced agent turn's slice is the burst one's count: ~1 s (four waves of ~0.2 s streams).
 */
const AB_SLICE_REQUESTS: Record<string, number> = {
  'tools-stream8-c32': 256,
  'tools-stream500-c32': 64,
  'agent-turn-c8': 32,
  'agent-paced-c8': 32,
};
/** Case ids of the A/B cases (their own toolproof processes, after the timed cases). */
/** --ab-workloads' names of the A/B workloads. */
const AB_WORKLOAD_IDS: Record<string, string> = {
  short: 'tools-stream8-c32',
  long: 'tools-stream500-c32',
  agent: 'agent-turn-c8',
  paced: 'agent-paced-c8',
};
const AB_IDS = ['ab-capture', 'ab-tracing', 'ab-both', 'ab-aa'] as const;
/**
 * A/B ids run only when named (ab-aa: a second base, the method's own spread between processes;
 * ab-both: capture and tracing on in one process, judged like each alone).
 */
const AB_NAMED_ONLY = new Set<string>(['ab-aa', 'ab-both']);

// ---------------------------------------------------------------------------------------------
// Options

interface Options {
  quick: boolean;
  rounds: number;
  cases: Set<string> | null;
  server: ServerMode;
  cpuProf: boolean;
  directOnly: boolean;
  baseline: boolean;
  /** --capture-ab: the baseline side is toolproof with capture off. */
  captureAb: boolean;
  /** TOOLPROOF_WORKERS for the toolproof process (its CPU and RSS are summed over the workers). */
  workers: number;
  /** The open-stream probes: RSS per open stream, event-loop delay under many streams. */
  openStreams: boolean;
  /** Extra node options for the toolproof process only (e.g. --max-semi-space-size=32). */
  nodeFlags: string[];
  /** The A/B cases: palindromic cycles per workload (bench/lib/overhead-ab.ts). */
  abCycles: number;
  /** The A/B cases: seconds of measured cycles per workload, at most. */
  abBudgetS: number;
  /** The A/B cases: only these workloads (short, long, agent, paced); null: all four. */
  abWorkloads: Set<string> | null;
  /** The A/B cases: process generations (a fresh process per variant each), pooled. */
  abProcesses: number;

  out: string;
}

function parseArgs(argv: string[]): Options {
  const opts: Options = {
    quick: false,
    rounds: 6,
    cases: null,
    server: 'build',
    cpuProf: false,
    directOnly: false,
    baseline: false,
    captureAb: false,
    workers: 1,
    openStreams: true,
    nodeFlags: [],
    abCycles: 0,
    abBudgetS: 0,
    abWorkloads: null,
    abProcesses: 1,
    out: join(ROOT, 'bench/results/proxy.json'),
  };
  let roundsGiven = false;
  for (const arg of argv) {
    const [key, value] = arg.split('=', 2) as [string, string | undefined];
    if (key === '--quick') opts.quick = true;
    else if (key === '--cpu-prof') opts.cpuProf = true;
    else if (key === '--direct-only') opts.directOnly = true;
    else if (key === '--baseline') opts.baseline = true;
    else if (key === '--capture-ab') {
      opts.baseline = true;
      opts.captureAb = true;
    } else if (key === '--no-open-streams') opts.openStreams = false;
    else if (key === '--workers' && value && /^\d+$/.test(value) && Number(value) > 0)
      opts.workers = Number(value);
    else if (key === '--rounds' && value && /^\d+$/.test(value) && Number(value) > 0) {
      opts.rounds = Number(value);
      roundsGiven = true;
    } else if (key === '--ab-cycles' && value && /^\d+$/.test(value) && Number(value) > 1)
      opts.abCycles = Number(value);
    else if (key === '--ab-budget' && value && /^\d+$/.test(value) && Number(value) > 0)
      opts.abBudgetS = Number(value);
    else if (key === '--ab-processes' && value && /^\d+$/.test(value) && Number(value) > 0)
      opts.abProcesses = Number(value);
    else if (key === '--ab-workloads' && value) {
      opts.abWorkloads = new Set(value.split(',').map((s) => s.trim()));
      for (const w of opts.abWorkloads)
        if (!(w in AB_WORKLOAD_IDS))
          throw new Error(`--ab-workloads: unknown ${w} (${Object.keys(AB_WORKLOAD_IDS).join(', ')})`);
    } else if (key === '--cases' && value) opts.cases = new Set(value.split(',').map((s) => s.trim()));
    else if (key === '--server' && (value === 'build' || value === 'dist' || value === 'tsx'))
      opts.server = value;
    else if (key === '--out' && value) opts.out = resolve(value);
    // The whole text after the first '=' (the flags have their own '=').
    else if (key === '--node-flags' && value)
      opts.nodeFlags = arg
        .slice(arg.indexOf('=') + 1)
        .split(/\s+/)
        .filter(Boolean);
    else if (key === '--help' || key === '-h') {
      process.stdout.write(`${readUsage()}\n`);
      process.exit(0);
    } else throw new Error(`unknown option ${arg} (try --help)`);
  }
  if (opts.quick && !roundsGiven) opts.rounds = 3;
  if (opts.abCycles === 0) opts.abCycles = opts.quick ? 12 : 60;
  if (opts.abBudgetS === 0) opts.abBudgetS = opts.quick ? 25 : 75;
  return opts;
}

function readUsage(): string {
  return [
    'usage: npm run bench -- [--quick] [--rounds=N] [--cases=id,...] [--server=build|dist|tsx] [--cpu-prof] [--baseline] [--workers=N] [--no-open-streams] [--direct-only] [--node-flags="--flag ..."] [--out=PATH]',
    "  issue 28's A/B: --cases=ab-capture,ab-tracing[,ab-both,ab-aa] [--ab-workloads=short,long,agent,paced] [--ab-cycles=N] [--ab-budget=S] [--ab-processes=K]",
    `  workloads: short and long forced tool streams and an agent turn, written back-to-back by the fake upstream; paced: the agent turn one event a write every ${PACED_MS} ms, as a backend streams`,
    '  (the options in full: the comment at the top of bench/run.ts; the method: bench/README.md)',
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------
// Cases

/**
 * direct: the fake upstream itself; proxied: through toolproof; hop: through the bare Node hop
 * (node:http piped, always measured); bare: through the bare undici proxy (--baseline).
 */
type Side = 'direct' | 'proxied' | 'hop' | 'bare';
const SIDES: readonly Side[] = ['direct', 'proxied', 'hop', 'bare'];
const SIDE_NAMES: Record<Side, string> = {
  direct: 'direct',
  proxied: 'toolproof',
  hop: 'node hop',
  bare: 'bare proxy',
};

interface Case {
  id: string;
  title: string;
  body: Buffer;
  stream: boolean;
  concurrency: number;
  /** Per round and side: a request count (latency cases) or a duration (throughput cases). */
  requests?: number;
  durationMs?: number;
  warmupRequests?: number;
  warmupMs?: number;
  /** SSE events per response (streams): CPU per chunk = CPU per request / chunks. */
  chunks?: number;
  /** A streamed final_answer (tools declared): toolproof must turn it into this content. */
  answer?: string;
}

function defineCases(quick: boolean): Case[] {
  const scale = quick ? 0.5 : 1;
  const n = (x: number) => Math.max(20, Math.round(x * scale));
  const ms = (x: number) => Math.max(300, Math.round(x * scale));
  const small = smallBody();
  const history = historyBody();
  const tools = toolsBody();
  return [
    {
      id: 'small-c1',
      title: `small (${small.length} B, no tools), c=1`,
      body: small,
      stream: false,
      concurrency: 1,
      requests: n(800),
      warmupRequests: n(600),
    },
    {
      id: 'small-c64',
      title: `small (${small.length} B, no tools), c=64`,
      body: small,
      stream: false,
      concurrency: 64,
      durationMs: ms(2000),
      warmupMs: ms(1500),
    },
    {
      id: 'history-c1',
      title: `history (${Math.round(history.length / 1024)} KB), c=1`,
      body: history,
      stream: false,
      concurrency: 1,
      requests: n(150),
      warmupRequests: n(100),
    },
    {
      id: 'history-c8',
      title: `history (${Math.round(history.length / 1024)} KB), c=8`,
      body: history,
      stream: false,
      concurrency: 8,
      durationMs: ms(1500),
      warmupMs: ms(1000),
    },
    {
      id: 'stream-c1',
      title: `stream (${STREAM_CHUNKS} chunks), c=1`,
      body: streamBody(),
      stream: true,
      concurrency: 1,
      requests: n(300),
      warmupRequests: n(300),
      chunks: STREAM_CHUNKS,
    },
    {
      id: 'stream500-c32',
      title: `long stream (${LONG_CHUNKS} chunks, no tools), c=32`,
      body: streamBody({ chunks: LONG_CHUNKS }),
      stream: true,
      concurrency: 32,
      durationMs: ms(2500),
      warmupMs: ms(1500),
      chunks: LONG_CHUNKS,
    },
    {
      id: 'tools-stream500-c32',
      title: `long stream with 1 tool (${LONG_CHUNKS} chunks, forced final_answer), c=32`,
      body: toolsStreamBody({ chunks: LONG_CHUNKS }),
      stream: true,
      concurrency: 32,
      durationMs: ms(2500),
      warmupMs: ms(1500),
      chunks: LONG_CHUNKS,
      answer: finalAnswerPieces(LONG_CHUNKS).answer,
    },
    {
      // Mostly the per-request work of a forced tool stream (parse, forced-body rewrite, policy
      // and validator set-up, upstream dispatch, first write, teardown): CPU per request vs hop.
      id: 'tools-stream8-c32',
      title: `short stream with 1 tool (${SHORT_CHUNKS} chunks, forced final_answer), c=32`,
      body: toolsStreamBody({ chunks: SHORT_CHUNKS }),
      stream: true,
      concurrency: 32,
      durationMs: ms(2000),
      warmupMs: ms(1500),
      chunks: SHORT_CHUNKS,
      answer: finalAnswerPieces(SHORT_CHUNKS).answer,
    },
    {
      id: 'tools-c1',
      title: `with tools (${tools.length} B, forced final_answer), c=1`,
      body: tools,
      stream: false,
      concurrency: 1,
      requests: n(600),
      warmupRequests: n(500),
    },
    {
      id: 'tools-c64',
      title: `with tools (${tools.length} B, forced final_answer), c=64`,
      body: tools,
      stream: false,
      concurrency: 64,
      durationMs: ms(2000),
      warmupMs: ms(1500),
    },
  ];
}

// ---------------------------------------------------------------------------------------------
// Correctness probe: one request per side before measuring, so a broken path is never timed.

interface ProbeResult {
  ok: boolean;
  detail: string;
}

function parseSse(text: string): { contents: string[]; done: boolean; events: number } {
  const contents: string[] = [];
  let done = false;
  let events = 0;
  for (const block of text.split('\n\n')) {
    const line = block.split('\n').find((l) => l.startsWith('data:'));
    if (!line) continue;
    const data = line.slice(5).trim();
    events++;
    if (data === '[DONE]') {
      done = true;
      continue;
    }
    try {
      const chunk = JSON.parse(data) as { choices?: { delta?: { content?: unknown } }[] };
      const content = chunk.choices?.[0]?.delta?.content;
      if (typeof content === 'string' && content !== '') contents.push(content);
    } catch {
      // not JSON: counted as an event, no content
    }
  }
  return { contents, done, events };
}

function checkResponse(c: Case, side: Side, status: number, text: string): ProbeResult {
  const cut = (s: string) => (s.length > 300 ? `${s.slice(0, 300)}...` : s);
  if (status !== 200) return { ok: false, detail: `HTTP ${status}: ${cut(text)}` };
  if (c.stream) {
    const sse = parseSse(text);
    const joined = sse.contents.join('');
    if (!sse.done) return { ok: false, detail: `stream did not end with data: [DONE]: ${cut(text)}` };
    // toolproof's sides: with --capture-ab the fourth one is toolproof too (capture off).
    if (c.answer !== undefined && (side === 'proxied' || (side === 'bare' && captureAb))) {
      // The harness: the final_answer call's arguments became live content deltas.
      if (joined.trim() !== c.answer.trim() || sse.contents.length < Math.min(10, (c.chunks ?? 0) - 3))
        return { ok: false, detail: `final_answer was not streamed as content: ${cut(text)}` };
      return { ok: true, detail: `${sse.contents.length} content deltas from the final_answer call` };
    }
    if (c.answer !== undefined) {
      return sse.events === (c.chunks ?? 0) + 1 && text.includes('"final_answer"')
        ? { ok: true, detail: `${sse.events} SSE events of a final_answer call (raw upstream answer)` }
        : { ok: false, detail: `expected a streamed final_answer call: ${cut(text)}` };
    }
    const chunks = c.chunks ?? STREAM_CHUNKS;
    if (sse.contents.length !== chunks) {
      return { ok: false, detail: `expected ${chunks} content deltas, got ${sse.contents.length}` };
    }
    return { ok: true, detail: `${sse.events} SSE events, ${joined.length} chars of content` };
  }
  let json: {
    choices?: { message?: { content?: unknown; tool_calls?: unknown[] }; finish_reason?: unknown }[];
  };
  try {
    json = JSON.parse(text);
  } catch {
    return { ok: false, detail: `not JSON: ${cut(text)}` };
  }
  const choice = json.choices?.[0];
  const calls = choice?.message?.tool_calls ?? [];
  if (c.id.startsWith('tools') && side === 'proxied') {
    if (choice?.message?.content !== FINAL_ANSWER_TEXT || calls.length > 0) {
      return { ok: false, detail: `final_answer was not unwrapped into content: ${cut(text)}` };
    }
    return { ok: true, detail: `final_answer unwrapped, finish_reason ${String(choice.finish_reason)}` };
  }
  if (c.id.startsWith('tools')) {
    return calls.length === 1
      ? { ok: true, detail: 'final_answer tool call (raw upstream answer)' }
      : { ok: false, detail: `expected one tool call: ${cut(text)}` };
  }
  return choice?.message?.content === PLAIN_ANSWER_TEXT
    ? { ok: true, detail: 'plain answer' }
    : { ok: false, detail: `unexpected answer: ${cut(text)}` };
}

// ---------------------------------------------------------------------------------------------
// Measuring

interface SideResult {
  requests: number;
  errors: number;
  firstError?: string;
  wallMs: number;
  throughput: number;
  latency: LatencySummary;
  firstByte?: LatencySummary;
  /** CPU time of the proxy process (toolproof or the bare proxy) per request, µs; absent for direct. */
  proxyCpuUsPerRequest?: number;
  /** Proxy CPU per request, lowest and highest round, µs. */
  proxyCpuUsRange?: [number, number];
  /** Share of the proxy's CPU time spent in the kernel (stime: sockets, syscalls), 0..1. */
  proxySysShare?: number;
  /** CPU time of the fake upstream per request, µs. */
  upstreamCpuUsPerRequest: number;
  /** CPU time of the load generator (this process) per request, µs. */
  loadgenCpuUsPerRequest: number;
  /** Share of the machine's CPU used by other processes during the measured rounds (noise), 0..1. */
  foreignCpuShare: number;
  rounds: RoundRecord[];
}

/** One measured round of one side (kept in the JSON to judge the spread). */
interface RoundRecord {
  round: number;
  requests: number;
  wallMs: number;
  throughput: number;
  p50: number;
  proxyCpuUsPerRequest?: number;
  /** Share of the machine's CPU (all cores) used by other processes during the round, 0..1. */
  foreignShare: number;
}

interface CaseResult {
  id: string;
  title: string;
  concurrency: number;
  stream: boolean;
  bodyBytes: number;
  rounds: number;
  /** SSE events per response (streams). */
  chunks?: number;
  probe: Partial<Record<Side, ProbeResult>>;
  direct?: SideResult;
  proxied?: SideResult;
  hop?: SideResult;
  bare?: SideResult;
  /** toolproof's RSS before and after the case's measured rounds. */
  memoryMb?: { before: number; after: number; peak: number };
}

interface Accumulator {
  latencies: number[];
  firstByte: number[];
  requests: number;
  errors: number;
  firstError?: string;
  wallMs: number;
  proxyTicks: number;
  proxySysTicks: number;
  upstreamTicks: number;
  loadgenUs: number;
  /** CPU time used by processes other than the bench's own during this side's rounds, µs. */
  foreignUs: number;
  rounds: RoundRecord[];
}

const newAccumulator = (): Accumulator => ({
  latencies: [],
  firstByte: [],
  requests: 0,
  errors: 0,
  wallMs: 0,
  proxyTicks: 0,
  proxySysTicks: 0,
  upstreamTicks: 0,
  loadgenUs: 0,
  foreignUs: 0,
  rounds: [],
});

const ticksToUs = (ticks: number) => (ticks / CLK_TCK) * 1e6;
const nowUs = () => Number(process.hrtime.bigint() / 1000n);

function finish(acc: Accumulator, hasProxy: boolean, stream: boolean): SideResult {
  const n = acc.requests || Number.NaN;
  const perRound = acc.rounds.map((r) => r.proxyCpuUsPerRequest ?? Number.NaN);
  return {
    requests: acc.requests,
    errors: acc.errors,
    ...(acc.firstError ? { firstError: acc.firstError } : {}),
    wallMs: acc.wallMs,
    throughput: (acc.requests - acc.errors) / (acc.wallMs / 1000),
    latency: summarize(acc.latencies),
    ...(stream ? { firstByte: summarize(acc.firstByte) } : {}),
    ...(hasProxy
      ? {
          proxyCpuUsPerRequest: ticksToUs(acc.proxyTicks) / n,
          proxyCpuUsRange: [Math.min(...perRound), Math.max(...perRound)] as [number, number],
          proxySysShare: acc.proxySysTicks / (acc.proxyTicks || Number.NaN),
        }
      : {}),
    upstreamCpuUsPerRequest: ticksToUs(acc.upstreamTicks) / n,
    loadgenCpuUsPerRequest: acc.loadgenUs / n,
    foreignCpuShare: acc.foreignUs / (acc.wallMs * 1000 * cpus().length),
    rounds: acc.rounds,
  };
}

interface Env {
  pools: Partial<Record<Side, Pool>>;
  /** The proxy process of each proxied side (toolproof; the bare proxy with --baseline). */
  proxies: Partial<Record<Side, Child>>;
  /** The pids whose CPU counts for each proxy (toolproof's workers with --workers > 1). */
  groups: Partial<Record<Side, number[]>>;
  upstream: Child;
  /** process.hrtime µs windows of the measured toolproof rounds (to cut the CPU profile to them). */
  windows: [number, number][];
}

async function measureCase(c: Case, env: Env, rounds: number, log: (s: string) => void): Promise<CaseResult> {
  const result: CaseResult = {
    id: c.id,
    title: c.title,
    concurrency: c.concurrency,
    stream: c.stream,
    bodyBytes: c.body.length,
    rounds,
    ...(c.chunks ? { chunks: c.chunks } : {}),
    probe: {},
  };
  const sides = SIDES.filter((s) => env.pools[s]);
  for (const side of sides) {
    try {
      const p = await probe(env.pools[side]!, c.body);
      result.probe[side] = checkResponse(c, side, p.status, p.text);
    } catch (err) {
      result.probe[side] = { ok: false, detail: (err as Error).message };
    }
    if (!result.probe[side]!.ok) {
      log(`  ${c.id}: ${SIDE_NAMES[side]} check FAILED, not measured: ${result.probe[side]!.detail}`);
    }
  }
  const runnable = sides.filter((s) => result.probe[s]!.ok);
  if (runnable.length === 0) return result;

  const load = (side: Side, bound: { requests: number } | { durationMs: number }) =>
    runLoad({ pool: env.pools[side]!, body: c.body, stream: c.stream, concurrency: c.concurrency, ...bound });

  // Warm-up (JIT, connections), not measured.
  for (const side of runnable) {
    await load(
      side,
      c.warmupMs !== undefined ? { durationMs: c.warmupMs } : { requests: c.warmupRequests ?? 100 },
    );
  }

  const acc: Partial<Record<Side, Accumulator>> = {};
  for (const side of runnable) acc[side] = newAccumulator();
  const tpGroup = env.groups.proxied;
  const memBefore = tpGroup ? groupMemoryMb(tpGroup).rss : Number.NaN;
  for (let r = 0; r < rounds; r++) {
    // Rotate the order every round (D,P / P,D / ...): no side always runs right after another.
    const order = runnable.map((_, i) => runnable[(i + r) % runnable.length]!);
    for (const side of order) {
      const a = acc[side]!;
      const proxyPids = env.groups[side];
      const proxyBefore = groupCpuSplit(proxyPids ?? []);
      const otherPids = SIDES.filter((s) => s !== side).flatMap((s) => env.groups[s] ?? []);
      const othersCpu = () => {
        const o = groupCpuSplit(otherPids);
        return o.user + o.sys;
      };
      const othersBefore = othersCpu();
      const upstreamBefore = cpuTicks(env.upstream.pid);
      const machineBefore = machineTicks();
      const loadgenBefore = process.cpuUsage();
      const startUs = nowUs();
      const res = await load(
        side,
        c.durationMs !== undefined ? { durationMs: c.durationMs } : { requests: c.requests ?? 100 },
      );
      if (side === 'proxied') env.windows.push([startUs, nowUs()]);
      const loadgen = process.cpuUsage(loadgenBefore);
      const loadgenUs = loadgen.user + loadgen.system;
      const upstreamTicks = cpuTicks(env.upstream.pid) - upstreamBefore;
      const proxyAfter = groupCpuSplit(proxyPids ?? []);
      const proxySysTicks = proxyAfter.sys - proxyBefore.sys;
      const proxyTicks = proxyAfter.user - proxyBefore.user + proxySysTicks;
      const othersTicks = othersCpu() - othersBefore;
      const ownTicks = upstreamTicks + proxyTicks + othersTicks;
      const foreignUs = Math.max(0, ticksToUs(machineTicks() - machineBefore - ownTicks) - loadgenUs);
      a.loadgenUs += loadgenUs;
      a.upstreamTicks += upstreamTicks;
      a.proxyTicks += proxyTicks;
      a.proxySysTicks += proxySysTicks;
      a.foreignUs += foreignUs;
      a.rounds.push({
        round: r,
        requests: res.count,
        wallMs: res.wallMs,
        throughput: (res.count - res.errors) / (res.wallMs / 1000),
        p50: summarize(res.latencies).p50,
        ...(proxyPids ? { proxyCpuUsPerRequest: ticksToUs(proxyTicks) / (res.count || Number.NaN) } : {}),
        foreignShare: foreignUs / (res.wallMs * 1000 * cpus().length),
      });
      a.requests += res.count;
      a.errors += res.errors;
      a.firstError ??= res.firstError;
      a.wallMs += res.wallMs;
      for (const v of res.latencies) a.latencies.push(v);
      for (const v of res.firstByte) a.firstByte.push(v);
    }
  }
  if (tpGroup) {
    const memAfter = groupMemoryMb(tpGroup);
    result.memoryMb = { before: memBefore, after: memAfter.rss, peak: memAfter.peak };
  }
  for (const side of runnable) result[side] = finish(acc[side]!, side !== 'direct', c.stream);
  return result;
}

// ---------------------------------------------------------------------------------------------
// The table

interface Row {
  case: string;
  metric: string;
  direct: string;
  toolproof: string;
  /** The bare proxy's value (--baseline), else ''. */
  bare: string;
  /** The Node hop's value, and toolproof against it (delta or ratio). */
  hop: string;
  vsHop: string;
  change: string;
  target: string;
  result: string;
}

function verdict(ok: boolean | null): string {
  if (ok === null) return '';
  return ok ? 'PASS' : 'FAIL';
}

type Measured = CaseResult & { direct: SideResult; proxied: SideResult };
const fmtUs2 = (us: number) => (Number.isFinite(us) ? `${us.toFixed(1)} µs` : 'n/a');

function buildRows(results: Map<string, CaseResult>): {
  rows: Row[];
  checks: Record<string, boolean | null>;
} {
  const rows: Row[] = [];
  const checks: Record<string, boolean | null> = {};
  const get = (id: string) => results.get(id);
  const valid = (r: CaseResult | undefined): r is Measured =>
    !!r?.direct && !!r.proxied && r.direct.errors === 0 && r.proxied.errors === 0;
  const failedRow = (num: string, r: CaseResult | undefined, check: string) => {
    if (!r) return;
    const why = !r.proxied
      ? `toolproof not measured: ${(r.probe.proxied?.detail ?? 'not started').slice(0, 90)}`
      : !r.direct
        ? `direct not measured: ${(r.probe.direct?.detail ?? '').slice(0, 90)}`
        : `errors: direct ${r.direct.errors}, toolproof ${r.proxied.errors} (${r.proxied.firstError ?? r.direct.firstError ?? ''})`;
    rows.push({
      case: `${num} ${r.title}`,
      metric: why,
      direct: '',
      toolproof: '',
      bare: '',
      hop: '',
      vsHop: '',
      change: '',
      target: '',
      result: 'ERROR',
    });
    checks[check] = false;
  };
  /** One row comparing direct and toolproof on `pick`; `change` is a delta (ms) or a ratio. */
  const row = (
    num: string,
    r: Measured,
    metric: string,
    pick: (s: SideResult) => number,
    kind: 'ms' | 'rps',
    /** ok() gets direct, toolproof and the hop (NaN when the hop was not measured: a FAIL). */
    target?: { text: string; ok: (d: number, p: number, h: number) => boolean; check: string },
  ) => {
    const d = pick(r.direct);
    const p = pick(r.proxied);
    const h = r.hop ? pick(r.hop) : Number.NaN;
    const fmt = kind === 'ms' ? fmtMs : fmtRps;
    const ok = target ? target.ok(d, p, h) : null;
    if (target) checks[target.check] = ok;
    rows.push({
      case: `${num} ${r.title}`,
      metric,
      direct: fmt(d),
      toolproof: fmt(p),
      bare: r.bare ? fmt(pick(r.bare)) : '',
      hop: r.hop ? fmt(pick(r.hop)) : '',
      vsHop: r.hop ? (kind === 'ms' ? fmtDeltaMs(p - pick(r.hop)) : fmtRatio(p / pick(r.hop))) : '',
      change: kind === 'ms' ? fmtDeltaMs(p - d) : fmtRatio(p / d),
      target: target?.text ?? '',
      result: verdict(ok),
    });
  };
  const p50 = (s: SideResult) => s.latency.p50;
  const p99 = (s: SideResult) => s.latency.p99;
  const rps = (s: SideResult) => s.throughput;
  type Metric = readonly [name: string, pick: (s: SideResult) => number, kind: 'ms' | 'rps'];
  const LAT_P50: Metric = ['latency p50', p50, 'ms'];
  const LAT_P99: Metric = ['latency p99', p99, 'ms'];
  const THROUGHPUT: Metric = ['throughput', rps, 'rps'];
  /** A case judged on nothing: its rows in this order, or its failed row (checked under its id). */
  const plainRows = (num: string, id: string, metrics: readonly Metric[]) => {
    const r = get(id);
    if (valid(r)) for (const [metric, pick, kind] of metrics) row(num, r, metric, pick, kind);
    else failedRow(num, r, id);
  };

  // 1. small, c=1
  const s1 = get('small-c1');
  if (valid(s1)) {
    row('1', s1, 'latency p50', p50, 'ms', {
      text: `< +${TARGETS.addedP50OverHopMs} ms vs hop`,
      ok: (_d, p, h) => p - h < TARGETS.addedP50OverHopMs,
      check: 'addedP50',
    });
    row('1', s1, 'latency p99', p99, 'ms');
  } else failedRow('1', s1, 'addedP50');

  // 2. small, c=64
  const s64 = get('small-c64');
  if (valid(s64)) {
    row('2', s64, 'throughput', rps, 'rps', {
      text: `>= ${TARGETS.throughputVsHop}x hop`,
      ok: (_d, p, h) => p / h >= TARGETS.throughputVsHop,
      check: 'throughputC64',
    });
    row('2', s64, 'latency p50', p50, 'ms');
    row('2', s64, 'latency p99', p99, 'ms');
  } else failedRow('2', s64, 'throughputC64');

  // 3. history, c=1 and c=8
  plainRows('3', 'history-c1', [LAT_P50, LAT_P99, THROUGHPUT]);
  plainRows('3', 'history-c8', [THROUGHPUT, LAT_P50, LAT_P99]);

  // 4. streaming
  const st = get('stream-c1');
  if (valid(st) && st.direct.firstByte && st.proxied.firstByte) {
    row('4', st, 'first byte p50', (s) => s.firstByte?.p50 ?? Number.NaN, 'ms', {
      text: `<= +${TARGETS.firstByteOverHopMs} ms vs hop`,
      ok: (_d, p, h) => p - h <= TARGETS.firstByteOverHopMs,
      check: 'addedFirstByte',
    });
    row('4', st, 'first byte p99', (s) => s.firstByte?.p99 ?? Number.NaN, 'ms');
    row('4', st, 'total time p50', p50, 'ms');
    row('4', st, 'total time p99', p99, 'ms');
  } else failedRow('4', st, 'addedFirstByte');

  // 5. toolproof CPU per small request (c=64 run) and RSS
  if (valid(s64) && s64.proxied.proxyCpuUsPerRequest !== undefined) {
    const us = s64.proxied.proxyCpuUsPerRequest;
    const hopUs = s64.hop?.proxyCpuUsPerRequest ?? Number.NaN;
    checks.cpuPerRequest = us / hopUs <= TARGETS.cpuPerRequestVsHop;
    const range = s64.proxied.proxyCpuUsRange;
    rows.push({
      case: '5 proxy CPU per small request (c=64 run)',
      metric: 'utime+stime / requests',
      direct: '',
      toolproof: `${fmtUs(us)}${range ? ` (rounds ${range.map((x) => x.toFixed(0)).join('-')})` : ''}`,
      bare: s64.bare?.proxyCpuUsPerRequest !== undefined ? fmtUs(s64.bare.proxyCpuUsPerRequest) : '',
      hop: fmtUs(hopUs),
      vsHop: fmtRatio(us / hopUs),
      change: '',
      target: `<= ${TARGETS.cpuPerRequestVsHop}x hop`,
      result: verdict(checks.cpuPerRequest),
    });
    if (s64.memoryMb) {
      const grew = s64.memoryMb.after - s64.memoryMb.before;
      rows.push({
        case: '5 toolproof RSS around the c=64 run',
        metric: 'VmRSS before -> after',
        direct: '',
        toolproof: `${fmtMb(s64.memoryMb.before)} -> ${fmtMb(s64.memoryMb.after)}`,
        bare: '',
        hop: '',
        vsHop: '',
        change: `${grew >= 0 ? '+' : ''}${fmtMb(grew)}`,
        target: '',
        result: '',
      });
    }
  } else if (s64) checks.cpuPerRequest = false;

  // 7. long streams (500 events), c=32: throughput, first byte, CPU per event
  for (const [num, id] of [
    ['7', 'stream500-c32'],
    ['8', 'tools-stream500-c32'],
  ] as const) {
    const ls = get(id);
    if (!valid(ls)) {
      failedRow(num, ls, id === 'tools-stream500-c32' ? 'toolStreamCpuPerChunk' : id);
      continue;
    }
    row(num, ls, 'throughput (streams/s)', rps, 'rps');
    row(num, ls, 'first byte p50', (x) => x.firstByte?.p50 ?? Number.NaN, 'ms');
    row(num, ls, 'total time p50', p50, 'ms');
    const chunks = ls.chunks ?? 1;
    const perChunk = (x?: SideResult) =>
      x?.proxyCpuUsPerRequest !== undefined ? x.proxyCpuUsPerRequest / chunks : Number.NaN;
    // The harness's cost per chunk is judged on the tool stream; pass-through is for reference.
    const judged = id === 'tools-stream500-c32';
    const ratio = perChunk(ls.proxied) / perChunk(ls.hop);
    if (judged) checks.toolStreamCpuPerChunk = ratio <= TARGETS.toolStreamCpuPerChunkVsHop;
    rows.push({
      case: `${num} ${ls.title}`,
      metric: 'proxy CPU per chunk',
      direct: '',
      toolproof: fmtUs2(perChunk(ls.proxied)),
      bare: ls.bare ? fmtUs2(perChunk(ls.bare)) : '',
      hop: ls.hop ? fmtUs2(perChunk(ls.hop)) : '',
      vsHop: fmtRatio(ratio),
      change: '',
      target: judged ? `<= ${TARGETS.toolStreamCpuPerChunkVsHop}x hop` : '',
      result: judged ? verdict(checks.toolStreamCpuPerChunk ?? null) : '',
    });
  }

  // 6. with tools
  plainRows('6', 'tools-c1', [LAT_P50, LAT_P99]);
  plainRows('6', 'tools-c64', [THROUGHPUT, LAT_P50, LAT_P99]);

  // 9. short tool stream: the per-request cost of a forced tool stream
  const ts = get('tools-stream8-c32');
  if (valid(ts)) {
    row('9', ts, 'throughput (streams/s)', rps, 'rps');
    row('9', ts, 'first byte p50', (x) => x.firstByte?.p50 ?? Number.NaN, 'ms');
    const us = ts.proxied.proxyCpuUsPerRequest ?? Number.NaN;
    const hopUs = ts.hop?.proxyCpuUsPerRequest ?? Number.NaN;
    rows.push({
      case: `9 ${ts.title}`,
      metric: 'proxy CPU per request',
      direct: '',
      toolproof: fmtUs(us),
      bare: ts.bare?.proxyCpuUsPerRequest !== undefined ? fmtUs(ts.bare.proxyCpuUsPerRequest) : '',
      hop: fmtUs(hopUs),
      vsHop: fmtRatio(us / hopUs),
      change: '',
      target: '',
      result: '',
    });
  } else failedRow('9', ts, 'tools-stream8-c32');

  return { rows, checks };
}

/** The fourth side's name: the bare proxy, or toolproof with capture off (--capture-ab). */
let captureAb = false;
function baselineLabel(): string {
  return captureAb ? 'capture off' : 'bare proxy';
}

function cpuRows(results: Map<string, CaseResult>, baseline: boolean): string[][] {
  const share = (x: number | undefined) => (x === undefined ? 'n/a' : `${(x * 100).toFixed(0)}%`);
  const out: string[][] = [
    [
      'case',
      'toolproof CPU/req (rounds min-max, kernel share)',
      'node hop CPU/req',
      'CPU/chunk toolproof / hop',
      ...(baseline ? [`${baselineLabel()} CPU/req`] : []),
      'upstream CPU/req (direct / toolproof)',
      'load generator CPU/req (direct / toolproof)',
      'other processes (direct / toolproof)',
    ],
  ];
  for (const r of results.values()) {
    if (!r.proxied) continue;
    out.push([
      r.title,
      `${fmtUs(r.proxied.proxyCpuUsPerRequest ?? Number.NaN)} (${(r.proxied.proxyCpuUsRange ?? [])
        .map((x) => x.toFixed(0))
        .join('-')}, ${share(r.proxied.proxySysShare)} sys)`,
      `${fmtUs(r.hop?.proxyCpuUsPerRequest ?? Number.NaN)} (${share(r.hop?.proxySysShare)} sys)`,
      r.chunks
        ? `${fmtUs2((r.proxied.proxyCpuUsPerRequest ?? Number.NaN) / r.chunks)} / ${fmtUs2((r.hop?.proxyCpuUsPerRequest ?? Number.NaN) / r.chunks)}`
        : '',
      ...(baseline
        ? [`${fmtUs(r.bare?.proxyCpuUsPerRequest ?? Number.NaN)} (${share(r.bare?.proxySysShare)} sys)`]
        : []),
      `${fmtUs(r.direct?.upstreamCpuUsPerRequest ?? Number.NaN)} / ${fmtUs(r.proxied.upstreamCpuUsPerRequest)}`,
      `${fmtUs(r.direct?.loadgenCpuUsPerRequest ?? Number.NaN)} / ${fmtUs(r.proxied.loadgenCpuUsPerRequest)}`,
      `${share(r.direct?.foreignCpuShare)} / ${share(r.proxied.foreignCpuShare)}`,
    ]);
  }
  return out;
}

function directRows(results: Map<string, CaseResult>): string[][] {
  const out: string[][] = [
    ['case', 'throughput', 'p50', 'p99', 'first byte p50', 'upstream CPU/req', 'errors'],
  ];
  for (const r of results.values()) {
    const d = r.direct;
    if (!d) {
      out.push([r.title, `not measured: ${(r.probe.direct?.detail ?? '').slice(0, 80)}`, '', '', '', '', '']);
      continue;
    }
    out.push([
      r.title,
      fmtRps(d.throughput),
      fmtMs(d.latency.p50),
      fmtMs(d.latency.p99),
      d.firstByte ? fmtMs(d.firstByte.p50) : '',
      fmtUs(d.upstreamCpuUsPerRequest),
      String(d.errors),
    ]);
  }
  return out;
}

/** A proxy process started for the bench. */
interface Launched extends ProbeTarget {
  child: Child;
}

/** The open-stream probes' table; toolproof's figures are judged (the hop's are the reference). */
/**
 * The A/B cases (ab-capture, ab-tracing): toolproof processes of their own that differ in one
 * setting, measured on short and long forced tool streams and an agent turn (bench/lib/overhead-ab.ts). The base
 * has capture and tracing off; every OTEL_* variable of the shell is left out of all of them.
 */
async function measureAbCases(
  abs: ReadonlySet<string>,
  opts: Options,
  launch: (env: NodeJS.ProcessEnv) => Promise<Launched>,
  log: (s: string) => void,
): Promise<AbResult[]> {
  const noOtel: NodeJS.ProcessEnv = {};
  for (const k of Object.keys(process.env)) if (k.startsWith('OTEL_')) noOtel[k] = undefined;
  // The OTLP sink: drains each export unread (its CPU is the load generator's, not toolproof's).
  const sink = await startOtlpSink();
  const sinkPort = sink.port;
  const specs: Array<{ name: string; env: NodeJS.ProcessEnv }> = [
    { name: 'capture off, tracing off', env: { ...noOtel, TOOLPROOF_CAPTURE_MB: '0' } },
  ];
  // ab-aa: the base again, a process of its own (an A/A comparison: what the method reads
  // between two identical processes, started second, before the variants).
  if (abs.has('ab-aa'))
    specs.push({ name: 'base again (A/A)', env: { ...noOtel, TOOLPROOF_CAPTURE_MB: '0' } });
  if (abs.has('ab-capture')) specs.push({ name: 'capture on (10 MB)', env: { ...noOtel } });
  const otlp = {
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${sinkPort}`,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
  };
  if (abs.has('ab-tracing'))
    specs.push({ name: 'tracing on (all sampled)', env: { ...noOtel, TOOLPROOF_CAPTURE_MB: '0', ...otlp } });
  if (abs.has('ab-both')) specs.push({ name: 'capture and tracing on', env: { ...noOtel, ...otlp } });
  const all = defineCases(opts.quick);
  // Beside the short and long streams, a real agent turn (fixtures.ts agentTurn: Qwen Code's
  // recorded request, ~90 KB with 14 tools and a few turns, answered with a streamed tool call):
  // the cost where users pay it.
  const agent = agentTurn();
  // The same turn as a backend streams it (fixtures.ts PACED_MS): each event a write of its own,
  // so toolproof pays a read, a parse, a transform and a write per event, as on a real backend.
  const paced = agentTurn(AGENT_TURN_EVENTS, { mode: 'trickle', tickMs: PACED_MS });
  const allWorkloads: Case[] = [
    ...['tools-stream8-c32', 'tools-stream500-c32'].map((id) => all.find((c) => c.id === id)!),
    {
      id: 'agent-turn-c8',
      title: `agent turn (Qwen Code's request, ${Math.round(agent.body.length / 1024)} KB, 14 tools; a ${AGENT_TURN_EVENTS}-event streamed ${AGENT_CALL.name} call), c=8`,
      body: agent.body,
      stream: true,
      concurrency: 8,
      durationMs: opts.quick ? 800 : 1500,
      warmupMs: opts.quick ? 2000 : 4000,
      chunks: AGENT_TURN_EVENTS,
    },
    {
      id: 'agent-paced-c8',
      title: `the agent turn paced as a backend writes it (one event a write, every ${PACED_MS} ms), c=8`,
      body: paced.body,
      stream: true,
      concurrency: 8,
      durationMs: opts.quick ? 800 : 1500,
      warmupMs: opts.quick ? 2000 : 4000,
      chunks: AGENT_TURN_EVENTS,
    },
  ];
  const chosen = opts.abWorkloads && new Set([...opts.abWorkloads].map((w) => AB_WORKLOAD_IDS[w]));
  const workloads = chosen ? allWorkloads.filter((c) => chosen.has(c.id)) : allWorkloads;
  const generations = opts.abProcesses;
  // Per workload, its results of each generation (merged at the end: mergeGenerations).
  const byWorkload = workloads.map(() => [] as AbResult[]);
  let variants: AbVariant[] = [];
  let children: Child[] = [];
  const stop = async () => {
    await Promise.all(variants.map((v) => v.pool.close()));
    await Promise.all(children.map((c) => stopChild(c)));
    variants = [];
    children = [];
  };
  try {
    for (let g = 0; g < generations; g++) {
      const tag = generations > 1 ? ` [processes ${g + 1}/${generations}]` : '';
      for (const spec of specs) {
        const l = await launch(spec.env);
        children.push(l.child);
        variants.push({ name: spec.name, pool: new Pool(l.origin, POOL_OPTIONS), pids: l.pids });
        log(`A/B${tag}: toolproof (${spec.name}) pid ${l.child.pid} on ${l.origin}`);
      }
      for (const [wi, c] of workloads.entries()) {
        for (const v of variants) {
          const p = await probe(v.pool, c.body);
          const check =
            c.id === 'agent-turn-c8' || c.id === 'agent-paced-c8'
              ? {
                  ok:
                    p.status === 200 &&
                    p.text.includes(`"name":"${AGENT_CALL.name}"`) &&
                    p.text.includes('data: [DONE]'),
                  detail: `expected a streamed ${AGENT_CALL.name} call: HTTP ${p.status} ${p.text.slice(0, 300)}`,
                }
              : checkResponse(c, 'proxied', p.status, p.text);
          if (!check.ok) throw new Error(`A/B ${c.id}: toolproof (${v.name}) check failed: ${check.detail}`);
        }
        const t0 = Date.now();
        const r = await measureAb(
          variants,
          {
            id: c.id,
            title: c.title,
            body: c.body,
            stream: c.stream,
            concurrency: c.concurrency,
            sliceRequests: AB_SLICE_REQUESTS[c.id] ?? 8 * c.concurrency,
            // The cycles and the budget are the run's, shared among the generations.
            budgetMs: (opts.abBudgetS * 1000) / generations,
            minCycles: 6,
            burnInCycles: 3,
            warmupMs: opts.quick ? 2000 : 3000,
          },
          Math.max(6, Math.ceil(opts.abCycles / generations)),
        );
        byWorkload[wi]!.push(r);
        log(
          `  A/B${tag} ${c.id}: ${r.variants
            .map(
              (v, i) =>
                `${v.name} ${fmtUs(v.pooledUs)}/req` +
                (i === 0 ? '' : ` x${v.ratio.toFixed(3)} [${v.ci[0].toFixed(3)}, ${v.ci[1].toFixed(3)}]`) +
                ` ${v.readsPerRequest.toFixed(1)} reads/req`,
            )
            .join(' | ')}  (${((Date.now() - t0) / 1000).toFixed(1)} s)`,
        );
      }
      if (generations > 1) await stop();
    }
    if (abs.has('ab-tracing') || abs.has('ab-both'))
      log(`  A/B: the OTLP sink received ${sink.exports()} export requests`);
  } finally {
    await stop();
    sink.close();
  }
  const out = byWorkload.map((rs) => mergeGenerations(rs));
  if (generations > 1)
    for (const r of out)
      log(
        `  A/B ${r.workload}, ${generations} generations pooled: ${r.variants
          .slice(1)
          .map((v) => `${v.name} x${v.ratio.toFixed(3)} [${v.ci[0].toFixed(3)}, ${v.ci[1].toFixed(3)}]`)
          .join(' | ')}`,
      );
  return out;
}

function abRows(results: readonly AbResult[]): {
  rows: string[][];
  checks: Record<string, boolean>;
  inconclusive: string[];
} {
  const rows: string[][] = [
    [
      'A/B case',
      'toolproof',
      'CPU/req (pooled)',
      'vs base (pooled, 95% interval)',
      'median of cycles (range)',
      'target',
      'result',
    ],
  ];
  const checks: Record<string, boolean> = {};
  const inconclusive = new Set<string>();
  const fails = new Set<string>();
  // The agent turn's base CPU in this run: the fixed cost is compared with 5% of it (said, not judged).
  const reference = results.find((r) => r.workload === AB_REFERENCE_WORKLOAD)?.variants[0]?.pooledUs;
  for (const r of results) {
    const baseUs = r.variants[0]?.pooledUs ?? Number.NaN;
    const fixedCost = r.workload === AB_FIXED_COST_WORKLOAD;
    for (const [i, v] of r.variants.entries()) {
      const key = v.name.startsWith('capture on')
        ? 'captureCpu'
        : v.name.startsWith('tracing on')
          ? 'tracingCpu'
          : v.name.startsWith('capture and tracing on')
            ? 'captureTracingCpu'
            : '';
      const limit = key === 'tracingCpu' ? TARGETS.tracingCpuVsOff : TARGETS.captureCpuVsOff;
      // The fixed-cost workload: the added µs and its interval, beside 5% of the agent turn.
      const limitUs = reference === undefined ? undefined : (limit - 1) * reference;
      const fixed = fixedCostVerdict(v, baseUs, limitUs ?? Number.NaN);
      const { addedUs, ci: addedCi } = fixed;
      const result = i === 0 ? null : abVerdict(v.ci, limit);
      // Only a PASS meets the target; an interval that straddles it is not a pass either.
      if (key && result !== null) {
        checks[key] = (checks[key] ?? true) && result === 'PASS';
        if (result === 'inconclusive') inconclusive.add(key);
        if (result === 'FAIL') fails.add(key);
      }
      const ratioText = `${v.ratio.toFixed(3)}x [${v.ci[0].toFixed(3)}, ${v.ci[1].toFixed(3)}]`;
      rows.push([
        i === 0 ? `${r.workload} (${r.cycles} cycles, ${r.sliceRequests} requests a slice)` : '',
        v.name,
        fmtUs(v.pooledUs),
        i === 0
          ? 'base'
          : fixedCost
            ? `+${addedUs.toFixed(1)} µs [${addedCi[0].toFixed(1)}, ${addedCi[1].toFixed(1)}] (${ratioText})`
            : ratioText,
        i === 0
          ? ''
          : `${v.medianRatio.toFixed(3)}x (${Math.min(...v.ratios).toFixed(2)}-${Math.max(...v.ratios).toFixed(2)})`,
        i === 0
          ? ''
          : fixedCost && limitUs !== undefined
            ? `<= ${limit.toFixed(2)}x (the added µs ${fixed.verdict === 'PASS' ? 'under' : fixed.verdict === 'FAIL' ? 'over' : 'near'} 5% of the agent turn, +${limitUs.toFixed(0)} µs)`
            : `<= ${limit.toFixed(2)}x`,
        result ?? '',
      ]);
    }
  }
  return { rows, checks, inconclusive: [...inconclusive].filter((k) => !fails.has(k)) };
}

function openStreamRows(o: OpenStreamsReport): { rows: string[][]; checks: Record<string, boolean> } {
  const out: string[][] = [['open streams', 'process', 'figure', 'target', 'result']];
  const checks: Record<string, boolean> = {};
  for (const m of o.memory) {
    const judged = m.target === 'toolproof';
    const ok = m.perStreamKb <= TARGETS.rssPerOpenStreamKb;
    if (judged) checks[m.tools ? 'rssPerOpenStreamTool' : 'rssPerOpenStream'] = ok;
    out.push([
      `${m.streams} held open, ${m.tools ? 'one tool (forced final_answer)' : 'no tools'}`,
      m.target,
      `${m.perStreamKb.toFixed(1)} KB RSS per open stream (${fmtMb(m.rssBeforeMb)} -> ${fmtMb(m.rssOpenMb)})`,
      judged ? `<= ${TARGETS.rssPerOpenStreamKb} KB` : '',
      judged ? verdict(ok) : '',
    ]);
  }
  for (const e of o.eventLoop) {
    // Steady state is what the issue's target is about; the synchronized burst is reported as is.
    const judged = e.mode === 'steady' && e.target === 'toolproof';
    const ok = e.errors === 0 && e.loaded.p99Ms < TARGETS.eventLoopP99Ms;
    if (judged) checks.eventLoopP99 = ok;
    out.push([
      `${e.streams} streams with a tool, ${e.chunksPerStream} events each, one per ${e.trickleMs} ms, ` +
        (e.mode === 'steady' ? 'arrivals spread (steady state)' : 'all start together (synchronized bursts)'),
      e.target,
      fmtProbe(e),
      judged ? `p99 < ${TARGETS.eventLoopP99Ms} ms` : '',
      judged ? verdict(ok) : '',
    ]);
  }
  return { rows: out, checks };
}

/** toolproof's pids: the process itself, and its workers once all have started (--workers > 1). */
async function toolproofGroup(pid: number, workers: number): Promise<number[]> {
  if (workers <= 1) return [pid];
  const deadline = Date.now() + 60_000;
  for (;;) {
    const group = withChildren(pid);
    if (group.length >= workers + 1) return group;
    if (Date.now() > deadline) throw new Error(`toolproof started ${group.length - 1} of ${workers} workers`);
    await sleep(100);
  }
}

// ---------------------------------------------------------------------------------------------
// Main

const IDLE_PROBE_MS = 2000;
const GLOBAL_WARMUP_MS = 4000;
const POOL_OPTIONS = {
  connections: 64,
  pipelining: 1,
  keepAliveTimeout: 60_000,
  keepAliveMaxTimeout: 600_000,
};

async function main(): Promise<number> {
  const opts = parseArgs(process.argv.slice(2));
  captureAb = opts.captureAb;
  const cases = defineCases(opts.quick).filter((c) => !opts.cases || opts.cases.has(c.id));
  // The open-stream probes run by default; with --cases only when named; never with --no-open-streams.
  const probes = new Set<string>(
    PROBE_IDS.filter((id) => opts.openStreams && (!opts.cases || opts.cases.has(id))),
  );
  const abs = new Set<string>(
    AB_IDS.filter((id) => !opts.directOnly && (opts.cases ? opts.cases.has(id) : !AB_NAMED_ONLY.has(id))),
  );
  const known = new Set<string>([...defineCases(false).map((c) => c.id), ...PROBE_IDS, ...AB_IDS]);
  const unknown = [...(opts.cases ?? [])].filter((id) => !known.has(id));
  if (unknown.length > 0)
    throw new Error(`unknown case id(s): ${unknown.join(', ')} (see --cases in bench/run.ts)`);
  if (cases.length === 0 && probes.size === 0 && abs.size === 0)
    throw new Error('no case selected (see --cases in bench/run.ts)');

  const log = (line: string) => process.stdout.write(`${line}\n`);
  const startedAt = new Date();
  const cores = cpus().length;
  const startLoad = loadavg();
  log(
    `toolproof bench, ${startedAt.toISOString()}, node ${process.version}, ${cores} CPU core(s), ` +
      `load average ${startLoad.map((x) => x.toFixed(2)).join(' ')}`,
  );
  log(
    `note: load generator, fake upstream and toolproof share the same ${cores} core(s); absolute numbers depend ` +
      'on the machine, the ratios and deltas are the point.',
  );

  const serverArgs = opts.directOnly ? [] : prepareServer(ROOT, opts.server, log);
  const profDir = join(ROOT, 'bench/results/prof');
  const profName = `toolproof-${startedAt.toISOString().replace(/[:.]/g, '-')}.cpuprofile`;
  if (opts.cpuProf) mkdirSync(profDir, { recursive: true });

  const pools: Partial<Record<Side, Pool>> = {};
  const onSignal = (signal: NodeJS.Signals) => {
    log(`\n${signal}: stopping the children`);
    void stopAll().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  process.once('exit', killAllNow);

  const results = new Map<string, CaseResult>();
  const windows: [number, number][] = [];
  let memory: { start: number; end?: number; peak?: number } | undefined;
  let profile: ProfileSummary | undefined;
  let idleCpuShare: number | undefined;
  let upstreamOrigin = '';
  let openStreams: OpenStreamsReport | undefined;
  const abResults: AbResult[] = [];
  let abInconclusive: string[] = [];
  try {
    const { child: upstream, port: upstreamPort } = await startFakeUpstream(ROOT);
    pools.direct = new Pool(`http://127.0.0.1:${upstreamPort}`, POOL_OPTIONS);
    log(`fake upstream pid ${upstream.pid} on 127.0.0.1:${upstreamPort}`);
    const proxies: Partial<Record<Side, Child>> = {};
    const groups: Partial<Record<Side, number[]>> = {};
    upstreamOrigin = `http://127.0.0.1:${upstreamPort}`;

    /** Starts toolproof (as `npm start` would, with the bench's environment) and waits for /health. */
    /** loopSamples: preload bench/lib/loop-sampler.mjs, its samples written to that file at exit. */
    const launchToolproof = async (
      withProfile: boolean,
      loopSamples?: string,
      extraEnv: NodeJS.ProcessEnv = {},
    ): Promise<Launched> => {
      const port = await freePort();
      const tpEnv: NodeJS.ProcessEnv = {};
      for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('TOOLPROOF_')) tpEnv[k] = v;
      Object.assign(tpEnv, {
        TOOLPROOF_UPSTREAM_URL: `http://127.0.0.1:${upstreamPort}/v1`,
        TOOLPROOF_HOST: '127.0.0.1',
        TOOLPROOF_PORT: String(port),
        TOOLPROOF_LOG_LEVEL: LOG_LEVEL,
        TOOLPROOF_SHUTDOWN_GRACE_MS: '2000',
        TOOLPROOF_WORKERS: String(opts.workers),
        ...(loopSamples ? { BENCH_LOOP_SAMPLES: loopSamples } : {}),
        ...extraEnv,
      });
      const child = startNode({
        name: 'toolproof',
        args: [
          ...(withProfile ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`, `--cpu-prof-name=${profName}`] : []),
          ...(loopSamples ? ['--import', pathToFileURL(join(ROOT, 'bench/lib/loop-sampler.mjs')).href] : []),
          ...opts.nodeFlags,
          ...serverArgs,
        ],
        env: tpEnv,
        cwd: ROOT,
      });
      await waitForHttp(child, `http://127.0.0.1:${port}/health`, 60_000);
      return {
        name: 'toolproof',
        child,
        origin: `http://127.0.0.1:${port}`,
        pids: await toolproofGroup(child.pid, opts.workers),
        metrics: true,
      };
    };
    /** Starts the bare Node hop in front of the fake upstream. */
    const launchHop = async (loopSamples?: string, withProfile = false): Promise<Launched> => {
      const child = startNode({
        name: 'node hop',
        args: [
          ...(loopSamples ? ['--import', pathToFileURL(join(ROOT, 'bench/lib/loop-sampler.mjs')).href] : []),
          ...(withProfile
            ? [
                '--cpu-prof',
                `--cpu-prof-dir=${join(profDir, `node-hop-${profName.replace(/\.cpuprofile$/, '')}`)}`,
              ]
            : []),
          '--import',
          'tsx',
          join(ROOT, 'bench/lib/node-hop.ts'),
          `http://127.0.0.1:${upstreamPort}`,
        ],
        cwd: ROOT,
        stdinPipe: true,
        ...(loopSamples ? { env: { ...process.env, BENCH_LOOP_SAMPLES: loopSamples } } : {}),
      });
      const port = Number(await waitForLine(child, /PORT (\d+)/, 20_000));
      return { name: 'node hop', child, origin: `http://127.0.0.1:${port}`, pids: [child.pid] };
    };

    if (!opts.directOnly && cases.length > 0) {
      const tp = await launchToolproof(opts.cpuProf);
      proxies.proxied = tp.child;
      groups.proxied = tp.pids;
      memory = { start: groupMemoryMb(tp.pids).rss };
      log(
        `toolproof pid ${tp.child.pid} on ${tp.origin}: node ${[...opts.nodeFlags, ...serverArgs].join(' ')} ` +
          `(TOOLPROOF_LOG_LEVEL=${LOG_LEVEL}: per-request info logs would dominate; TOOLPROOF_WORKERS=${opts.workers}), ` +
          `RSS ${fmtMb(memory.start)}`,
      );
      if (opts.cpuProf) log('warning: --cpu-prof slows toolproof down; use the timings of a run without it.');
      pools.proxied = new Pool(tp.origin, POOL_OPTIONS);
      const hop = await launchHop(undefined, opts.cpuProf);
      proxies.hop = hop.child;
      groups.hop = hop.pids;
      pools.hop = new Pool(hop.origin, POOL_OPTIONS);
      log(`node hop pid ${hop.child.pid} on ${hop.origin}`);
    } else if (opts.directOnly) {
      log('--direct-only: toolproof not started');
    }
    if (opts.captureAb) {
      // The capture's A/B: the same toolproof with the ring off, in the bare proxy's place.
      const off = await launchToolproof(false, undefined, { TOOLPROOF_CAPTURE_MB: '0' });
      proxies.bare = off.child;
      groups.bare = off.pids;
      pools.bare = new Pool(off.origin, POOL_OPTIONS);
      log(`toolproof with capture off (--capture-ab) pid ${off.child.pid} on ${off.origin}`);
    } else if (opts.baseline) {
      const bare = startNode({
        name: 'bare proxy',
        args: ['--import', 'tsx', join(ROOT, 'bench/lib/bare-proxy.ts'), `http://127.0.0.1:${upstreamPort}`],
        cwd: ROOT,
        stdinPipe: true,
      });
      proxies.bare = bare;
      groups.bare = [bare.pid];
      const barePort = Number(await waitForLine(bare, /PORT (\d+)/, 20_000));
      pools.bare = new Pool(`http://127.0.0.1:${barePort}`, POOL_OPTIONS);
      log(`bare proxy (--baseline) pid ${bare.pid} on 127.0.0.1:${barePort}`);
    }
    const env: Env = { pools, proxies, groups, upstream, windows };
    // Global warm-up: every selected case's request on every side, so the JIT has seen all of
    // toolproof's paths before the first measured round (the first case would pay for it otherwise).
    // At least GLOBAL_WARMUP_MS per side in all (cases repeated when few are selected): V8 keeps
    // optimizing toolproof's code for seconds, and a cold proxy shows several times its real CPU cost.
    const warmStarted = Date.now();
    for (const side of cases.length > 0 ? SIDES : []) {
      const pool = pools[side];
      if (!pool) continue;
      const sideStarted = Date.now();
      do {
        for (const c of cases) {
          await runLoad({
            pool,
            body: c.body,
            stream: c.stream,
            concurrency: Math.min(c.concurrency, 16),
            durationMs: 600,
          });
        }
      } while (Date.now() - sideStarted < GLOBAL_WARMUP_MS);
    }
    if (cases.length > 0) log(`global warm-up: ${((Date.now() - warmStarted) / 1000).toFixed(1)} s`);
    if (proxies.proxied) {
      // toolproof's CPU while nobody sends it anything (timers, metrics, GC): should be ~0.
      const cpu = () => {
        const c = groupCpuSplit(env.groups.proxied ?? []);
        return c.user + c.sys;
      };
      const before = cpu();
      await sleep(IDLE_PROBE_MS);
      idleCpuShare = ticksToUs(cpu() - before) / (IDLE_PROBE_MS * 1000);
      log(
        `toolproof idle CPU: ${(idleCpuShare * 100).toFixed(1)}% of one core over ${IDLE_PROBE_MS / 1000} s`,
      );
    }
    if (cases.length > 0)
      log(`${cases.length} case(s), ${opts.rounds} interleaved rounds per side each, after a warm-up\n`);
    for (const c of cases) {
      const t0 = Date.now();
      const r = await measureCase(c, env, opts.rounds, log);
      results.set(c.id, r);
      const brief = (s?: SideResult) =>
        s
          ? `${fmtRps(s.throughput)}, p50 ${fmtMs(s.latency.p50)}${s.errors ? `, ${s.errors} errors` : ''}`
          : 'not measured';
      log(
        `  ${c.id.padEnd(11)} direct ${brief(r.direct)} | toolproof ${brief(r.proxied)}` +
          ` | hop ${brief(r.hop)}${opts.baseline ? ` | bare ${brief(r.bare)}` : ''}  (${((Date.now() - t0) / 1000).toFixed(1)} s)`,
      );
    }
    await Promise.all(Object.values(pools).map((p) => p.close()));
    const toolproof = proxies.proxied;
    if (toolproof && memory && env.groups.proxied) {
      const mem = groupMemoryMb(env.groups.proxied);
      memory.end = mem.rss;
      memory.peak = mem.peak;
      await stopChild(toolproof, opts.cpuProf ? 20_000 : 5_000);
    }
    if (abs.size > 0) {
      log('');
      abResults.push(
        ...(await measureAbCases(abs, opts, (env) => launchToolproof(false, undefined, env), log)),
      );
    }
    if (probes.size > 0 && !opts.directOnly) {
      // Fresh processes: the timed cases left toolproof's heap at its high-water mark, under
      // which 1,000 more streams would not show in RSS at all.
      if (proxies.hop) await stopChild(proxies.hop, opts.cpuProf ? 20_000 : 5_000);
      log('');
      openStreams = await probeOpenStreams({
        quick: opts.quick,
        upstreamOrigin,
        upstreamPid: upstream.pid,
        // The sampler writes one file per process: with workers it is left out.
        launchers: [
          (o) => launchToolproof(false, opts.workers === 1 ? o?.loopSamples : undefined),
          (o) => launchHop(o?.loopSamples),
        ],
        memory: probes.has('open-memory'),
        eventLoop: probes.has('event-loop'),
        log,
      });
    }
    if (toolproof && opts.cpuProf) {
      const file = readdirSync(profDir).find((f) => f === profName);
      if (file) profile = summarizeProfile(join(profDir, file), windows);
      else log(`warning: no CPU profile was written to ${profDir}`);
    }
  } finally {
    await Promise.all(Object.values(pools).map((p) => p?.destroy().catch(() => {})));
    await stopAll();
  }

  // Report
  const { rows, checks } = opts.directOnly ? { rows: [], checks: {} } : buildRows(results);
  log('');
  if (opts.directOnly) log(renderTable(directRows(results)));
  else if (results.size > 0) {
    log(
      renderTable([
        [
          'case',
          'metric',
          'direct',
          'toolproof',
          'node hop',
          ...(opts.baseline ? [baselineLabel()] : []),
          'vs direct',
          'vs hop',
          'target',
          'result',
        ],
        ...rows.map((r) => [
          r.case,
          r.metric,
          r.direct,
          r.toolproof,
          r.hop,
          ...(opts.baseline ? [r.bare] : []),
          r.change,
          r.vsHop,
          r.target,
          r.result,
        ]),
      ]),
    );
    log('');
    log(renderTable(cpuRows(results, opts.baseline)));
    if (opts.captureAb)
      for (const r of results.values()) {
        const on = r.proxied?.proxyCpuUsPerRequest;
        const off = r.bare?.proxyCpuUsPerRequest;
        if (on === undefined || off === undefined) continue;
        log(
          `capture cost, ${r.title}: toolproof CPU/req ${fmtUs(on)} with the ring on, ${fmtUs(off)} off: ` +
            `${(((on - off) / off) * 100).toFixed(1)}% (target: at most 5% on streamed requests)`,
        );
      }
  }
  log('');
  if (memory) {
    log(
      `toolproof RSS: ${fmtMb(memory.start)} after start, ${fmtMb(memory.end ?? Number.NaN)} at the end, ` +
        `peak ${fmtMb(memory.peak ?? Number.NaN)}`,
    );
  }
  if (abResults.length > 0) {
    const o = abRows(abResults);
    Object.assign(checks, o.checks);
    abInconclusive = o.inconclusive;
    log('');
    log(renderTable(o.rows));
  }
  if (openStreams) {
    const o = openStreamRows(openStreams);
    Object.assign(checks, o.checks);
    log('');
    log(renderTable(o.rows));
  }
  log(TARGET_SOURCE);
  log(
    `setup: ${cores}-core machine shared by load generator, fake upstream and toolproof; everything on 127.0.0.1; ` +
      `keep-alive undici Pool; TOOLPROOF_LOG_LEVEL=${LOG_LEVEL}; CPU from /proc/<pid>/stat (CLK_TCK ${CLK_TCK}); ` +
      'latency = request start to last body byte, first byte = to the first body chunk; ' +
      'delta = toolproof - direct, ratio = toolproof / direct.',
  );
  if (profile) {
    log('');
    log(formatProfile(profile));
  }

  const endLoad = loadavg();
  const foreign = [...results.values()].flatMap((r) =>
    SIDES.map((s) => r[s]?.foreignCpuShare).filter((x): x is number => x !== undefined),
  );
  const foreignMax = foreign.length ? Math.max(...foreign) : 0;
  log('');
  log(
    `load average ${startLoad.map((x) => x.toFixed(2)).join(' ')} at the start, ` +
      `${endLoad.map((x) => x.toFixed(2)).join(' ')} at the end; other processes used up to ` +
      `${(foreignMax * 100).toFixed(0)}% of the machine's CPU during the measured rounds.`,
  );
  if (foreignMax > 0.1 || startLoad[0]! > cores) {
    log(
      'warning: the machine was busy with other work: CPU per request and throughput suffer from the contention ' +
        '(more context switches, less batching per event-loop turn, colder caches); rerun on a quiet machine ' +
        'for the real numbers.',
    );
  }
  const failed = Object.entries(checks).filter(([, ok]) => ok === false);
  const summary = opts.directOnly
    ? '--direct-only: no targets checked'
    : Object.keys(checks).length === 0
      ? 'no target applies to the selected cases'
      : failed.length === 0
        ? 'all targets met'
        : `missed: ${failed
            .map(([k]) =>
              abInconclusive.includes(k) ? `${k} (inconclusive: the interval straddles the target)` : k,
            )
            .join(', ')}`;
  log(`\n${summary}`);

  mkdirSync(dirname(opts.out), { recursive: true });
  writeFileSync(
    opts.out,
    `${JSON.stringify(
      {
        startedAt: startedAt.toISOString(),
        finishedAt: new Date().toISOString(),
        machine: {
          cores,
          cpuModel: cpus()[0]?.model,
          totalMemMb: Math.round(totalmem() / 2 ** 20),
          loadavgStart: startLoad,
          loadavgEnd: endLoad,
        },
        node: process.version,
        setup: {
          server: opts.server,
          serverArgs,
          logLevel: LOG_LEVEL,
          rounds: opts.rounds,
          quick: opts.quick,
          baseline: opts.baseline,
          workers: opts.workers,
          cpuProfile: opts.cpuProf,
          clkTck: CLK_TCK,
          note: 'load generator, fake upstream and toolproof share the cores; everything on 127.0.0.1',
        },
        targets: { ...TARGETS, source: TARGET_SOURCE },
        checks,
        table: rows,
        cases: Object.fromEntries(results),
        toolproofMemoryMb: memory,
        toolproofIdleCpuShare: idleCpuShare,
        workers: opts.workers,
        ...(openStreams ? { openStreams } : {}),
        ...(abResults.length > 0 ? { ab: abResults } : {}),
        ...(profile ? { profile } : {}),
      },
      null,
      2,
    )}\n`,
  );
  log(`results written to ${opts.out}`);
  return failed.length === 0 ? 0 : 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  async (err: unknown) => {
    process.stderr.write(`bench failed: ${(err as Error)?.stack ?? String(err)}\n`);
    await stopAll();
    process.exitCode = 2;
  },
);
