/**
 * What tracing costs per request, alone: the tracing layer (server/tracing/) driven through one
 * request's calls (server span, chat attributes, one attempt with its traceparent, its response,
 * two harness events, the end), with a real OTLP exporter posting to a loopback sink that drains
 * each POST; CPU per request from process.cpuUsage over many requests (export included: a flush
 * every 256 requests, so no span is dropped). Without sockets, parsing or policies around it, the
 * figure is steadier than an A/B of the whole server on a shared machine.
 *
 * `npx tsx bench/tracing-cost.ts [--requests=20000] [--rounds=5] [--protocol=http/protobuf] [--sampler=always_on] [--impl=DIR] [--ab=DIR]`
 *
 * `--alloc`: heap bytes allocated per request instead (exports included), a figure that does not
 * move with the machine's load: needs `node --expose-gc --max-semi-space-size=256 --min-semi-space-size=256
 * --import tsx bench/tracing-cost.ts --alloc` (a young generation large enough that no GC runs while counting).
 *
 * `--start`: the spans' start alone, µs of CPU per request: the server span (continuing the
 * request's traceparent: its parse and the sampler) and the attempt span with its headers, never
 * ended (no encoding, no export).
 *
 * `--encode`: the protobuf encoding alone, ns per span: a request's spans (as the calls below make
 * them) written again and again by otlp-proto.ts's serializeSpans, 128 to a batch (no export).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { AddressInfo } from 'node:net';
import { PerformanceObserver } from 'node:perf_hooks';
import type { FastifyRequest } from 'fastify';
import type { PolicyEffect } from '../policies/registry.js';
import type { ChatCall } from '../server/chat/context.js';
import { newTrace } from '../server/chat/trace.js';
import type { startTracing as StartTracing } from '../server/tracing/index.js';
import { tracingSettings } from '../server/tracing/settings.js';
import type { UpstreamResponse } from '../server/upstream.js';

const args = new Map(
  process.argv.slice(2).map((a) => {
    const [k, v] = a.replace(/^--/, '').split('=');
    return [k!, v ?? ''];
  }),
);
const REQUESTS = Number(args.get('requests') || 20_000);
// Requests between two flushes (256: a request's two spans fill the SDK's default 512-span batch;
// with OTEL_BSP_MAX_EXPORT_BATCH_SIZE set, its half).
const FLUSH_EVERY = Number(
  args.get('flush-every') || Number(process.env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE || 512) / 2,
);
const ROUNDS = Number(args.get('rounds') || 5);

// The OTLP sink drains each export: in this process (its CPU counted with the layer's), or, with
// --sink-process, in a child process of its own, as the whole-server benches have it (the layer's
// figure is then what toolproof's process pays for an export: the POST sent, not received).
const sink = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.end('{}'));
});
let sinkOrigin: string;
let sinkChild: ChildProcess | undefined;
if (args.has('sink-process')) {
  sinkChild = spawn(
    process.execPath,
    [
      '-e',
      "const s=require('node:http').createServer((q,r)=>{q.resume();q.on('end',()=>r.end('{}'))});s.listen(0,'127.0.0.1',()=>process.stdout.write(String(s.address().port)+'\\n'))",
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const port = await new Promise<string>((r) =>
    sinkChild!.stdout!.once('data', (d: Buffer) => r(d.toString().trim())),
  );
  sinkOrigin = `http://127.0.0.1:${port}`;
} else {
  await new Promise<void>((r) => sink.listen(0, '127.0.0.1', r));
  sinkOrigin = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;
}
const settings = tracingSettings({
  OTEL_EXPORTER_OTLP_ENDPOINT: sinkOrigin,
  OTEL_EXPORTER_OTLP_PROTOCOL: args.get('protocol') || 'http/protobuf',
  OTEL_TRACES_SAMPLER: args.get('sampler') || 'parentbased_always_on',
});
// --impl=DIR: another copy of server/tracing/ (e.g. one saved before a change, under bench/results/),
// so that before and after run alternately on the same machine.
const impl = args.get('impl');
// --ab=DIR: this copy and DIR's both, in the same process, their rounds alternating (the fairest
// A/B on a loaded machine: the same moments, the same heap); each prints its own line and the
// median of the per-round ratios (DIR / this).
const ab = args.get('ab');
interface Side {
  label: string;
  dir: string;
  tracing: Awaited<ReturnType<typeof StartTracing>> & object;
}
const sides: Side[] = [];
for (const dir of ab ? [impl, ab] : [impl]) {
  const base = dir ? resolve(dir) : resolve(import.meta.dirname, '../server/tracing');
  const { startTracing } = (await import(pathToFileURL(resolve(base, 'index.ts')).href)) as {
    startTracing: typeof StartTracing;
  };
  sides.push({ label: dir ?? 'server/tracing', dir: base, tracing: (await startTracing(settings))! });
}
let tracing = sides[0]!.tracing;

const request = {
  id: 'b0d2c5a8-6f1e-4d5b-9c1a-2e3f4a5b6c7d',
  method: 'POST',
  url: '/v1/chat/completions',
  headers: {
    'content-type': 'application/json',
    'user-agent': 'claude-cli/2.0.0 (external, cli)',
    traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
  },
} as unknown as FastifyRequest;
const original = {
  model: 'qwen3-coder',
  messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
  tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }],
  stream: true,
  temperature: 0.2,
};
const effects = [
  { policy: 'force-tool-use', kind: 'forced', toolChoice: 'required' },
  { policy: 'final-answer', kind: 'final-answer' },
] as unknown as PolicyEffect[];
const response = { status: 200, headers: {}, upstream: 'gpu:8000' } as unknown as UpstreamResponse;
const usage = { prompt_tokens: 1200, completion_tokens: 480, total_tokens: 1680 };

function closeSink(): void {
  if (sinkChild) sinkChild.kill();
  else sink.close();
}

let served = 0;
const requestIds = Array.from(
  { length: 1024 },
  (_, i) => `b0d2c5a8-6f1e-4d5b-9c1a-${String(i).padStart(12, '0')}`,
);
const responseIds = Array.from({ length: 1024 }, (_, i) => `chatcmpl-${i}`);

function oneRequest(): void {
  // Each request its own request id and response id, as in a server (made beforehand: their
  // strings are not the layer's cost).
  served = (served + 1) & 1023;
  (request as { id: string }).id = requestIds[served]!;
  const span = tracing.startRequest(request, '/v1/chat/completions')!;
  const call = {
    original,
    api: 'chat',
    route: {
      name: 'qwen3-coder',
      upstreamModel: undefined,
      client: { label: 'gpu:8000', origin: 'http://gpu:8000' },
    },
    forwardHeaders: {
      'x-request-id': request.id,
      traceparent: request.headers.traceparent,
      'content-type': 'application/json',
    },
    trace: newTrace(),
    streamIdentity: { id: responseIds[served]!, model: 'qwen3-coder', created: 1 },
    discardedTokens: 0,
    usage,
  } as unknown as ChatCall;
  span.chat(call, request.headers, original);
  call.trace.attempts = 1;
  span.attempt(call, original as never, call.forwardHeaders);
  span.attemptOpened(response);
  span.finishReason('tool_calls');
  span.effects(effects, 1);
  span.attemptRead({ kind: 'streamed', usage });
  call.trace.forced = true;
  call.trace.finalKind = 'final_answer';
  span.end(request, 200, true, true);
}

for (const side of sides) {
  tracing = side.tracing;
  for (let i = 0; i < 5_000; i++) {
    oneRequest();
    if (i % 256 === 255) await tracing.flush();
  }
}
tracing = sides[0]!.tracing;

/** Each side's median, and the median of the per-round ratios of the second to the first. */
function report(what: string, unit: string, digits: number, rounds: number[][], extra: string[] = []): void {
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  for (const [k, side] of sides.entries())
    console.log(
      `${side.label}: ${what}: ${median(rounds[k]!).toFixed(digits)} ${unit}${extra[k] ?? ''} (median of ${ROUNDS}; rounds ${rounds[k]!.map((x) => x.toFixed(digits)).join(' ')})`,
    );
  if (sides.length === 2)
    console.log(
      `${sides[1]!.label} / ${sides[0]!.label}: ${median(rounds[1]!.map((x, r) => x / rounds[0]![r]!)).toFixed(3)}x (median of the per-round ratios)`,
    );
}

if (args.has('encode')) {
  const captured: { serializeSpans: (spans: never) => Uint8Array; spans: unknown[] }[] = [];
  for (const side of sides) {
    tracing = side.tracing;
    const { LeanSpan } = (await import(
      pathToFileURL(resolve(side.dir, 'lean.ts')).href
    )) as typeof import('../server/tracing/lean.js');
    const { serializeSpans } = (await import(
      pathToFileURL(resolve(side.dir, 'otlp-proto.ts')).href
    )) as typeof import('../server/tracing/otlp-proto.js');
    const spans: InstanceType<typeof LeanSpan>[] = [];
    const end = LeanSpan.prototype.end;
    LeanSpan.prototype.end = function (this: InstanceType<typeof LeanSpan>) {
      if (!this.ended && this.recording) spans.push(this);
      end.call(this);
    };
    for (let i = 0; i < 64; i++) oneRequest();
    LeanSpan.prototype.end = end;
    if (args.has('dump'))
      for (const s of spans.slice(0, 2))
        console.log(
          s.name,
          JSON.stringify(s.attrs?.slice(0, 2 * s.attributeCount)),
          JSON.stringify(s.leanEvents),
        );
    await tracing.flush();
    captured.push({ serializeSpans: serializeSpans as never, spans });
  }
  const perSpan: number[][] = sides.map(() => []);
  const bytes: number[] = sides.map(() => 0);
  for (let r = 0; r < ROUNDS; r++)
    captured.forEach(({ serializeSpans, spans }, k) => {
      // CPU time, not the wall clock: on a loaded machine the thread waits for a core between
      // batches, and the wall clock counts the wait.
      const t0 = process.cpuUsage();
      const batches = Math.ceil(REQUESTS / 32);
      for (let i = 0; i < batches; i++) bytes[k] = serializeSpans(spans as never).length;
      const d = process.cpuUsage(t0);
      perSpan[k]!.push(((d.user + d.system) * 1000) / (batches * spans.length));
    });
  report(
    'protobuf encoding alone',
    'ns per span',
    0,
    perSpan,
    bytes.map((b, k) => `, ${(b / captured[k]!.spans.length).toFixed(0)} bytes per span`),
  );
  for (const side of sides) await side.tracing.shutdown();
  closeSink();
  process.exit(0);
}
if (args.has('alloc')) {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc)
    throw new Error('--alloc needs node --expose-gc --max-semi-space-size=256 --min-semi-space-size=256');
  let gcs = 0;
  new PerformanceObserver((l) => {
    gcs += l.getEntries().length;
  }).observe({ entryTypes: ['gc'] });
  const N = 2048;
  for (const side of sides) {
    tracing = side.tracing;
    const bytes: number[] = [];
    for (let r = 0; r < 3; r++) {
      await tracing.flush();
      gc();
      await new Promise((r) => setTimeout(r, 20)); // the GC just forced is reported now, not counted
      gcs = 0;
      const h0 = process.memoryUsage().heapUsed;
      for (let i = 0; i < N; i++) {
        oneRequest();
        if (i % 256 === 255) await tracing.flush();
      }
      await tracing.flush();
      const h1 = process.memoryUsage().heapUsed;
      if (gcs === 0) bytes.push((h1 - h0) / N);
    }
    if (bytes.length === 0)
      throw new Error('a GC ran in every round: give node a larger --max-semi-space-size');
    console.log(
      `${side.label}: tracing, ${settings!.protocol}, sampler ${settings!.sampler.name}: ${Math.min(...bytes).toFixed(0)} bytes allocated per request (rounds without a GC: ${bytes.map((b) => b.toFixed(0)).join(' ')})`,
    );
  }
  for (const side of sides) await side.tracing.shutdown();
  closeSink();
  process.exit(0);
}
/** --start: a request's two spans started, nothing else. */
function startOnly(): void {
  served = (served + 1) & 1023;
  const span = tracing.startRequest(request, '/v1/chat/completions')!;
  const call = {
    original,
    route: {
      name: 'qwen3-coder',
      upstreamModel: undefined,
      client: { label: 'gpu:8000', origin: 'http://gpu:8000' },
    },
    trace: newTrace(),
  } as unknown as ChatCall;
  span.attempt(call, original as never, forwardHeaders);
}
const forwardHeaders = { 'x-request-id': request.id, 'content-type': 'application/json' };
const START = args.has('start');
const perRequest: number[][] = sides.map(() => []);
for (let r = 0; r < ROUNDS; r++)
  // The order turns every round (ABBA...): the side that runs first in a round measured ~15%
  // slower than the second in an A/A run (the other side's garbage and exports spill over).
  for (const k of sides.map((_, i) => (i + r) % sides.length)) {
    const side = sides[k]!;
    tracing = side.tracing;
    await tracing.flush();
    const t0 = process.cpuUsage();
    if (START) for (let i = 0; i < REQUESTS; i++) startOnly();
    else {
      for (let i = 0; i < REQUESTS; i++) {
        oneRequest();
        if (i % FLUSH_EVERY === FLUSH_EVERY - 1) await tracing.flush();
      }
      await tracing.flush();
    }
    const d = process.cpuUsage(t0);
    perRequest[k]!.push((d.user + d.system) / REQUESTS);
  }
report(
  `${START ? 'spans started' : 'tracing'}, ${settings!.protocol}, sampler ${settings!.sampler.name}`,
  `µs of CPU per request (x ${REQUESTS})`,
  1,
  perRequest,
);
for (const side of sides) await side.tracing.shutdown();
closeSink();
