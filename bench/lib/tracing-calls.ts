/**
 * Tracing's calls timed one by one inside a running server (`bench/tracing-twin.ts --calls`), as
 * bench/lib/capture-calls.ts does for capture: a copy of a build whose tracing functions are
 * wrapped in timers, so what each costs among the server's other work (32 streams in flight:
 * caches cold) is read per call. Figures are inclusive (a wrapper's time holds the wrapped calls
 * it makes): startRequest (the server span's start: traceparent, sampler, ids), chat, attempt
 * (the attempt span's start and its headers), attemptOpened, finishReason, effects, event,
 * attemptRead (the attempt's attributes written, its span ended; since tracecut encoded and
 * handed to the processor in end, before the server span), end (the server span's attributes,
 * its end); inside them LeanTracer.start,
 * LeanSpan.end (encoding and the processor), encodeAtEnd (the encoding alone), processor.onEnd
 * (BatchSpanProcessor's; its flushOneBatch, a batch's export started, inside it or on its timer), and export (the batch's serialization and the POST's synchronous part,
 * outside any request; a request the sampler left out: its UnsampledSpan's calls, by the same
 * names). Samples over 200 µs are left out and counted. The sums are written at the
 * process's exit to `<out>-<pid>.json` (TP_CALLS_OUT). Since trace8 (span-log.ts) a build has no
 * processor or encodeAtEnd on its request path: SpanLog.close (a record closed, and a full batch's
 * encoding and export started inside it) and SpanLog.take (a batch's records encoded) instead.
 */
import { cpSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PRELUDE, wrapExports, wrapMethods } from './capture-calls.js';

/**
 * A timed copy of the build at `buildDir` in `into` (replaced); returns `into`. `label` prefixes
 * its timers' names (two builds in one process: `before:`).
 */
export function timedTracingBuild(buildDir: string, into: string, label = ''): string {
  const TIMED = (name: string, call: string) =>
    `const t0 = __perf.now(); try { return ${call}; } finally { __acc('${label}${name}', t0); }`;
  rmSync(into, { recursive: true, force: true });
  cpSync(buildDir, into, { recursive: true });
  const edit = (rel: string, f: (src: string) => string) => {
    const file = join(into, rel);
    if (!existsSync(file)) throw new Error(`${file}: not in the build`);
    writeFileSync(file, f(readFileSync(file, 'utf8')));
  };
  edit('server/tracing/sdk.js', (s) => {
    const src = s
      .replace('export async function createTracing(', 'async function createTracing__timed(')
      .replace('export function flushSpanEnds(', 'function flushSpanEnds__timed(');
    const methods = [
      'chat',
      'attempt',
      'attemptOpened',
      'finishReason',
      'attemptRead',
      'effects',
      'event',
      'inject',
      'end',
    ];
    // A request the sampler left out (since tracecut): its span of its own, the same calls timed.
    const timed = wrapMethods(`${PRELUDE}\n${src}`, 'ServerSpan', methods, label);
    return `${src.includes('class UnsampledSpan') ? wrapMethods(timed, 'UnsampledSpan', methods, label) : timed}
if (typeof BatchSpanProcessor !== 'undefined') {
{ const f = BatchSpanProcessor.prototype.onEnd; BatchSpanProcessor.prototype.onEnd = function (s) { ${TIMED('processor.onEnd', 'f.call(this, s)')} }; }
{ const f = BatchSpanProcessor.prototype._flushOneBatch; BatchSpanProcessor.prototype._flushOneBatch = function () { ${TIMED('processor.flushOneBatch', 'f.call(this)')} }; }
}
${src.includes('flushSpanEnds__timed') ? `export function flushSpanEnds() { ${TIMED('flushSpanEnds', 'flushSpanEnds__timed()')} }` : ''}
export async function createTracing(a, b) {
  const t = await createTracing__timed(a, b);
  const s = t.startRequest;
  t.startRequest = function (r, route) { ${TIMED('startRequest', 's.call(this, r, route)')} };
  return t;
}
`;
  });
  // Since trace8: spans written into the span log as they end (close: a record's end, and a full
  // batch's export started inside it), and made back into spans a batch at a time (take).
  if (existsSync(join(into, 'server/tracing/span-log.js')))
    edit('server/tracing/span-log.js', (s) =>
      wrapMethods(`${PRELUDE}\n${s}`, 'SpanLog', ['close', 'take'], label),
    );
  edit('server/tracing/lean.js', (s) =>
    wrapMethods(wrapMethods(`${PRELUDE}\n${s}`, 'LeanTracer', ['start'], label), 'LeanSpan', ['end'], label),
  );
  edit('server/tracing/otlp-proto.js', (s) => {
    const src = wrapExports(s, ['encodeAtEnd'], label).replace(
      'export function protobufSpanExporter(',
      'function protobufSpanExporter__timed(',
    );
    return `${src}
export function protobufSpanExporter(url) {
  const e = protobufSpanExporter__timed(url);
  const x = e.export;
  e.export = function (spans, done) { ${TIMED('export', 'x.call(this, spans, done)')} };
  return e;
}
`;
  });
  return into;
}

/**
 * The sums a timed process wrote for the build labelled `label`, µs per traced request (its server
 * spans' end count), by call name (the label taken off).
 */
export function readTracingCalls(
  file: string,
  label = '',
): { perRequest: Map<string, number>; over: Map<string, number> } {
  const o = JSON.parse(readFileSync(file, 'utf8')) as Record<
    string,
    { us: number; calls: number; over200us: number }
  >;
  // Every request's span ends once: a sampled one's ServerSpan, one left out's UnsampledSpan.
  let requests = 0;
  for (const cls of ['ServerSpan', 'UnsampledSpan']) {
    const end = o[`${label}${cls}.end`];
    requests += (end?.calls ?? 0) + (end?.over200us ?? 0);
  }
  const perRequest = new Map<string, number>();
  const over = new Map<string, number>();
  for (const [k, v] of Object.entries(o)) {
    if (!k.startsWith(label) || (label === '' && k.includes(':'))) continue;
    const name = k.slice(label.length);
    perRequest.set(name, requests > 0 ? v.us / requests : 0);
    over.set(name, v.over200us);
  }
  return { perRequest, over };
}
