/**
 * Tracing (docs/tracing.md) against what a misbehaving upstream, client or collector does,
 * through the real server on loopback exporting to a loopback OTLP/HTTP receiver: an upstream
 * that repeats finish_reason on every chunk (or sends one that is not a string), hostile
 * traceparent/tracestate/baggage headers, and a collector that is down when the server shuts
 * down. Each ends in a bounded span, a served request and a clean shutdown.
 */
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import {
  chunkEvent,
  fakeUpstream,
  type FakeUpstream,
  startProxy,
  sendCompletion,
} from '../support/harness.js';
import { otlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';
import type { RunningProxy } from '../support/harness.js';
import { freePort } from '../support/toolproof-process.js';

let receiver: OtlpReceiver | undefined;
let upstream: FakeUpstream | undefined;
let proxy: RunningProxy | undefined;
afterEach(async () => {
  await proxy?.close();
  await receiver?.close();
  await upstream?.close();
  proxy = receiver = upstream = undefined;
});

const otelEnv = (r: OtlpReceiver) => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: r.origin,
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
});

/** Flushes until the spans of the request `id` (its server span and its children) arrived. */
async function spansOf(p: RunningProxy, r: OtlpReceiver, id: string): Promise<ReceivedSpan[]> {
  const server = () => r.spans.find((s) => s.kind === 2 && s.attributes['toolproof.request_id'] === id);
  for (let i = 0; i < 100 && !server(); i++) {
    await p.app.toolproof.tracing!.flush();
    if (!server()) await new Promise((ok) => setTimeout(ok, 20));
  }
  const s = server();
  if (!s) throw new Error(`no server span for ${id}`);
  return [s, ...r.spans.filter((x) => x.parentSpanId === s.spanId)];
}

const post = (p: RunningProxy, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${p.origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

describe('an upstream that repeats finish_reason', () => {
  it('on each of 20,000 chunks (and once as an object): the attempt span keeps a few, as strings', async () => {
    upstream = await fakeUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let body = chunkEvent({ role: 'assistant', content: '' });
      for (let i = 0; i < 20_000; i++) body += chunkEvent({ content: 'a' }, 'stop');
      body += chunkEvent({}, { nested: 'object' } as unknown as string);
      res.end(`${body}data: [DONE]\n\n`);
    });
    receiver = await otlpReceiver();
    proxy = await startProxy({ TOOLPROOF_UPSTREAM_URL: upstream.url, ...otelEnv(receiver) });
    const res = await post(
      proxy,
      // With a tool: the stream is read chunk by chunk (a request without one is relayed).
      {
        model: 'm1',
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
        tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
        tool_choice: 'auto',
      },
      { 'x-request-id': 'many-finish' },
    );
    expect(res.status).toBe(200);
    await res.text();
    const [, ...attempts] = await spansOf(proxy, receiver, 'many-finish');
    expect(attempts).toHaveLength(1);
    const reasons = attempts[0]!.attributes['gen_ai.response.finish_reasons'] as unknown[];
    // One per chunk was 20,001 values (an attribute of ~200 KB in every export of the span).
    expect(reasons.length).toBeGreaterThan(0);
    expect(reasons.length).toBeLessThanOrEqual(128);
    for (const r of reasons) expect(typeof r).toBe('string');
  });
});

describe('hostile trace context headers', () => {
  const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
  const cases: Array<[string, Record<string, string>, 'continued' | 'root']> = [
    ['a valid traceparent', { traceparent: `00-${TRACE}-00f067aa0ba902b7-01` }, 'continued'],
    [
      'a traceparent of 10 KB',
      { traceparent: `00-${TRACE}-00f067aa0ba902b7-01${'0'.repeat(10_000)}` },
      'root',
    ],
    ['an all-zero trace id', { traceparent: `00-${'0'.repeat(32)}-00f067aa0ba902b7-01` }, 'root'],
    ['version ff', { traceparent: `ff-${TRACE}-00f067aa0ba902b7-01` }, 'root'],
    ['upper-case hex', { traceparent: `00-${TRACE.toUpperCase()}-00F067AA0BA902B7-01` }, 'root'],
    ['a latin-1 byte', { traceparent: `00-${TRACE}-00f067aa0ba902b7-0\u00e9` }, 'root'],
    [
      'a tracestate of 1,000 members and a baggage of 4 KB',
      {
        traceparent: `00-${TRACE}-00f067aa0ba902b7-01`,
        tracestate: Array.from({ length: 1000 }, (_, i) => `k${i}=v${i}`).join(','),
        baggage: `k=${'v'.repeat(4000)}`,
      },
      'continued',
    ],
  ];
  it.each(cases)('%s: served, the span continues a valid context only', async (_name, headers, expected) => {
    upstream = await fakeUpstream((_req, res) => sendCompletion(res, { content: 'ok' }));
    receiver = await otlpReceiver();
    proxy = await startProxy({ TOOLPROOF_UPSTREAM_URL: upstream.url, ...otelEnv(receiver) });
    const res = await post(
      proxy,
      { model: 'm1', messages: [{ role: 'user', content: 'hi' }] },
      { ...headers, 'x-request-id': 'ctx' },
    );
    expect(res.status).toBe(200);
    const [server, attempt] = await spansOf(proxy, receiver, 'ctx');
    if (expected === 'continued') expect(server!.traceId).toBe(TRACE);
    else expect(server!.traceId).not.toBe(TRACE);
    // What went upstream names toolproof's attempt span, and carries no tracestate of 1,000 members.
    const sent = upstream.requests[0]!.headers;
    expect(sent.traceparent).toBe(`00-${server!.traceId}-${attempt!.spanId}-01`);
    expect(String(sent.tracestate ?? '').length).toBeLessThanOrEqual(512);
  });
});

/** The app's log lines, parsed. */
function logLines(): { lines: Array<{ level: number; msg: string }>; log: Writable } {
  const lines: Array<{ level: number; msg: string }> = [];
  const log = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l));
      done();
    },
  });
  return { lines, log };
}

/** Runs `fn` with process.env's `vars` (the exporter and processor read theirs there), restored after. */
async function withEnv<T>(vars: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  Object.assign(process.env, vars);
  try {
    return await fn();
  } finally {
    for (const [k, v] of Object.entries(saved))
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
  }
}

describe('a collector that is down while the server runs', () => {
  it('the spans lost are said in a warning line (at most one a minute), the requests served', async () => {
    const port = await freePort();
    upstream = await fakeUpstream((_req, res) => sendCompletion(res, { content: 'ok' }));
    const { lines, log } = logLines();
    proxy = await withEnv({ OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '300' }, () =>
      startProxy(
        {
          TOOLPROOF_UPSTREAM_URL: upstream!.url,
          // A user and a token in the endpoint: the line names the collector without them.
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://user:secret-pass@127.0.0.1:${port}/v1/traces?token=secret-q`,
        },
        undefined,
        log,
      ),
    );
    for (let i = 0; i < 2; i++) {
      const res = await post(proxy, { model: 'm1', messages: [{ role: 'user', content: 'hi' }] });
      expect(res.status).toBe(200);
      await res.text();
      await proxy.app.toolproof.tracing!.flush().catch(() => undefined);
    }
    const warned = lines.filter((l) => l.level === 40 && l.msg.startsWith('tracing: '));
    // Silent before: the SDK says it only to a diag logger nobody registers.
    expect(warned).toHaveLength(1);
    expect(warned[0]!.msg).toContain(`http://127.0.0.1:${port}/v1/traces`);
    expect(warned[0]!.msg).toMatch(/\d+ spans? in \d+ exports? could not be sent/);
    expect(warned[0]!.msg).not.toMatch(/secret/);
  });
});

describe('a collector that is down when the server shuts down', () => {
  it('app.close() resolves, and one warning line says the spans were not exported', async () => {
    const port = await freePort();
    upstream = await fakeUpstream((_req, res) => sendCompletion(res, { content: 'ok' }));
    const { lines, log } = logLines();
    // The exporter reads its timeout and the processor its delay from process.env: the spans wait
    // in the batch until the shutdown, and each try of the export gives up fast.
    await withEnv(
      { OTEL_BSP_SCHEDULE_DELAY: '600000', OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '300' },
      async () => {
        const p = await startProxy(
          {
            TOOLPROOF_UPSTREAM_URL: upstream!.url,
            OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://127.0.0.1:${port}/v1/traces`,
          },
          undefined,
          log,
        );
        const res = await post(p, { model: 'm1', messages: [{ role: 'user', content: 'hi' }] });
        expect(res.status).toBe(200);
        await res.text();
        // Rejected with the collector's ECONNREFUSED before: main.ts's graceful shutdown then
        // logged 'shutdown failed' and exited 1.
        await expect(p.app.close()).resolves.not.toThrow();
      },
    );
    const warned = lines.filter((l) => l.level === 40 && /tracing: .*could not be exported/.test(l.msg));
    expect(warned).toHaveLength(1);
  });
});
