/**
 * What tracing costs per request, alone: the tracing layer (server/tracing/) driven through one
 * request's calls (server span, chat attributes, one attempt with its traceparent, its response,
 * two harness events, the end), with a real OTLP exporter posting to a loopback sink that drains
 * each POST; CPU per request from process.cpuUsage over many requests (export included: a flush
 * every 256 requests, so no span is dropped). Without sockets, parsing or policies around it, the
 * figure is steadier than an A/B of the whole server on a shared machine.
 *
 * `npx tsx bench/tracing-cost.ts [--requests=20000] [--rounds=5] [--protocol=http/protobuf] [--sampler=always_on] [--impl=DIR]`
 *
 * `--alloc`: heap bytes allocated per request instead (exports included), a figure that does not
 * move with the machine's load: needs `node --expose-gc --max-semi-space-size=256 --min-semi-space-size=256
 * --import tsx bench/tracing-cost.ts --alloc` (a young generation large enough that no GC runs while counting).
 *
 * `--encode`: the protobuf encoding alone, ns per span: a request's spans (as the calls below make
 * them) written again and again by otlp-proto.ts's serializeSpans, 128 to a batch (no export).
 */
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
const ROUNDS = Number(args.get('rounds') || 5);

const sink = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.end('{}'));
});
await new Promise<void>((r) => sink.listen(0, '127.0.0.1', r));
const settings = tracingSettings({
  OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(sink.address() as AddressInfo).port}`,
  OTEL_EXPORTER_OTLP_PROTOCOL: args.get('protocol') || 'http/protobuf',
  OTEL_TRACES_SAMPLER: args.get('sampler') || 'parentbased_always_on',
});
// --impl=DIR: another copy of server/tracing/ (e.g. one saved before a change, under bench/results/),
// so that before and after run alternately on the same machine.
const impl = args.get('impl');
const { startTracing } = (await import(
  impl ? pathToFileURL(resolve(impl, 'index.ts')).href : '../server/tracing/index.js'
)) as { startTracing: typeof StartTracing };
const tracing = (await startTracing(settings))!;

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
  span.chat(call);
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

for (let i = 0; i < 5_000; i++) {
  oneRequest();
  if (i % 256 === 255) await tracing.flush();
}
if (args.has('encode')) {
  const base = impl ? resolve(impl) : resolve(import.meta.dirname, '../server/tracing');
  const { LeanSpan } = (await import(
    pathToFileURL(resolve(base, 'lean.ts')).href
  )) as typeof import('../server/tracing/lean.js');
  const { serializeSpans } = (await import(
    pathToFileURL(resolve(base, 'otlp-proto.ts')).href
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
  const perSpan: number[] = [];
  let bytes = 0;
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = process.hrtime.bigint();
    const batches = Math.ceil(REQUESTS / 32);
    for (let i = 0; i < batches; i++) bytes = serializeSpans(spans as never).length;
    perSpan.push(Number(process.hrtime.bigint() - t0) / (batches * spans.length));
  }
  const sorted = [...perSpan].sort((a, b) => a - b);
  console.log(
    `tracing, protobuf encoding alone: ${sorted[Math.floor(sorted.length / 2)]!.toFixed(0)} ns per span, ${(bytes / spans.length).toFixed(0)} bytes per span (median of ${ROUNDS}; rounds ${perSpan.map((x) => x.toFixed(0)).join(' ')})`,
  );
  await tracing.shutdown();
  sink.close();
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
    `tracing, ${settings!.protocol}, sampler ${settings!.sampler.name}: ${Math.min(...bytes).toFixed(0)} bytes allocated per request (rounds without a GC: ${bytes.map((b) => b.toFixed(0)).join(' ')})`,
  );
  await tracing.shutdown();
  sink.close();
  process.exit(0);
}
const perRequest: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  await tracing.flush();
  const t0 = process.cpuUsage();
  for (let i = 0; i < REQUESTS; i++) {
    oneRequest();
    if (i % 256 === 255) await tracing.flush();
  }
  await tracing.flush();
  const d = process.cpuUsage(t0);
  perRequest.push((d.user + d.system) / REQUESTS);
}
const sorted = [...perRequest].sort((a, b) => a - b);
console.log(
  `tracing, ${settings!.protocol}, sampler ${settings!.sampler.name}: ${sorted[Math.floor(sorted.length / 2)]!.toFixed(1)} µs of CPU per request (median of ${ROUNDS} x ${REQUESTS}; rounds ${perRequest.map((x) => x.toFixed(1)).join(' ')})`,
);
await tracing.shutdown();
sink.close();
