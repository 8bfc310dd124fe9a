/**
 * The simulator's HTTP layer on plain node:http, for full control over headers, framing,
 * `Connection: close` and aborts. Records every request and every early client disconnect.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChatMessage, ToolDef } from '../../protocol/openai.js';
import {
  completionId,
  completionText,
  embeddingsResponse,
  textCompletion,
  textCompletionChunks,
} from './extra-endpoints.js';
import { type Generation, generate } from './generate.js';
import { llamaServer } from './llama-server.js';
import type { PersonalityImpl, ResponseMeta, SimError, SimStats } from './personality.js';
import { resolveScenario, turnContext } from './scenarios.js';
import { type StreamState, sleep, sseEvent, writeSse } from './sse-writer.js';
import { countTokens, splitTokens } from './tokens.js';
import type {
  RecordedAbort,
  RecordedRequest,
  ScenarioFn,
  Simulator,
  SimulatorOptions,
  TurnAction,
} from './types.js';
import { vllm } from './vllm.js';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

export const SCENARIO_HEADER = 'x-sim-scenario';

interface Ctx {
  options: SimulatorOptions;
  p: PersonalityImpl;
  scenario: ScenarioFn;
  stats: SimStats;
  requests: RecordedRequest[];
  aborts: RecordedAbort[];
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}

function origin(req: IncomingMessage): string | undefined {
  const o = req.headers.origin;
  return typeof o === 'string' ? o : undefined;
}

function sendJson(res: ServerResponse, status: number, headers: Record<string, string>, body: unknown): void {
  const text = body === null ? '' : JSON.stringify(body);
  res.writeHead(status, { ...headers, 'Content-Length': String(Buffer.byteLength(text)) });
  res.end(text);
}

function sendError(ctx: Ctx, req: IncomingMessage, res: ServerResponse, err: SimError): void {
  sendJson(res, err.status, ctx.p.errorHeaders(origin(req)), ctx.p.errorBody(err, ctx.options));
}

function promptTokens(body: Obj): number {
  return Math.max(1, countTokens(JSON.stringify(body.messages ?? body.prompt ?? '')));
}

function maxTokens(body: Obj): number | null {
  const v = body.max_completion_tokens ?? body.max_tokens;
  return typeof v === 'number' && v > 0 ? v : null;
}

function includeUsage(body: Obj): boolean {
  return isObj(body.stream_options) && body.stream_options.include_usage === true;
}

function pickScenario(ctx: Ctx, req: IncomingMessage): { fn: ScenarioFn } | { error: SimError } {
  const header = req.headers[SCENARIO_HEADER];
  if (typeof header !== 'string' || header === '') return { fn: ctx.scenario };
  try {
    // Header values are Latin-1 on the wire: non-ASCII scenarios travel as `b64:<base64 of UTF-8 JSON>`.
    const text = header.startsWith('b64:') ? Buffer.from(header.slice(4), 'base64').toString('utf8') : header;
    return { fn: resolveScenario(text) };
  } catch (err) {
    return {
      error: { status: 400, message: `simulator: ${(err as Error).message}`, type: 'invalid_request_error' },
    };
  }
}

/** Non-stream answers honour stall and die too: a hung or dropped backend before any byte. */
function hangOrDie(res: ServerResponse, action: TurnAction): boolean {
  if (action.dieAfterChunks !== undefined) {
    res.socket?.destroy();
    return true;
  }
  return action.stallAfterChunks !== undefined;
}

async function handleChat(
  ctx: Ctx,
  req: IncomingMessage,
  res: ServerResponse,
  body: Obj,
  state: StreamState,
) {
  const { p, options } = ctx;
  const invalid = p.validateChat(body, options);
  if (invalid) return sendError(ctx, req, res, invalid);
  const picked = pickScenario(ctx, req);
  if ('error' in picked) return sendError(ctx, req, res, picked.error);
  const messages = (body.messages as ChatMessage[]).filter(isObj) as ChatMessage[];
  const tools = (Array.isArray(body.tools) ? body.tools : []).filter(isObj) as ToolDef[];
  const action = picked.fn(turnContext(messages, tools));
  const outcome = generate(action, {
    personality: p.name,
    tools,
    toolChoice: body.tool_choice,
    ignoreRequired: options.ignoreRequired === true,
    maxTokens: maxTokens(body),
    parallelToolCalls: typeof body.parallel_tool_calls === 'boolean' ? body.parallel_tool_calls : undefined,
  });
  if (action.delayMs) await sleep(action.delayMs);
  if (state.closed) return;
  if (outcome.kind === 'error') return sendError(ctx, req, res, outcome.error);
  const gen = outcome.generation;
  const meta = buildMeta(ctx, body, gen);
  ctx.stats.promptTokens += meta.promptTokens;
  ctx.stats.generationTokens += meta.completionTokens;
  ctx.stats.ttftSeconds.push((action.delayMs ?? 0) / 1000);
  if (body.stream === true) {
    const events = p.chunks(gen, meta).map(sseEvent);
    if (gen.midStreamError) {
      const { event, done } = p.midStreamError(gen.midStreamError);
      events.push(sseEvent(event));
      if (done) events.push(sseEvent('[DONE]'));
    } else {
      events.push(sseEvent('[DONE]'));
    }
    return writeSse(res, p.okHeaders('sse', origin(req)), events, action, state, p.name === 'llama-server');
  }
  if (hangOrDie(res, action)) return;
  if (gen.midStreamError) return sendError(ctx, req, res, gen.midStreamError);
  sendJson(res, 200, p.okHeaders('json', origin(req)), p.completion(gen, meta));
}

function buildMeta(ctx: Ctx, body: Obj, gen: Generation): ResponseMeta {
  const pieces =
    splitTokens(gen.content).length +
    (gen.reasoning ? splitTokens(gen.reasoning).length : 0) +
    gen.calls.reduce((a, c) => a + splitTokens(c.arguments).length + 3, 0);
  return {
    id: ctx.p.completionId(),
    created: Math.floor(Date.now() / 1000),
    model: ctx.p.modelName(ctx.options),
    promptTokens: promptTokens(body),
    completionTokens: Math.max(1, pieces),
    includeUsage: includeUsage(body),
    toolCallIds: gen.calls.map(() => ctx.p.toolCallId()),
    reasoningField:
      ctx.p.name === 'vllm' ? (ctx.options.reasoningField ?? 'reasoning_content') : 'reasoning_content',
    logprobs: body.logprobs === true ? (typeof body.top_logprobs === 'number' ? body.top_logprobs : 0) : null,
  };
}

async function handleCompletions(
  ctx: Ctx,
  req: IncomingMessage,
  res: ServerResponse,
  body: Obj,
  state: StreamState,
) {
  const prompt = Array.isArray(body.prompt) ? body.prompt.join('\n') : String(body.prompt ?? '');
  const picked = pickScenario(ctx, req);
  if ('error' in picked) return sendError(ctx, req, res, picked.error);
  const action = picked.fn(turnContext([{ role: 'user', content: prompt }], []));
  const outcome = generate(action, {
    personality: ctx.p.name,
    tools: [],
    toolChoice: undefined,
    ignoreRequired: true,
    maxTokens: maxTokens(body),
  });
  if (action.delayMs) await sleep(action.delayMs);
  if (outcome.kind === 'error') return sendError(ctx, req, res, outcome.error);
  const text = completionText(outcome.generation);
  const meta = {
    id: completionId(ctx.p.name),
    created: Math.floor(Date.now() / 1000),
    model: ctx.p.modelName(ctx.options),
    promptTokens: Math.max(1, countTokens(prompt)),
    includeUsage: includeUsage(body),
  };
  const finish = outcome.generation.finish === 'length' ? 'length' : 'stop';
  if (body.stream === true) {
    const events = [...textCompletionChunks(text, finish, meta).map(sseEvent), sseEvent('[DONE]')];
    return writeSse(res, ctx.p.okHeaders('sse', origin(req)), events, action, state);
  }
  sendJson(res, 200, ctx.p.okHeaders('json', origin(req)), textCompletion(text, finish, meta));
}

function handleEmbeddings(ctx: Ctx, req: IncomingMessage, res: ServerResponse, body: Obj) {
  const input = body.input;
  const inputs = Array.isArray(input)
    ? input.map((x) => (typeof x === 'string' ? x : JSON.stringify(x)))
    : [String(input ?? '')];
  const created = Math.floor(Date.now() / 1000);
  const payload = embeddingsResponse(
    inputs,
    ctx.options.embeddingDims ?? 16,
    ctx.p.modelName(ctx.options),
    ctx.p.name,
    created,
  );
  sendJson(res, 200, ctx.p.okHeaders('json', origin(req)), payload);
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
const GET_ROUTES = new Set(['/v1/models', '/health', '/metrics']);

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
  const known = path in POST_ROUTES || GET_ROUTES.has(path);
  const kind = method === 'POST' ? POST_ROUTES[path] : undefined;
  const isGet = method === 'GET' && GET_ROUTES.has(path);
  if (!kind && !isGet) {
    const nf = p.routeNotFound(known);
    return sendJson(res, nf.status, p.errorHeaders(origin(req)), nf.body);
  }
  if (isGet) {
    if (path === '/health') {
      const h = p.health();
      return sendJson(res, h.status, p.okHeaders('json', origin(req)), h.body);
    }
    if (path === '/v1/models') {
      return sendJson(
        res,
        200,
        p.okHeaders('json', origin(req)),
        p.models(options, Math.floor(Date.now() / 1000)),
      );
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
  if (kind === 'chat') return handleChat(ctx, req, res, body, state);
  if (kind === 'completions') return handleCompletions(ctx, req, res, body, state);
  return handleEmbeddings(ctx, req, res, body);
}

export async function startSimulator(options: SimulatorOptions): Promise<Simulator> {
  const ctx: Ctx = {
    options,
    p: options.personality === 'vllm' ? vllm : llamaServer,
    scenario: resolveScenario(options.scenario ?? 'demo'),
    stats: { running: 0, promptTokens: 0, generationTokens: 0, requests: 0, ttftSeconds: [], e2eSeconds: [] },
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
