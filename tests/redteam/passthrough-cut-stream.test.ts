/**
 * A pass-through answer whose body the upstream cuts once its status and first bytes are out (a
 * chunked body, an event stream: a backend restarted mid-answer), and the pass-through's upstream
 * failures in the metrics.
 *
 * Before: an event stream's last event came, then the connection closed, which an SSE client reads
 * as the stream's end (the answer silently short); any cut counted as the client leaving
 * (toolproof_client_aborts_total{stage="mid_response"}), and no upstream failure of the
 * pass-through (a 5xx, a 4xx, a cut, a backend unreachable) was counted in
 * toolproof_upstream_errors_total. Now a cut event stream ends with the OpenAI error event and
 * [DONE] (as the relays end theirs), another body with its chunked encoding unterminated (HTTP's
 * one way to say a body of unknown length is not whole), and each failure is counted by kind.
 */
import type { ServerResponse } from 'node:http';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf } from '../support/harness.js';

type Write = (res: ServerResponse) => void;
let write: Write = () => undefined;
const pair = proxyInFrontOf((_req, res) => write(res));

/** The headers, then `first`, then the socket destroyed. */
const cutAfter =
  (type: string, first: string): Write =>
  (res) => {
    res.writeHead(200, { 'content-type': type });
    res.write(first, () => setTimeout(() => res.socket?.destroy(), 30));
  };

const BODY = JSON.stringify({ model: 'm1', query: 'q', documents: ['a'] });

/** The client's bytes as they came on the wire, up to the connection's close. */
function onTheWire(path: string): Promise<string> {
  const { hostname, port } = new URL(pair.proxy.origin);
  return new Promise((resolve) => {
    let out = '';
    const socket = net.connect(Number(port), hostname, () =>
      socket.write(
        `POST ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${BODY.length}\r\n\r\n${BODY}`,
      ),
    );
    socket.on('data', (d) => {
      out += d.toString('latin1');
    });
    socket.on('close', () => resolve(out));
    socket.on('error', () => undefined);
  });
}

/** A counter's value summed over its series of `label`. */
async function counter(name: string, label: string): Promise<number> {
  const text = await (await fetch(`${pair.proxy.origin}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) && l.includes(label))
    .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}
const upstreamErrors = (kind: string) => counter('toolproof_upstream_errors_total', `kind="${kind}"`);
const clientAborts = () => counter('toolproof_client_aborts_total', 'api="passthrough"');

/** Metrics are written when the response closes: after the client read its end. */
const settled = () => new Promise((r) => setTimeout(r, 100));

describe('a pass-through answer cut after its status', () => {
  it('an event stream ends with the error event and [DONE]: counted mid_stream, not a client abort', async () => {
    const before = { cut: await upstreamErrors('mid_stream'), aborts: await clientAborts() };
    write = cutAfter('text/event-stream', 'data: {"a":1}\n\n');
    const res = await fetch(`${pair.proxy.origin}/v1/rerank`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: BODY,
      signal: AbortSignal.timeout(10_000),
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text.startsWith('data: {"a":1}\n\n')).toBe(true);
    const events = text.split('\n\n').filter((e) => e.startsWith('data: '));
    expect(events.at(-1)).toBe('data: [DONE]');
    const error = JSON.parse(events.at(-2)!.slice(6)) as { error: { code: string; message: string } };
    expect(error.error.code).toBe('TP_ERR_UPSTREAM_CUT_OFF');
    expect(error.error.message).toContain('closed the stream before it ended');
    await settled();
    expect(await upstreamErrors('mid_stream')).toBe(before.cut + 1);
    expect(await clientAborts()).toBe(before.aborts);
  });

  it('a chunked body ends unterminated (no last chunk): counted cut_off, not a client abort', async () => {
    const before = { cut: await upstreamErrors('cut_off'), aborts: await clientAborts() };
    write = cutAfter('application/json', '{"results":[1,2,');
    const wire = await onTheWire('/v1/rerank');
    expect(wire).toMatch(/^HTTP\/1\.1 200 /);
    expect(wire).toMatch(/transfer-encoding: chunked/i);
    expect(wire).toContain('{"results":[1,2,');
    expect(wire.endsWith('0\r\n\r\n')).toBe(false);
    await settled();
    expect(await upstreamErrors('cut_off')).toBe(before.cut + 1);
    expect(await clientAborts()).toBe(before.aborts);
  });
});

describe('a pass-through answer the client leaves', () => {
  it.each(['text/event-stream', 'application/octet-stream'])(
    '%s: a client abort, no upstream failure',
    async (type) => {
      const before = {
        errors: await counter('toolproof_upstream_errors_total', 'kind='),
        aborts: await clientAborts(),
      };
      write = (res) => {
        res.writeHead(200, { 'content-type': type });
        const ticks = setInterval(() => res.write('data: {"a":1}\n\n'), 10);
        res.on('close', () => clearInterval(ticks));
      };
      const leave = new AbortController();
      const res = await fetch(`${pair.proxy.origin}/v1/rerank`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: BODY,
        signal: leave.signal,
      });
      await res.body!.getReader().read();
      leave.abort();
      await settled();
      await settled();
      expect(await counter('toolproof_upstream_errors_total', 'kind=')).toBe(before.errors);
      expect(await clientAborts()).toBe(before.aborts + 1);
    },
  );
});

describe("the pass-through's upstream failures", () => {
  const post = () =>
    fetch(`${pair.proxy.origin}/v1/rerank`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: BODY,
    });

  it.each([
    [503, 'status_5xx'],
    [404, 'status_4xx'],
  ])('an upstream %i is relayed and counted %s', async (status, kind) => {
    const before = await upstreamErrors(kind);
    write = (res) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end('{"error":"no"}');
    };
    const res = await post();
    expect(res.status).toBe(status);
    expect(await res.text()).toBe('{"error":"no"}');
    expect(await upstreamErrors(kind)).toBe(before + 1);
  });

  it('an upstream that closes before its headers is a 502, counted unreachable', async () => {
    const before = await upstreamErrors('unreachable');
    write = (res) => res.socket?.destroy();
    const res = await post();
    expect(res.status).toBe(502);
    expect(await upstreamErrors('unreachable')).toBe(before + 1);
  });

  it('a declared-length body cut is a 502, counted cut_off', async () => {
    const before = await upstreamErrors('cut_off');
    write = (res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '4000' });
      res.write(Buffer.alloc(1000, 0x20), () => setTimeout(() => res.socket?.destroy(), 20));
    };
    const res = await post();
    expect(res.status).toBe(502);
    expect(await upstreamErrors('cut_off')).toBe(before + 1);
  });
});
