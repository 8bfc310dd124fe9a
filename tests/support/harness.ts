/**
 * Test plumbing for the tests that talk real HTTP (tests/hardening, tests/redteam, some of e2e
 * and server): raw HTTP over a `net` socket (client libraries normalize URLs, which would hide
 * spelling bugs), a fake upstream that records what reached it, the real toolproof app on
 * loopback (proxyInFrontOf starts both for a suite), and the chat answers fake upstreams give.
 */
import { afterAll, beforeAll } from 'vitest';
import { closeApp, TEST_MODELS } from '../server/stack.js';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect } from 'node:net';
import type { Writable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import { buildApp, type ToolproofApp } from '../../server/app.js';
import { loadConfig } from '../../server/config.js';
import { sharedPdfPool } from './pdf-pool.js';

export interface RawResponse {
  status: number;
  head: string;
  body: string;
  text: string;
}

/** Sends `request` bytes as they are and reads until the server closes the connection. */
export function rawRequest(port: number, request: string | Buffer, timeoutMs = 10_000): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('no answer in time'));
    }, timeoutMs);
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', ...rest] = text.split('\r\n\r\n');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
      resolve({ status, head, body: rest.join('\r\n\r\n'), text });
    });
    socket.write(request);
  });
}

export interface Recorded {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

export interface FakeUpstream {
  url: string;
  origin: string;
  requests: Recorded[];
  close(): Promise<void>;
}

export type FakeHandler = (req: Recorded, res: ServerResponse) => void;

const defaultHandler: FakeHandler = (req, res) => {
  res.writeHead(200, { 'content-type': 'application/json', 'x-upstream': 'yes' });
  res.end(JSON.stringify({ method: req.method, url: req.url, object: 'echo' }));
};

/** An upstream that records every request and answers with `handler` (default: a JSON echo). */
export async function fakeUpstream(handler: FakeHandler = defaultHandler): Promise<FakeUpstream> {
  const requests: Recorded[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const rec = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks),
      };
      requests.push(rec);
      handler(rec, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: `${origin}/v1`,
    origin,
    requests,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export interface RunningProxy {
  app: ToolproofApp;
  port: number;
  origin: string;
  close(): Promise<void>;
}

type FileConfig = Parameters<typeof loadConfig>[1];

/** The real toolproof app on loopback, configured from env (and an optional inline YAML object). */
export async function startProxy(
  env: Record<string, string>,
  file?: FileConfig,
  log?: Writable,
): Promise<RunningProxy> {
  const app = await buildApp(loadConfig(env, file), {
    logger: log ? { level: 'info', stream: log } : false,
    pdfPool: sharedPdfPool(),
  });
  app.toolproof.modelLabels.serve(TEST_MODELS); // as /ready would learn them (see stack.ts)
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as AddressInfo).port;
  return { app, port, origin: `http://127.0.0.1:${port}`, close: () => closeApp(app) };
}

export interface ProxyInFront<U = FakeUpstream> {
  upstream: U;
  proxy: RunningProxy;
}

export interface ProxyOptions {
  env?: Record<string, string>;
  /** The YAML file, or one built from the upstream's URL. */
  file?: FileConfig | ((upstreamUrl: string) => FileConfig);
  /** Where the app's info-level log lines go (none otherwise). */
  log?: Writable;
}

/**
 * An upstream from `start` and the real app in front of it (its TOOLPROOF_UPSTREAM_URL, plus
 * `env` and the YAML `file`), started before the enclosing suite's tests and closed after them.
 * Read the fields in tests and hooks: they are set once the suite starts.
 */
export function proxyInFrontOfUpstream<U extends { url: string; close(): Promise<void> }>(
  start: () => Promise<U>,
  options: ProxyOptions = {},
): ProxyInFront<U> {
  const pair = {} as ProxyInFront<U>;
  beforeAll(async () => {
    pair.upstream = await start();
    const { file } = options;
    pair.proxy = await startProxy(
      { TOOLPROOF_UPSTREAM_URL: pair.upstream.url, ...options.env },
      typeof file === 'function' ? file(pair.upstream.url) : file,
      options.log,
    );
  });
  afterAll(async () => {
    await pair.proxy?.close();
    await pair.upstream?.close();
  });
  return pair;
}

/** The same in front of a fakeUpstream answering with `handler`. */
export function proxyInFrontOf(handler: FakeHandler, options: ProxyOptions = {}): ProxyInFront {
  return proxyInFrontOfUpstream(() => fakeUpstream(handler), options);
}

export const CHAT_BODY = JSON.stringify({ model: 'm1', messages: [{ role: 'user', content: 'hi' }] });

/** A complete HTTP/1.1 request with Connection: close. */
export function httpRequest(
  method: string,
  target: string,
  body = '',
  headers: Record<string, string> = {},
): string {
  const lines = [`${method} ${target} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close'];
  if (body || method === 'POST') {
    lines.push('Content-Type: application/json', `Content-Length: ${Buffer.byteLength(body)}`);
  }
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
  return `${lines.join('\r\n')}\r\n\r\n${body}`;
}

/** One SSE event: a chat.completion.chunk whose only choice (index 0) carries `delta`. */
export function chunkEvent(delta: unknown, finish: string | null = null, id = 'c1', model = 'm1'): string {
  const chunk = {
    id,
    object: 'chat.completion.chunk',
    created: 1,
    model,
    choices: [{ index: 0, delta, finish_reason: finish }],
  };
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

/**
 * Answers a chat completion with one tool call, as a stream of chunks or a JSON body after the
 * request's `stream` (fake upstreams whose model always calls one tool).
 */
export function answerWithCall(req: Recorded, res: ServerResponse, call: object): void {
  const stream = (JSON.parse(req.body.toString()) as { stream?: boolean }).stream === true;
  if (stream) {
    const chunk = (delta: unknown, finish: string | null) => chunkEvent(delta, finish, 'chatcmpl-x');
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(
      chunk({ role: 'assistant', content: null }, null) +
        chunk({ tool_calls: [{ index: 0, ...call }] }, null) +
        chunk({}, 'tool_calls') +
        'data: [DONE]\n\n',
    );
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({
      id: 'chatcmpl-x',
      object: 'chat.completion',
      created: 1,
      model: 'm1',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: null, tool_calls: [call] },
          finish_reason: 'tool_calls',
        },
      ],
    }),
  );
}

/** A fake upstream's handler that answers `stream()` as SSE to a streamed request, `json()` otherwise. */
export function streamOrJson(stream: () => string, json: () => string): FakeHandler {
  return (req, res) => {
    const streamed = (JSON.parse(req.body.toString()) as { stream?: boolean }).stream === true;
    res.writeHead(200, { 'content-type': streamed ? 'text/event-stream' : 'application/json' });
    res.end(streamed ? stream() : json());
  };
}

/**
 * A fake upstream's handler whose model writes `text` as content: streamed, one character a
 * chunk (the hardest split for a reader); otherwise whole in one completion.
 */
export function textCharByChar(text: string): FakeHandler {
  return streamOrJson(
    () => {
      const events = [...text].map((ch, i) =>
        chunkEvent(i === 0 ? { role: 'assistant', content: ch } : { content: ch }),
      );
      return `${events.join('')}${chunkEvent({}, 'stop')}data: [DONE]\n\n`;
    },
    () => textCompletion(text),
  );
}

/** One choice per text in `contents`, each whole in its `message` or `delta` and finished "stop". */
function textChoices(contents: string | readonly string[], field: 'message' | 'delta') {
  const list = typeof contents === 'string' ? [contents] : contents;
  return list.map((content, index) => ({
    index,
    [field]: { role: 'assistant', content },
    finish_reason: 'stop',
  }));
}

export { sendCompletion } from './completion.js';

/** A chat completion (id c1, model m1) with one choice per text in `contents`. */
export function textCompletion(contents: string | readonly string[]): string {
  const choices = textChoices(contents, 'message');
  return JSON.stringify({ id: 'c1', object: 'chat.completion', created: 1, model: 'm1', choices });
}

/** The same choices streamed: one chunk holding all of them, then [DONE]. */
export function textCompletionStream(contents: string | readonly string[]): string {
  const chunk = {
    id: 'c1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'm1',
    choices: textChoices(contents, 'delta'),
  };
  return `data: ${JSON.stringify(chunk)}\n\ndata: [DONE]\n\n`;
}

/** A fake upstream's handler that answers every request with the JSON text `body()` (or `body`). */
export function answerJson(body: string | (() => string)): FakeHandler {
  return (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(typeof body === 'string' ? body : body());
  };
}
