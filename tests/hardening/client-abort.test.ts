/**
 * A client that leaves before the upstream answers, or in the middle of a stream, is an abort:
 * not toolproof's own failure. It is not counted in toolproof_internal_errors_total nor logged
 * at error level with a stack; it is counted as what it is (toolproof_requests_total with
 * status "aborted", and toolproof_client_aborts_total by front door and stage) on every front
 * door and the pass-through, and the upstream request is cancelled.
 */
import type { ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type ToolproofApp } from '../../server/app.js';
import { loadConfig } from '../../server/config.js';
import { closeApp } from '../server/stack.js';
import { logCapture } from '../server/test-utils.js';
import { type FakeUpstream, fakeUpstream, type Recorded } from '../support/harness.js';

let upstream: FakeUpstream;
let app: ToolproofApp;
let origin: string;
const { stream: logStream, lines } = logCapture();
/** Upstream responses still open, by request path: a cancelled request closes its socket. */
const open = new Set<ServerResponse>();

function chunk(content: string): string {
  return `data: ${JSON.stringify({
    id: 'c1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'm1',
    choices: [{ index: 0, delta: { content }, finish_reason: null }],
  })}\n\n`;
}

/** Model "hang": no headers ever. Model "mid": a streamed start (or a relay's SSE), then silence. */
function handler(req: Recorded, res: ServerResponse): void {
  open.add(res);
  res.on('close', () => open.delete(res));
  let body: { model?: string; stream?: boolean } = {};
  try {
    body = JSON.parse(req.body.toString('utf8')) as typeof body;
  } catch {
    // a pass-through GET
  }
  if (body.model === 'mid' || req.url === '/v1/events') {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(req.url.endsWith('/chat/completions') ? chunk('Hello, ') : 'data: {"n":1}\n\n');
    return;
  }
  // "hang" and everything else: no answer until the request is cancelled
}

beforeAll(async () => {
  upstream = await fakeUpstream(handler);
  app = await buildApp(loadConfig({ TOOLPROOF_UPSTREAM_URL: upstream.url }), {
    logger: { level: 'info', stream: logStream },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await closeApp(app);
  await upstream.close();
});

async function until(cond: () => boolean, what: string): Promise<void> {
  const started = Date.now();
  while (!cond()) {
    if (Date.now() - started > 5_000) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Sends the request, waits for the upstream to have it (and, mid-stream, for the first bytes), then leaves. */
async function leave(path: string, body: unknown, stage: 'before' | 'mid', reqId: string): Promise<void> {
  const ac = new AbortController();
  const seen = upstream.requests.length;
  const pending = fetch(`${origin}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': reqId },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: ac.signal,
  });
  await until(() => upstream.requests.length > seen, `${path} to reach the upstream`);
  if (stage === 'mid') {
    const res = await pending;
    const reader = res.body!.getReader();
    await reader.read();
  }
  ac.abort();
  await pending.then(
    (r) => r.body?.cancel().catch(() => undefined),
    () => undefined,
  );
  await until(() => lines.some((l) => l.reqId === reqId && l.msg === 'request'), `${reqId}'s log line`);
  await until(() => open.size === 0, 'the upstream request to be cancelled');
}

const messages = [{ role: 'user', content: 'hi' }];
const tools = [
  { type: 'function', function: { name: 'get', parameters: { type: 'object', properties: {} } } },
];

const cases: Array<[string, string, unknown, 'before' | 'mid', string]> = [
  ['chat', '/v1/chat/completions', { model: 'hang', messages }, 'before', 'chat'],
  ['chat, tools', '/v1/chat/completions', { model: 'hang', messages, tools }, 'before', 'chat'],
  ['chat, streamed', '/v1/chat/completions', { model: 'hang', messages, stream: true }, 'before', 'chat'],
  ['chat, mid-stream', '/v1/chat/completions', { model: 'mid', messages, stream: true }, 'mid', 'chat'],
  ['responses', '/v1/responses', { model: 'hang', input: 'hi' }, 'before', 'responses'],
  ['responses, mid-stream', '/v1/responses', { model: 'mid', input: 'hi', stream: true }, 'mid', 'responses'],
  ['messages', '/v1/messages', { model: 'hang', max_tokens: 9, messages }, 'before', 'messages'],
  [
    'messages, mid-stream',
    '/v1/messages',
    { model: 'mid', max_tokens: 9, messages, stream: true },
    'mid',
    'messages',
  ],
  ['embeddings', '/v1/embeddings', { model: 'hang', input: 'x' }, 'before', 'passthrough'],
  [
    'completions, mid-stream',
    '/v1/completions',
    { model: 'mid', prompt: 'x', stream: true },
    'mid',
    'passthrough',
  ],
  ['pass-through', '/v1/rerank', { model: 'hang', query: 'q', documents: [] }, 'before', 'passthrough'],
  ['pass-through, mid-stream', '/v1/events', undefined, 'mid', 'passthrough'],
];

describe('a client that leaves is an abort, not an internal error', () => {
  it.each(cases)('%s', async (name, path, body, stage, api) => {
    const reqId = `abort-${name.replace(/[^a-z]+/g, '-')}`;
    await leave(path, body, stage, reqId);
    const mine = lines.filter(
      (l) => l.reqId === reqId || (l.req as { id?: string } | undefined)?.id === reqId,
    );
    expect(mine.filter((l) => (l.level as number) >= 50)).toEqual([]);
    const line = mine.find((l) => l.msg === 'request')!;
    expect(line.status).toBe('aborted');
    expect(line.api).toBe(api);
    expect(line.level).toBe(30);
    const metrics = await (await fetch(`${origin}/metrics`)).text();
    expect(metrics).not.toMatch(/^toolproof_internal_errors_total\{[^}]*\} [1-9]/m);
    const stageLabel = stage === 'before' ? 'before_response' : 'mid_response';
    expect(metrics).toMatch(
      new RegExp(`^toolproof_client_aborts_total\\{api="${api}",stage="${stageLabel}"\\} [1-9]`, 'm'),
    );
  });

  it('no line of the whole run is at error level', () => {
    expect(lines.filter((l) => (l.level as number) >= 50)).toEqual([]);
  });
});
