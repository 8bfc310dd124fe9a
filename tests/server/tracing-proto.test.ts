/**
 * server/tracing/otlp-proto.ts: toolproof's one-pass OTLP protobuf serializer writes exactly the
 * bytes of the library's (@opentelemetry/otlp-transformer's ProtobufTraceSerializer) for the same
 * SDK spans: the spans a request makes, and the edge cases of the wire format (multi-byte lengths
 * past 127 and 16,383 bytes, non-ASCII text, negative and 64-bit integers, doubles, arrays,
 * byte values, links, trace state, remote parents, several resources and scopes). And through the
 * exporter: a real OTLP/HTTP POST carries those bytes, with the protobuf content type.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Context, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, TraceFlags } from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { keptAttributeKeys, protobufSpanExporter, serializeSpans } from '../../server/tracing/otlp-proto.js';

function provider(service: string, exporter: InMemorySpanExporter): BasicTracerProvider {
  return new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': service, 'process.pid': 4242 }),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
}

const remote: Context = trace.setSpanContext(ROOT_CONTEXT, {
  traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
  spanId: '00f067aa0ba902b7',
  traceFlags: TraceFlags.SAMPLED,
  isRemote: true,
  traceState: new TraceState('vendor=1,other=abc'),
});

/** Spans shaped like toolproof's (a server span, an attempt under it) plus the odd ones. */
function makeSpans(): ReadableSpan[] {
  const exporter = new InMemorySpanExporter();
  const a = provider('toolproof', exporter);
  const tracer = a.getTracer('toolproof');
  const server = tracer.startSpan('POST /v1/chat/completions', { kind: SpanKind.SERVER }, remote);
  server.setAttribute('gen_ai.operation.name', 'chat');
  server.setAttribute('gen_ai.request.model', 'qwen3-coder');
  server.setAttribute('gen_ai.request.temperature', 0.2);
  server.setAttribute('gen_ai.usage.input_tokens', 1200);
  server.setAttribute('gen_ai.request.stream', true);
  server.setAttribute('user_agent.original', 'claude-cli/2.0.0 (external, cli) — ünïcødé 🚀');
  server.addEvent('toolproof.forced', { 'toolproof.policy': 'force-tool-use', 'toolproof.attempt': 1 });
  server.addEvent('toolproof.leak', { 'toolproof.leak.format': 'hermes', 'toolproof.reasons': ['a', 'b'] });
  const attempt = tracer.startSpan(
    'chat qwen3-coder',
    { kind: SpanKind.CLIENT },
    trace.setSpan(ROOT_CONTEXT, server),
  );
  attempt.setAttribute('gen_ai.response.finish_reasons', ['tool_calls', 'stop']);
  attempt.setAttribute('server.port', 8000);
  attempt.setAttribute('toolproof.upstream.headers_ms', 12.5);
  attempt.setAttribute('neg', -5);
  attempt.setAttribute('big', 2 ** 40 + 3);
  attempt.setAttribute('negbig', -(2 ** 40) - 7);
  attempt.setAttribute('nums', [1, -2, 3.5]);
  attempt.setAttribute('bools', [true, false]);
  attempt.setAttribute('empty', '');
  attempt.setAttribute('ascii127', 'a'.repeat(127)); // the longest 1-byte length
  attempt.setAttribute('ascii128', 'a'.repeat(128));
  attempt.setAttribute('late-non-ascii', `${'a'.repeat(100)}€`); // 102 chars, 103 bytes
  attempt.setAttribute('non-ascii-past-127', `${'a'.repeat(120)}ééééé`); // 125 chars, 130 bytes
  attempt.setAttribute('medium', 'm'.repeat(300)); // a 2-byte length
  attempt.setAttribute('long', 'é'.repeat(20_000)); // a 3-byte length (40,000 bytes)
  attempt.setStatus({ code: SpanStatusCode.ERROR, message: 'upstream said 500 ✗' });
  attempt.end();
  server.end();
  // An internal span with links, no kind given, and a span of another tracer and another resource.
  const other = tracer.startSpan('linked', {
    links: [
      { context: server.spanContext(), attributes: { why: 'retry' } },
      { context: trace.getSpanContext(remote)! },
    ],
  });
  other.setStatus({ code: SpanStatusCode.OK });
  other.end();
  a.getTracer('second-scope', '1.2.3').startSpan('scoped').end();
  const b = provider('other-service', exporter);
  b.getTracer('b').startSpan('elsewhere').end();
  return exporter.getFinishedSpans();
}

describe('the OTLP protobuf serializer', () => {
  it('writes the same bytes as the library for the same spans', () => {
    const spans = makeSpans();
    expect(spans.length).toBe(5);
    const ours = serializeSpans(spans);
    const theirs = ProtobufTraceSerializer.serializeRequest(spans)!;
    expect(Buffer.from(ours).equals(Buffer.from(theirs))).toBe(true);
  });

  it('the same bytes for a batch of 512 spans (lengths past 2^14 and 2^21), and again on reuse', () => {
    const spans: ReadableSpan[] = [];
    while (spans.length < 512) spans.push(...makeSpans());
    const theirs = Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!);
    expect(theirs.length).toBeGreaterThan(2 ** 21);
    const first = serializeSpans(spans);
    const small = serializeSpans(spans.slice(0, 2));
    const second = serializeSpans(spans);
    expect(Buffer.from(first).equals(theirs)).toBe(true);
    expect(Buffer.from(second).equals(theirs)).toBe(true);
    // Each export owns its bytes: a later export does not overwrite an earlier one.
    expect(
      Buffer.from(small).equals(Buffer.from(ProtobufTraceSerializer.serializeRequest(spans.slice(0, 2))!)),
    ).toBe(true);
    expect(serializeSpans([]).length).toBe(0);
  });

  it('the same bytes where attribute values repeat, change, and a key serves spans and events', () => {
    // The serializer copies an attribute's last bytes when its value repeats: every way a value
    // can look the same and not be (a changed array item, -0, NaN, a key turned volatile, the same
    // key as a span's and as an event's attribute) must still write the library's bytes.
    const exporter = new InMemorySpanExporter();
    const tracer = provider('toolproof', exporter).getTracer('toolproof');
    const values: unknown[] = [
      'chat',
      'chat',
      'other',
      'chat',
      1,
      1.5,
      0,
      -0,
      Number.NaN,
      Number.NaN,
      true,
      false,
      ['a', 'b'],
      ['a', 'b'],
      ['a', 'c'],
      ['a', 'c', 'd'],
      [1, 2],
      [1, 2],
      'é',
      'é',
      'x'.repeat(200),
      'x'.repeat(200),
    ];
    for (let i = 0; i < values.length; i++) {
      const span = tracer.startSpan(`s${i}`);
      span.setAttribute('repeat.value', values[i] as string);
      span.setAttribute('repeat.same', 'always');
      span.setAttribute('repeat.id', `id-${i % 20 < 15 ? i : 0}`); // changes past the limit, then repeats
      span.addEvent('e', {
        'repeat.value': values[(i + 1) % values.length] as string,
        'repeat.same': 'always',
      });
      span.end();
    }
    const spans = exporter.getFinishedSpans();
    for (let round = 0; round < 2; round++) {
      const ours = Buffer.from(serializeSpans(spans));
      expect(ours.equals(Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!))).toBe(true);
    }
    for (const span of spans) {
      const one = Buffer.from(serializeSpans([span]));
      expect(one.equals(Buffer.from(ProtobufTraceSerializer.serializeRequest([span])!))).toBe(true);
    }
  });

  it('keeps no content of the opt-in between spans, however short (only the bytes of repeating metadata)', () => {
    const exporter = new InMemorySpanExporter();
    const tracer = provider('toolproof', exporter).getTracer('toolproof');
    for (let i = 0; i < 4; i++) {
      const span = tracer.startSpan('chat');
      span.setAttribute('gen_ai.operation.name', 'chat');
      span.setAttribute(
        'gen_ai.input.messages',
        '[{"role":"user","parts":[{"type":"text","content":"hi"}]}]',
      );
      span.setAttribute('gen_ai.output.messages', '[]');
      span.setAttribute('gen_ai.system_instructions', '[]');
      span.end();
    }
    serializeSpans(exporter.getFinishedSpans());
    const kept = keptAttributeKeys();
    expect(kept).toContain('gen_ai.operation.name');
    for (const content of ['gen_ai.input.messages', 'gen_ai.output.messages', 'gen_ai.system_instructions'])
      expect(kept).not.toContain(content);
  });

  it('is posted by the exporter as OTLP/HTTP protobuf', async () => {
    const bodies: Array<{ type: string | undefined; bytes: Buffer }> = [];
    const sink = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        bodies.push({ type: req.headers['content-type'], bytes: Buffer.concat(chunks) });
        res.end();
      });
    });
    await new Promise<void>((r) => sink.listen(0, '127.0.0.1', r));
    try {
      const exporter = protobufSpanExporter(
        `http://127.0.0.1:${(sink.address() as AddressInfo).port}/v1/traces`,
      );
      const spans = makeSpans();
      const result = await new Promise<{ code: number }>((r) => exporter.export(spans, r));
      expect(result.code).toBe(0);
      await exporter.shutdown();
      expect(bodies).toHaveLength(1);
      expect(bodies[0]!.type).toBe('application/x-protobuf');
      expect(bodies[0]!.bytes.equals(Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!))).toBe(
        true,
      );
    } finally {
      sink.close();
    }
  });
});
