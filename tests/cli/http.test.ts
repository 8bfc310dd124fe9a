import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChatClient } from '../../cli/probe/http.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

let server: Server;
const ENDLESS_BLOCK = Buffer.alloc(1024 * 1024, 0x20);
let endlessBytes = 0;
let base = '';
const seen: Array<{ url: string | undefined; auth: string | undefined; body: string }> = [];
const routes: Record<string, Handler> = {
  '/ok/v1/chat/completions': (_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: 'hi' } }] }));
  },
  '/tp/v1/chat/completions': (_req, res) => {
    res.setHeader('x-toolproof-attempts', '1');
    res.end(JSON.stringify({ choices: [] }));
  },
  '/err/v1/chat/completions': (_req, res) => {
    res.statusCode = 400;
    res.end(
      JSON.stringify({
        error: { message: 'tool_choice "required" is not supported', type: 'invalid_request_error' },
      }),
    );
  },
  '/legacy/v1/chat/completions': (_req, res) => {
    res.statusCode = 400;
    res.end(JSON.stringify({ object: 'error', message: 'legacy shape' }));
  },
  '/html/v1/chat/completions': (_req, res) => {
    res.end('<html>proxy login</html>');
  },
  // A hostile model server: an answer that never ends, written as fast as it is read.
  '/endless/v1/chat/completions': (_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.write('{"choices":[');
    const more = (): void => {
      for (let more = true; more && !res.destroyed; endlessBytes += ENDLESS_BLOCK.length)
        more = res.write(ENDLESS_BLOCK);
    };
    res.on('drain', more);
    more();
  },
  '/hang/v1/chat/completions': () => {
    // never answers: the client's timeout must fire
  },
};

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    req.on('end', () => {
      seen.push({ url: req.url, auth: req.headers.authorization, body });
      const route = routes[req.url ?? ''];
      if (route) route(req, res);
      else {
        res.statusCode = 404;
        res.end('not found');
      }
    });
  });
  server.keepAliveTimeout = 100;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('createChatClient', () => {
  it('posts the body with the bearer key and returns the parsed JSON', async () => {
    const client = createChatClient({ baseUrl: `${base}/ok/v1/`, apiKey: 'sk-test', timeoutMs: 2000 });
    const outcome = await client.send({ model: 'm', messages: [{ role: 'user', content: 'x' }] });
    await client.close();
    expect(outcome).toMatchObject({ ok: true, status: 200 });
    const last = seen.at(-1);
    expect(last?.auth).toBe('Bearer sk-test');
    expect(JSON.parse(last?.body ?? '{}')).toMatchObject({ model: 'm' });
  });

  it('notices when toolproof answered (x-toolproof-attempts)', async () => {
    const plain = createChatClient({ baseUrl: `${base}/ok/v1`, timeoutMs: 2000 });
    await plain.send({ model: 'm', messages: [] });
    expect(plain.sawToolproof()).toBe(false);
    await plain.close();
    const proxied = createChatClient({ baseUrl: `${base}/tp/v1`, timeoutMs: 2000 });
    await proxied.send({ model: 'm', messages: [] });
    expect(proxied.sawToolproof()).toBe(true);
    await proxied.close();
  });

  it('an HTTP error keeps its status and the backend message (nested or legacy shape)', async () => {
    const client = createChatClient({ baseUrl: `${base}/err/v1`, timeoutMs: 2000 });
    expect(await client.send({ model: 'm', messages: [] })).toEqual({
      ok: false,
      status: 400,
      message: 'tool_choice "required" is not supported',
    });
    await client.close();
    const legacy = createChatClient({ baseUrl: `${base}/legacy/v1`, timeoutMs: 2000 });
    expect(await legacy.send({ model: 'm', messages: [] })).toMatchObject({
      status: 400,
      message: 'legacy shape',
    });
    await legacy.close();
  });

  it('a 200 that is not JSON is an error', async () => {
    const client = createChatClient({ baseUrl: `${base}/html/v1`, timeoutMs: 2000 });
    expect(await client.send({ model: 'm', messages: [] })).toMatchObject({
      ok: false,
      status: 200,
      message: expect.stringMatching(/not JSON/),
    });
    await client.close();
  });

  it('an endless answer is refused past 16 MiB, not read whole until the timeout', async () => {
    // Before: response.text() held every byte until the timeout (the probe's default is 120 s;
    // GBs at loopback speed), and the probe's process went out of memory first.
    const client = createChatClient({ baseUrl: `${base}/endless/v1`, timeoutMs: 8000 });
    const t0 = Date.now();
    const outcome = await client.send({ model: 'm', messages: [] });
    await client.close();
    expect(outcome).toEqual({
      ok: false,
      status: 200,
      message: 'reading the body failed: the answer is over 16 MiB',
    });
    expect(Date.now() - t0).toBeLessThan(6000);
    // What the server wrote before the client stopped reading: the cap and the socket's buffers.
    expect(endlessBytes).toBeLessThan(64 * 1024 * 1024);
  }, 15_000);

  it('times out without a status', async () => {
    const client = createChatClient({ baseUrl: `${base}/hang/v1`, timeoutMs: 150 });
    expect(await client.send({ model: 'm', messages: [] })).toEqual({
      ok: false,
      status: null,
      message: 'timed out after 150 ms',
    });
    await client.close();
  });

  it('a refused connection is an error without a status', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    const client = createChatClient({ baseUrl: `http://127.0.0.1:${port}/v1`, timeoutMs: 2000 });
    expect(await client.send({ model: 'm', messages: [] })).toMatchObject({
      ok: false,
      status: null,
      message: expect.stringMatching(/ECONNREFUSED/),
    });
    await client.close();
  });
});
