/**
 * Pooled keep-alive connections the upstream has already closed. A server closes an idle
 * connection on its own timer (uvicorn, hence vLLM: 5 s, and it sends no Keep-Alive header to
 * say so); a request that leaves on that connection as it closes, or after this process stalled
 * past that timer, met a 502. Such a request never reached the server's application: it is sent
 * once more on a fresh connection, for toolproof's own requests and the pass-through's idempotent
 * methods (another route's POST is the client's to retry). The pool's own keep-alive stays below
 * the 5 s servers use, so the race is rare to begin with.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterEach, describe, expect, it } from 'vitest';
import { keepAliveTimeoutMs } from '../../server/upstream-connection.js';
import { type RunningProxy, startProxy } from '../support/harness.js';
import {
  generatingThenResetting,
  type IdleClosingRelay,
  idleClosingRelay,
  listenRaw,
  okResponse,
  type RawUpstream,
  rawUpstream,
  takeRequest,
} from '../support/raw-upstream.js';

let upstream: RawUpstream | undefined;
let proxy: RunningProxy | undefined;
afterEach(async () => {
  await proxy?.close();
  await upstream?.close();
  proxy = undefined;
  upstream = undefined;
});

const chat = { model: 'm1', messages: [{ role: 'user', content: 'hi' }] };

async function post(path: string, body: unknown): Promise<number> {
  return postTo(proxy!, path, body);
}

async function postTo(to: RunningProxy, path: string, body: unknown): Promise<number> {
  const res = await fetch(`${to.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  await res.arrayBuffer();
  return res.status;
}

/** toolproof_upstream_replays_total, summed over its upstream labels. */
async function replays(): Promise<number> {
  const text = await (await fetch(`${proxy!.origin}/metrics`)).text();
  let n = 0;
  for (const m of text.matchAll(/^toolproof_upstream_replays_total\{[^}]*\} (\d+)$/gm)) n += Number(m[1]);
  return n;
}

async function get(path: string): Promise<number> {
  const res = await fetch(`${proxy!.origin}${path}`);
  await res.arrayBuffer();
  return res.status;
}

describe('a pooled connection the upstream had closed', () => {
  it('is replaced: the request is sent once more on a fresh connection (chat, relay, pass-through GET)', async () => {
    // Every connection answers its first request and closes on the next one.
    upstream = await rawUpstream((nth) => nth === 1);
    proxy = await startProxy({ TOOLPROOF_UPSTREAM_URL: upstream.url });
    expect(await post('/v1/chat/completions', chat)).toBe(200);
    expect(await post('/v1/chat/completions', chat)).toBe(200);
    expect(await post('/v1/embeddings', { model: 'm1', input: 'x' })).toBe(200);
    expect(await post('/v1/responses', { model: 'm1', input: 'hi' })).toBe(200);
    expect(await post('/v1/messages', { ...chat, max_tokens: 16 })).toBe(200);
    expect(await get('/v1/files/f1')).toBe(200);
    // One request per fresh connection answered, each reuse met by a close and sent again.
    expect(upstream.seen.filter((s) => s.nth === 1)).toHaveLength(6);
    expect(upstream.seen.filter((s) => s.nth === 2)).toHaveLength(5);
    expect(upstream.connections).toBe(6);
    expect(await replays()).toBe(5);
  });

  it("is not replayed for the pass-through's POST (not idempotent), nor twice in a row, nor on a fresh connection", async () => {
    upstream = await rawUpstream((nth) => nth === 1);
    proxy = await startProxy({ TOOLPROOF_UPSTREAM_URL: upstream.url });
    expect(await post('/v1/chat/completions', chat)).toBe(200);
    const before = upstream.seen.length;
    expect(await post('/v1/rerank', { model: 'm1', query: 'q', documents: ['d'] })).toBe(502);
    expect(upstream.seen.length - before).toBe(1);
    await proxy.close();
    await upstream.close();

    // A server that closes on every request: the fresh connection's failure is final.
    upstream = await rawUpstream(() => false);
    proxy = await startProxy({ TOOLPROOF_UPSTREAM_URL: upstream.url });
    expect(await post('/v1/chat/completions', chat)).toBe(502);
    expect(upstream.seen).toHaveLength(1);
  });

  it('is not replayed when the server had begun to answer (a torn head, then a close)', async () => {
    upstream = await rawUpstream((nth) => nth === 1 || 'HTTP/1.1 200 OK\r\ncontent-');
    proxy = await startProxy({ TOOLPROOF_UPSTREAM_URL: upstream.url });
    expect(await post('/v1/chat/completions', chat)).toBe(200);
    expect(await post('/v1/chat/completions', chat)).toBe(502);
    expect(upstream.seen).toEqual([
      { line: 'POST /v1/chat/completions HTTP/1.1', nth: 1 },
      { line: 'POST /v1/chat/completions HTTP/1.1', nth: 2 },
    ]);
  });

  // These two wait on timers (the server's 40 ms one, 40 times; the pool's own keep-alive, ~4 s),
  // each against an upstream and a proxy of its own: run at once, the shorter wait is free.
  it.concurrent('a server closing idle connections on a short timer (no Keep-Alive header) costs no request', async ({
    expect,
  }) => {
    const IDLE = 40;
    const upstream = await rawUpstream(() => true, IDLE);
    const proxy = await startProxy({ TOOLPROOF_UPSTREAM_URL: upstream.url });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 40; i++) {
        statuses.push(await postTo(proxy, '/v1/chat/completions', chat));
        // Around the server's timer, so that some requests leave as it closes the connection.
        await new Promise((r) => setTimeout(r, IDLE - 3 + (i % 6)));
      }
      expect(statuses.filter((s) => s !== 200)).toEqual([]);
      expect(upstream.closedByServer).toBeGreaterThan(0);
    } finally {
      await proxy.close();
      await upstream.close();
    }
  });

  it.concurrent('the pool closes an idle connection itself before a 5 s server keep-alive (uvicorn) does', async ({
    expect,
  }) => {
    const upstream = await rawUpstream(() => true, 5_000);
    const proxy = await startProxy({ TOOLPROOF_UPSTREAM_URL: upstream.url });
    try {
      expect(await postTo(proxy, '/v1/chat/completions', chat)).toBe(200);
      const started = Date.now();
      while (upstream.closedByClient === 0 && upstream.closedByServer === 0 && Date.now() - started < 6_000)
        await new Promise((r) => setTimeout(r, 50));
      expect(upstream.closedByClient).toBe(1);
      expect(upstream.closedByServer).toBe(0);
    } finally {
      await proxy.close();
      await upstream.close();
    }
  }, 10_000);
});

/**
 * A server that resets a connection as soon as the first bytes of a request arrive on it: the
 * `nth` request of a connection (2: a reused one, as a keep-alive timer firing under a request
 * of a few MB; 1: a fresh one, the server refusing the request), on the first `times` connections.
 * The reset meets the request's body still being written: undici reports the socket's raw
 * ECONNRESET or EPIPE, not its SocketError 'other side closed'.
 */
async function resettingUpstream(nth: number, times = 1): Promise<RawUpstream> {
  let resets = 0;
  return listenRaw((socket, up) => {
    let buf: Buffer = Buffer.alloc(0);
    let count = 0;
    let reading = false;
    socket.on('data', (d: Buffer) => {
      if (!reading) {
        reading = true;
        count++;
        if (count === nth && resets < times) {
          resets++;
          up.closedByServer++;
          up.seen.push({ line: '(reset)', nth: count });
          socket.resetAndDestroy();
          return;
        }
      }
      buf = Buffer.concat([buf, d]);
      const req = takeRequest(buf);
      if (!req) return;
      buf = req.rest;
      reading = false;
      up.seen.push({ line: req.line, nth: count });
      socket.write(okResponse('chatcmpl-rst'));
    });
  });
}

/** A few MB of prompt: the upstream's reset meets its body still being written. */
const bigText = 'lorem ipsum '.repeat(300_000);

async function postFull(path: string, body: unknown): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${proxy!.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

describe('a reused connection reset under a large request', () => {
  const fronts: Array<[string, string, unknown]> = [
    ['chat', '/v1/chat/completions', { model: 'm1', messages: [{ role: 'user', content: bigText }] }],
    ['Responses', '/v1/responses', { model: 'm1', input: bigText }],
    [
      'Messages',
      '/v1/messages',
      { model: 'm1', max_tokens: 16, messages: [{ role: 'user', content: bigText }] },
    ],
    ['the relay', '/v1/embeddings', { model: 'm1', input: bigText }],
  ];
  for (const [name, path, body] of fronts) {
    it(`is sent once more on a fresh connection (${name})`, async () => {
      upstream = await resettingUpstream(2);
      proxy = await startProxy({ TOOLPROOF_UPSTREAM_URL: upstream.url });
      // The first request leaves the connection in the pool; the second meets the reset.
      expect((await postFull('/v1/chat/completions', chat)).status).toBe(200);
      const second = await postFull(path, body);
      expect(second.status).toBe(200);
      expect(upstream.closedByServer).toBe(1);
      expect(upstream.seen.map((s) => `${s.line.split(' ')[0]}${s.nth}`)).toEqual([
        'POST1',
        '(reset)2',
        'POST1',
      ]);
      expect(upstream.connections).toBe(2);
      expect(await replays()).toBe(1);
    }, 30_000);
  }

  it('the pass-through replays an idempotent method (PUT), not a POST', async () => {
    upstream = await resettingUpstream(2, 2);
    proxy = await startProxy({ TOOLPROOF_UPSTREAM_URL: upstream.url });
    expect((await postFull('/v1/chat/completions', chat)).status).toBe(200);
    const put = await fetch(`${proxy.origin}/v1/files/f1`, { method: 'PUT', body: bigText });
    await put.arrayBuffer();
    expect(put.status).toBe(200);
    expect(upstream.connections).toBe(2);
    // The second connection is reused now: its reset under a POST is the client's to retry.
    const before = upstream.seen.length;
    expect((await postFull('/v1/rerank', { model: 'm1', query: bigText, documents: ['d'] })).status).toBe(
      502,
    );
    expect(upstream.seen.slice(before)).toEqual([{ line: '(reset)', nth: 2 }]);
  }, 30_000);

  it('on a fresh connection is the server refusing this request: a 502 in the API shape, not replayed', async () => {
    upstream = await resettingUpstream(1, 5);
    proxy = await startProxy({ TOOLPROOF_UPSTREAM_URL: upstream.url });
    const chatRes = await postFull('/v1/chat/completions', fronts[0]![2]);
    expect(chatRes.status).toBe(502);
    expect(chatRes.json).toMatchObject({
      error: { type: expect.any(String), message: expect.stringContaining('unreachable') },
    });
    expect(upstream.seen).toEqual([{ line: '(reset)', nth: 1 }]);
    const messages = await postFull('/v1/messages', fronts[2]![2]);
    expect(messages.status).toBe(502);
    expect(messages.json).toMatchObject({ type: 'error', error: { type: expect.any(String) } });
    expect(upstream.seen).toEqual([
      { line: '(reset)', nth: 1 },
      { line: '(reset)', nth: 1 },
    ]);
    expect(upstream.connections).toBe(2);
    expect(await replays()).toBe(0);
  }, 30_000);
});

describe('a reused connection reset under a large request, with several replicas', () => {
  const replicas: RawUpstream[] = [];
  afterEach(async () => {
    await Promise.all(replicas.splice(0).map((r) => r.close()));
  });

  for (const affinity of ['on', 'off']) {
    it(`is sent once more on a fresh connection (affinity ${affinity})`, async () => {
      replicas.push(await resettingUpstream(2), await resettingUpstream(2));
      proxy = await startProxy({
        TOOLPROOF_UPSTREAM_URL: replicas.map((r) => r.url).join(','),
        TOOLPROOF_AFFINITY: affinity,
      });
      const big = { model: 'm1', messages: [{ role: 'user', content: bigText }] };
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push((await postFull('/v1/chat/completions', big)).status);
      expect(statuses).toEqual([200, 200, 200, 200, 200]);
      // Each replica that met a second request on a connection reset it once.
      expect(replicas.reduce((n, r) => n + r.closedByServer, 0)).toBeGreaterThan(0);
    }, 30_000);
  }
});

function busyWait(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

/**
 * Stalls this thread, and the toolproof running in it, around the next request toolproof sends
 * to `relay`: from its dispatch until the relay's timer has closed a connection (its thread runs
 * on), then for `afterMs` once the request's last byte was written, so that the close is read
 * that late: a loop that a long synchronous stretch (a loaded box) held past both keep-alive
 * timers, undici's own and the server's, and that stalls again after writing. undici's check of
 * an idle socket before reuse (a turn to the check phase) runs before the next poll, so it does
 * not see the close that arrived during the stretch, as in a real stall.
 */
function stallNextRequest(relay: IdleClosingRelay, afterMs: number): () => void {
  const origin = new URL(relay.url).origin;
  let armed = true;
  let request: unknown;
  const onCreate = (m: unknown) => {
    const r = (m as { request: { origin?: unknown } }).request;
    if (!armed || String(r.origin) !== origin) return;
    armed = false;
    relay.stallUntilClosed(1, 15_000);
    // Past the relay's timer by a margin, on this thread's clock too.
    busyWait(50);
    request = r;
  };
  // Published right before the handler learns that the last byte was written: the stall runs
  // once that call stack is done, before the loop reads the socket again.
  const onSent = (m: unknown) => {
    if ((m as { request: unknown }).request !== request) return;
    request = undefined;
    queueMicrotask(() => busyWait(afterMs));
  };
  subscribe('undici:request:create', onCreate);
  subscribe('undici:request:bodySent', onSent);
  return () => {
    unsubscribe('undici:request:create', onCreate);
    unsubscribe('undici:request:bodySent', onSent);
  };
}

describe('a pooled connection idle past the keep-alive timeout its server announced', () => {
  let relay: IdleClosingRelay | undefined;
  let unstall: (() => void) | undefined;
  afterEach(async () => {
    unstall?.();
    unstall = undefined;
    await relay?.close();
    relay = undefined;
  });

  /** Well past REPLAY_WINDOW_MS (250 ms): the close is read this long after the request left. */
  const LATE_MS = 600;

  it('is replayed however late its close is read: the server closed it between requests', async () => {
    // `timeout=3`: undici keeps the connection 1 s (3 s less its 2 s margin); the server closes it
    // at 3 s (the stall holds this thread until then: the shortest whole-second announcement
    // undici still reuses a connection under is the shortest wait).
    upstream = await rawUpstream(() => true, undefined, 'keep-alive: timeout=3\r\n');
    relay = await idleClosingRelay(upstream, 3_000);
    proxy = await startProxy({ TOOLPROOF_UPSTREAM_URL: relay.url });
    expect(await post('/v1/chat/completions', chat)).toBe(200);
    unstall = stallNextRequest(relay, LATE_MS);
    expect(await post('/v1/chat/completions', chat)).toBe(200);
    expect(relay.closed()).toBe(1);
    // The stale connection delivered nothing: the request reached the server once, first on a
    // new connection.
    expect(upstream.seen).toEqual([
      { line: 'POST /v1/chat/completions HTTP/1.1', nth: 1 },
      { line: 'POST /v1/chat/completions HTTP/1.1', nth: 1 },
    ]);
    expect(upstream.connections).toBe(2);
    expect(await replays()).toBe(1);
  }, 30_000);

  it('is not replayed when it had been idle less than the announced timeout (the server closed early)', async () => {
    // Announced 4 s, closed at 3 s: past undici's own keep-alive (2 s), short of the announcement.
    upstream = await rawUpstream(() => true, undefined, 'keep-alive: timeout=4\r\n');
    relay = await idleClosingRelay(upstream, 3_000);
    proxy = await startProxy({ TOOLPROOF_UPSTREAM_URL: relay.url });
    expect(await post('/v1/chat/completions', chat)).toBe(200);
    unstall = stallNextRequest(relay, LATE_MS);
    const res = await postFull('/v1/chat/completions', chat);
    expect(res.status).toBe(502);
    // The error says why it was not sent again, with the numbers that tell the cases apart.
    expect((res.json as { error: { message: string } }).error.message).toMatch(
      /closed the connection under the request \(\w+\), on a connection reused after 1 response, idle \d+ ms before it \(announced: timeout=4\), \d+ ms after the request was sent, no byte answered\. Not sent again/,
    );
    expect(relay.closed()).toBe(1);
    expect(upstream.seen).toHaveLength(1);
    expect(await replays()).toBe(0);
  }, 30_000);

  it('a request read and dropped late on a connection idle less than the announced timeout is not sent again', async () => {
    // The upstream reads the request on the reused connection, works 1 s, and resets it.
    upstream = await generatingThenResetting(50, 1_000, 'keep-alive: timeout=3\r\n');
    proxy = await startProxy({ TOOLPROOF_UPSTREAM_URL: upstream.url });
    const warm = await Promise.all([post('/v1/chat/completions', chat), post('/v1/chat/completions', chat)]);
    expect(warm).toEqual([200, 200]);
    expect(upstream.connections).toBe(2);
    const res = await postFull('/v1/chat/completions', chat);
    expect(res.status).toBe(502);
    expect((res.json as { error: { message: string } }).error.message).toMatch(
      /on a connection reused after 1 response, idle \d+ ms before it \(announced: timeout=3\), \d{3,} ms after the request was sent, no byte answered/,
    );
    // Generated once: the warm-ups and this one request.
    expect(upstream.seen).toHaveLength(3);
    expect(upstream.closedByServer).toBe(1);
    expect(await replays()).toBe(0);
  }, 30_000);

  it("reads the timeout of a Keep-Alive header (RFC 9112's hint), in ms", () => {
    expect(keepAliveTimeoutMs('timeout=5')).toBe(5_000);
    expect(keepAliveTimeoutMs('timeout=5, max=100')).toBe(5_000);
    expect(keepAliveTimeoutMs('max=100, Timeout = 3')).toBe(3_000);
    for (const none of [undefined, '', 'max=5', 'timeout=0', 'timeout=1.5', 'xtimeout=5', 'timeout=-2'])
      expect(keepAliveTimeoutMs(none)).toBeNaN();
  });
});
