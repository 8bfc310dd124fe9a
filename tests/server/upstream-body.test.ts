/**
 * The upstream exchange on undici's dispatch() (server/upstream-body.ts), against a real
 * node:http upstream on loopback: whole bodies, chunk iteration, socket backpressure, and every
 * way a body is abandoned (destroy, an iterator stopped early, the client's abort, a limit)
 * cancelling the upstream request.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { RequestAbort } from '../../server/abort.js';
import { UpstreamClient } from '../../server/upstream.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

const open: Array<{ server: Server; client: UpstreamClient }> = [];

async function upstream(handler: Handler, idleMs = 5_000): Promise<UpstreamClient> {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const client = new UpstreamClient(
    { urls: [`http://127.0.0.1:${port}/v1`] },
    { connectMs: 2_000, firstByteMs: 5_000, idleMs },
  );
  open.push({ server, client });
  return client;
}

afterEach(async () => {
  for (const { server, client } of open.splice(0)) {
    await client.destroy();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});

/** Resolves when the upstream sees its request's connection close (the request was cancelled). */
function closed(req: Promise<IncomingMessage>): Promise<void> {
  return req.then((r) => new Promise<void>((resolve) => r.socket.once('close', () => resolve())));
}

function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

const MiB = 1024 * 1024;

describe('upstream exchange on dispatch()', () => {
  it('a body sent in several writes is read whole, bytes in order; the BOM rule follows the declared length', async () => {
    const parts = ['{"a":', '"é', '"}'];
    const client = await upstream((req, res) => {
      const chunked = req.url?.endsWith('chunked');
      const bom = Buffer.from([0xef, 0xbb, 0xbf]);
      const body = Buffer.concat([bom, Buffer.from(parts.join(''))]);
      if (!chunked) res.setHeader('content-length', body.length);
      res.write(bom);
      let i = 0;
      const next = () => {
        if (i === parts.length) return res.end();
        res.write(parts[i++]);
        setTimeout(next, 5);
      };
      next();
    });
    const { readUpstreamBody } = await import('../../server/chat/attempt.js');
    const declared = await client.request({ method: 'GET', path: '/x', signal: new RequestAbort() });
    expect(declared.status).toBe(200);
    expect(await readUpstreamBody(declared, 'u')).toBe('{"a":"é"}');
    const chunked = await client.request({ method: 'GET', path: '/chunked', signal: new RequestAbort() });
    expect(await readUpstreamBody(chunked, 'u')).toBe('\ufeff{"a":"é"}');
  });

  it('a long request (a stream) sends its body whole with its length, and the transport keeps no copy while the response lasts', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    let received: { headers: IncomingMessage['headers']; body: string } | undefined;
    let hold: ServerResponse | undefined;
    const client = await upstream((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (c: Buffer) => parts.push(c));
      req.on('end', () => {
        received = { headers: req.headers, body: Buffer.concat(parts).toString() };
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: {}\n\n');
        hold = res; // the response stays open, as a generating model's does
      });
    });
    const text = JSON.stringify({
      model: 'm',
      stream: true,
      messages: [{ role: 'user', content: 'x'.repeat(50_000) }],
    });
    let sent: WeakRef<Buffer> | undefined;
    const res = await (async () => {
      const body = Buffer.from(text);
      sent = new WeakRef(body);
      return client.request({
        method: 'POST',
        path: '/chat/completions',
        body,
        headers: {},
        signal: new RequestAbort(),
        long: true,
      });
    })();
    expect(res.status).toBe(200);
    expect(received?.body).toBe(text);
    expect(received?.headers['content-length']).toBe(String(Buffer.byteLength(text)));
    expect(received?.headers['transfer-encoding']).toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, 0));
    gc();
    gc();
    expect(sent?.deref()).toBeUndefined();
    res.body.destroy();
    hold?.end();
  });

  it('iterating a large body keeps the socket paused while the reader is slow (backpressure)', async () => {
    let written = 0;
    const client = await upstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(64 * 1024, 97);
      const pump = () => {
        while (written < 64 * MiB) {
          written += chunk.length;
          if (!res.write(chunk)) {
            // The upstream's own buffer is full: from here on only the reader can make room.
            res.once('drain', pump);
            return;
          }
        }
        res.end();
      };
      pump();
    });
    const res = await client.request({ method: 'GET', path: '/big', signal: new RequestAbort() });
    const it = res.body[Symbol.asyncIterator]();
    const first = await it.next();
    expect(first.done).toBe(false);
    // The reader stops reading; the upstream must stall long before the 64 MiB are written.
    await new Promise((r) => setTimeout(r, 500));
    const at = written;
    expect(at).toBeLessThan(32 * MiB);
    await new Promise((r) => setTimeout(r, 200));
    expect(written).toBe(at); // nothing more while nobody reads
    // Reading again resumes the flow to the end.
    let total = (first.value as Buffer).length;
    for (;;) {
      const r = await it.next();
      if (r.done) break;
      total += r.value.length;
    }
    expect(total).toBe(64 * MiB);
  });

  it('chunks that arrived while nobody read come out as one read (one client write per read in the stream driver)', async () => {
    const events = Array.from({ length: 100 }, (_, i) => `data: {"n":${i}}\n\n`);
    const client = await upstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const e of events) res.write(e); // chunked encoding: one HTTP chunk per event
      res.end();
    });
    const res = await client.request({ method: 'GET', path: '/s', signal: new RequestAbort() });
    await new Promise((r) => setTimeout(r, 200)); // everything has arrived by now
    let reads = 0;
    let text = '';
    for await (const chunk of res.body) {
      reads++;
      text += chunk.toString();
    }
    expect(text).toBe(events.join(''));
    expect(reads).toBeLessThan(5);
  });

  it('destroy() mid-body cancels the upstream request; a pending reader gets the error', async () => {
    const seen = deferred<IncomingMessage>();
    const client = await upstream((req, res) => {
      seen.resolve(req);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: 1\n\n'); // then nothing: a stream that is still generating
    });
    const res = await client.request({ method: 'GET', path: '/s', signal: new RequestAbort() });
    const it = res.body[Symbol.asyncIterator]();
    expect((await it.next()).done).toBe(false);
    const waiting = it.next();
    res.body.destroy();
    await expect(waiting).rejects.toThrow();
    await closed(seen.promise);
  });

  it('an iterator stopped early (for await + break) cancels the request while the upstream is silent', async () => {
    const seen = deferred<IncomingMessage>();
    const client = await upstream((req, res) => {
      seen.resolve(req);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: 1\n\n');
    });
    const res = await client.request({ method: 'GET', path: '/s', signal: new RequestAbort() });
    for await (const chunk of res.body) {
      expect(chunk.toString()).toContain('data: 1');
      break;
    }
    await closed(seen.promise);
  });

  it("the client's abort cancels the request while it waits for headers, and mid-body", async () => {
    const seen: IncomingMessage[] = [];
    const arrived = deferred<void>();
    const client = await upstream((req, res) => {
      seen.push(req);
      arrived.resolve();
      if (req.url?.endsWith('body')) {
        res.writeHead(200);
        res.write('partial');
      }
    });
    const before = new RequestAbort();
    const pending = client.request({ method: 'GET', path: '/head', signal: before });
    await arrived.promise;
    const gone = closed(Promise.resolve(seen[0]!));
    before.abort(new Error('client disconnected'));
    await expect(pending).rejects.toThrow('client disconnected');
    await gone;

    const mid = new RequestAbort();
    const res = await client.request({ method: 'GET', path: '/body', signal: mid });
    const reading = res.body.bytes();
    mid.abort(new Error('client disconnected'));
    await expect(reading).rejects.toThrow('client disconnected');
    await closed(Promise.resolve(seen[1]!));
  });

  it('a standard AbortSignal cancels too (the /v1/models and /ready probes use AbortSignal.timeout)', async () => {
    const seen = deferred<IncomingMessage>();
    const client = await upstream((req) => seen.resolve(req)); // never answers
    const pending = client.request({ method: 'GET', path: '/models', signal: AbortSignal.timeout(200) });
    await expect(pending).rejects.toMatchObject({ name: 'TimeoutError' });
    await closed(seen.promise);
  });

  it('a whole read past its limit returns null and cancels the request', async () => {
    const seen = deferred<IncomingMessage>();
    const client = await upstream((req, res) => {
      seen.resolve(req);
      res.writeHead(200); // chunked: no declared length to refuse up front
      res.write(Buffer.alloc(4096, 97));
    });
    const res = await client.request({ method: 'GET', path: '/x', signal: new RequestAbort() });
    expect(await res.body.bytes(1024)).toBeNull();
    await closed(seen.promise);
  });

  it('a stalled body hits the idle timeout as an error of the body, mapped to 504', async () => {
    const client = await upstream((_req, res) => {
      res.writeHead(200, { 'content-length': '100' });
      res.write('{"partial":');
    }, 300);
    const { readUpstreamBody } = await import('../../server/chat/attempt.js');
    const res = await client.request({ method: 'GET', path: '/x', signal: new RequestAbort() });
    await expect(readUpstreamBody(res, 'u')).rejects.toMatchObject({ code: 'TP_ERR_UPSTREAM_TIMEOUT' });
  });
});
