/**
 * The simulator's HTTP layer on plain node:http, for full control over headers, framing,
 * `Connection: close` and aborts. Records every request and every early client disconnect.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type Ctx,
  handleChat,
  handleCompletions,
  handleEmbeddings,
  origin,
  sendError,
  sendJson,
} from './handlers.js';
import { llamaServer } from './llama-server.js';
import { Slots } from './slots.js';
import { PrefixCache } from './prefix-cache.js';
import { resolveScenario } from './scenarios.js';
import type { StreamState } from './sse-writer.js';
import type { RecordedRequest, Simulator, SimulatorOptions } from './types.js';
import { vllm } from './vllm.js';
import { isObject as isObj } from '../protocol/is-object.js';

export { SCENARIO_HEADER } from './handlers.js';

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}

const POST_ROUTES: Record<string, 'chat' | 'completions' | 'embeddings'> = {
  '/v1/chat/completions': 'chat',
  '/v1/completions': 'completions',
  '/v1/embeddings': 'embeddings',
};
const LLAMA_ALIASES: Record<string, string> = {
  '/chat/completions': '/v1/chat/completions',
  '/completions': '/v1/completions',
  '/embeddings': '/v1/embeddings',
  '/models': '/v1/models',
  '/v1/health': '/health',
};
const GET_ROUTES = new Set(['/v1/models', '/health', '/metrics', '/props']);

function authorized(ctx: Ctx, req: IncomingMessage): boolean {
  const key = ctx.options.apiKey;
  if (!key) return true;
  const auth = req.headers.authorization;
  if (typeof auth === 'string' && auth === `Bearer ${key}`) return true;
  // llama-server also accepts X-Api-Key; vLLM only the bearer token.
  return ctx.p.name === 'llama-server' && req.headers['x-api-key'] === key;
}

async function route(
  ctx: Ctx,
  req: IncomingMessage,
  res: ServerResponse,
  state: StreamState,
  record: RecordedRequest,
) {
  const { p, options } = ctx;
  const rawPath = (req.url ?? '/').split('?')[0] ?? '/';
  const path = p.name === 'llama-server' ? (LLAMA_ALIASES[rawPath] ?? rawPath) : rawPath;
  const method = req.method ?? 'GET';
  if (method === 'OPTIONS' && p.name === 'llama-server') {
    res.writeHead(200, {
      'Keep-Alive': 'timeout=5, max=100',
      'Content-Length': '0',
      'Content-Type': 'text/html',
      Server: 'llama.cpp',
      'Access-Control-Allow-Origin': origin(req) ?? '',
      'Access-Control-Allow-Credentials': 'true',
      'Access-Control-Allow-Headers': '*',
      'Access-Control-Allow-Methods': 'GET, POST',
    });
    res.end();
    return;
  }
  // Both backends check the key before routing: an unknown guarded path without a key is 401.
  if (p.guarded(path) && !authorized(ctx, req)) {
    const denied = p.unauthorized();
    return sendJson(res, denied.status, p.errorHeaders(origin(req)), denied.body);
  }
  const known = path in POST_ROUTES || (GET_ROUTES.has(path) && (path !== '/props' || p.props !== undefined));
  const kind = method === 'POST' ? POST_ROUTES[path] : undefined;
  const isGet = method === 'GET' && known && GET_ROUTES.has(path);
  if (!kind && !isGet) {
    const nf = p.routeNotFound(known);
    return sendJson(res, nf.status, p.errorHeaders(origin(req)), nf.body);
  }
  if (isGet) {
    if (path === '/health') {
      const h = p.health();
      return sendJson(res, h.status, p.okHeaders('json', origin(req)), h.body);
    }
    if (path === '/props' && p.props)
      return sendJson(res, 200, p.okHeaders('json', origin(req)), p.props(options));
    if (path === '/v1/models') {
      return sendJson(
        res,
        200,
        p.okHeaders('json', origin(req)),
        p.models(options, Math.floor(Date.now() / 1000)),
      );
    }
    if (path === '/props') {
      // llama-server's server properties; total_slots is its -np (the slot model's count).
      if (p.name !== 'llama-server')
        return sendJson(res, 404, p.errorHeaders(origin(req)), { detail: 'Not Found' });
      return sendJson(res, 200, p.okHeaders('json', origin(req)), {
        total_slots: options.slots?.count ?? 1,
        model_path: p.modelName(options),
      });
    }
    const m = p.metrics(options, ctx.stats);
    if (!m.ok) return sendError(ctx, req, res, m.error);
    const headers = p.okHeaders('text', origin(req));
    res.writeHead(200, { ...headers, 'Content-Length': String(Buffer.byteLength(m.text)) });
    res.end(m.text);
    return;
  }
  const parsed = p.parseBody(record.rawBody);
  if (!parsed.ok) return sendError(ctx, req, res, parsed.error);
  record.body = parsed.value;
  const body = isObj(parsed.value) ? parsed.value : {};
  if (kind === 'chat') return handleChat(ctx, req, res, body, state, record);
  if (kind === 'completions') return handleCompletions(ctx, req, res, body, state);
  return handleEmbeddings(ctx, req, res, body);
}

export async function startSimulator(options: SimulatorOptions): Promise<Simulator> {
  const ctx: Ctx = {
    options,
    p: options.personality === 'vllm' ? vllm : llamaServer,
    scenario: resolveScenario(options.scenario ?? 'demo'),
    stats: {
      running: 0,
      promptTokens: 0,
      cachedTokens: 0,
      generationTokens: 0,
      requests: 0,
      ttftSeconds: [],
      e2eSeconds: [],
    },
    prefixCache: options.prefixCache === false ? undefined : new PrefixCache(options.prefixCache),
    slots: options.slots ? new Slots(options.slots) : undefined,
    requests: [],
    aborts: [],
  };
  const server = createServer(async (req, res) => {
    // llama-server sends no Date header; uvicorn does.
    res.sendDate = ctx.p.name === 'vllm';
    const record: RecordedRequest = {
      index: ctx.requests.length,
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      headers: { ...req.headers },
      rawBody: '',
      body: undefined,
      receivedAt: Date.now(),
    };
    ctx.requests.push(record);
    const state: StreamState = { chunksSent: 0, closed: false };
    const started = Date.now();
    ctx.stats.running++;
    ctx.stats.requests++;
    res.on('close', () => {
      ctx.stats.running--;
      if (!res.writableFinished) {
        state.closed = true;
        ctx.aborts.push({
          requestIndex: record.index,
          path: record.path,
          midStream: res.headersSent,
          chunksSent: state.chunksSent,
          at: Date.now(),
        });
      } else {
        ctx.stats.e2eSeconds.push((Date.now() - started) / 1000);
      }
    });
    try {
      record.rawBody = await readBody(req);
      const trimmed = record.rawBody.trim();
      if (trimmed) {
        try {
          record.body = JSON.parse(record.rawBody);
        } catch {
          record.body = undefined;
        }
      }
      await route(ctx, req, res, state, record);
    } catch (err) {
      if (!res.headersSent)
        sendError(ctx, req, res, { status: 500, message: `simulator: ${(err as Error).message}` });
      else res.destroy();
    }
  });
  // Keep-alive like the real servers (llama-server: 5 s), so pooled-connection bugs show up.
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const originUrl = `http://${host}:${address.port}`;
  return {
    url: `${originUrl}/v1`,
    origin: originUrl,
    port: address.port,
    personality: options.personality,
    requests: ctx.requests,
    aborts: ctx.aborts,
    reset() {
      ctx.requests.length = 0;
      ctx.aborts.length = 0;
      ctx.prefixCache?.clear();
    },
    setScenario(spec) {
      ctx.scenario = resolveScenario(spec);
    },
    close() {
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Stalled streams never end on their own.
        server.closeAllConnections();
      });
    },
  };
}
