/**
 * Request handlers for the model endpoints (chat, completions, embeddings): scenario choice,
 * generation, and the stream / non-stream answer. Routing and recording live in http-server.ts.
 */
import { windowError } from './context-window.js';
import { xgrammarError } from './xgrammar.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ChatMessage, ToolDef } from '../protocol/openai.js';
import {
  completionId,
  completionText,
  embeddingsResponse,
  textCompletion,
  textCompletionChunks,
} from './extra-endpoints.js';
import { type Generation, generate } from './generate.js';
import type { PersonalityImpl, ResponseMeta, SimError, SimStats } from './personality.js';
import { cachedTokens, type PrefixCache, renderPrompt } from './prefix-cache.js';
import { resolveScenario, turnContext } from './scenarios.js';
import type { Slots } from './slots.js';
import { type StreamState, sleep, sseEvent, writeSse } from './sse-writer.js';
import { countTokens, splitTokens } from './tokens.js';
import type { RecordedAbort, RecordedRequest, ScenarioFn, SimulatorOptions, TurnAction } from './types.js';
import { isObject as isObj } from '../protocol/is-object.js';

type Obj = Record<string, unknown>;

export const SCENARIO_HEADER = 'x-sim-scenario';

export interface Ctx {
  options: SimulatorOptions;
  p: PersonalityImpl;
  scenario: ScenarioFn;
  stats: SimStats;
  requests: RecordedRequest[];
  aborts: RecordedAbort[];
  /** This replica's prefix cache, unless turned off. */
  prefixCache: PrefixCache | undefined;
  /** The slot model, when configured. */
  slots: Slots | undefined;
}

export function origin(req: IncomingMessage): string | undefined {
  const o = req.headers.origin;
  return typeof o === 'string' ? o : undefined;
}

export function sendJson(
  res: ServerResponse,
  status: number,
  headers: Record<string, string>,
  body: unknown,
): void {
  const text = body === null ? '' : JSON.stringify(body);
  res.writeHead(status, { ...headers, 'Content-Length': String(Buffer.byteLength(text)) });
  res.end(text);
}

export function sendError(ctx: Ctx, req: IncomingMessage, res: ServerResponse, err: SimError): void {
  if (err.plain) {
    res.writeHead(err.status, { 'content-type': 'text/plain; charset=utf-8' });
    res.end(err.message);
    return;
  }
  sendJson(res, err.status, ctx.p.errorHeaders(origin(req)), ctx.p.errorBody(err, ctx.options));
}

function maxTokens(body: Obj): number | null {
  const v = body.max_completion_tokens ?? body.max_tokens;
  return typeof v === 'number' && v > 0 ? v : null;
}

/** The request's `stop`: a string or a list of strings (anything else: none). */
function stopStrings(body: Obj): string[] {
  const v = body.stop;
  if (typeof v === 'string') return [v];
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
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

export async function handleChat(
  ctx: Ctx,
  req: IncomingMessage,
  res: ServerResponse,
  body: Obj,
  state: StreamState,
  record: RecordedRequest,
) {
  const { p, options } = ctx;
  const invalid =
    p.validateChat(body, options) ??
    windowError(body, options) ??
    (p.name === 'vllm' && options.guidedBackend === 'xgrammar' ? xgrammarError(body) : null);
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
    stop: stopStrings(body),
    parallelToolCalls: typeof body.parallel_tool_calls === 'boolean' ? body.parallel_tool_calls : undefined,
    responseFormat: body.response_format,
    formatSuppressesTools: options.formatSuppressesTools === true,
  });
  if (action.delayMs) await sleep(action.delayMs);
  if (state.closed) return;
  if (outcome.kind === 'error') return sendError(ctx, req, res, outcome.error);
  const gen = outcome.generation;
  // The slot model: wait for a slot (FIFO), hold it until the response ends or the client leaves.
  let behaviour: TurnAction = action;
  if (ctx.slots) {
    const release = await ctx.slots.acquire();
    res.once('close', release);
    if (state.closed) return release();
    const ms = ctx.slots.options.msPerToken;
    if (ms) behaviour = { ...action, chunkDelayMs: ms };
  }
  // The cache is consulted once the request is admitted (a rejected one never reached the model).
  const prompt = cachedTokens(ctx.prefixCache, renderPrompt(body.tools, body.messages));
  const prefill = ctx.slots?.options.prefillMsPerToken;
  if (prefill) {
    await sleep((prompt.prompt - prompt.cached) * prefill);
    if (state.closed) return;
  }
  const n = choiceCount(p, body, gen);
  const meta = buildMeta(ctx, body, gen, prompt, n);
  record.promptTokens = prompt.prompt;
  record.cachedTokens = prompt.cached;
  ctx.stats.promptTokens += meta.promptTokens;
  ctx.stats.cachedTokens += meta.cachedTokens;
  ctx.stats.generationTokens += meta.completionTokens;
  ctx.stats.ttftSeconds.push((action.delayMs ?? 0) / 1000);
  if (body.stream === true) {
    const events = (n > 1 ? fanOutChunks(ctx, gen, meta, n) : p.chunks(gen, meta)).map(sseEvent);
    if (gen.midStreamError) {
      const { event, done } = p.midStreamError(gen.midStreamError);
      events.push(sseEvent(event));
      if (done) events.push(sseEvent('[DONE]'));
    } else {
      events.push(sseEvent('[DONE]'));
    }
    return writeSse(
      res,
      p.okHeaders('sse', origin(req)),
      events,
      behaviour,
      state,
      p.name === 'llama-server',
    );
  }
  if (hangOrDie(res, action)) return;
  if (gen.midStreamError) return sendError(ctx, req, res, gen.midStreamError);
  sendJson(
    res,
    200,
    p.okHeaders('json', origin(req)),
    n > 1 ? fanOutCompletion(ctx, gen, meta, n) : p.completion(gen, meta),
  );
}

/** Most choices one request may ask for (vLLM has no cap of its own but the batch). */
const MAX_CHOICES = 16;

/**
 * How many choices to answer: vLLM samples `n` (llama-server refuses n != 1 in validation).
 * Every choice is the scripted generation, each with tool call ids of its own.
 */
function choiceCount(p: PersonalityImpl, body: Obj, gen: Generation): number {
  if (p.name !== 'vllm' || gen.midStreamError) return 1;
  const n = body.n;
  return typeof n === 'number' && Number.isInteger(n) && n > 1 ? Math.min(n, MAX_CHOICES) : 1;
}

/** Choice `index`'s meta: its own tool call ids. */
function metaOfChoice(ctx: Ctx, gen: Generation, meta: ResponseMeta, index: number): ResponseMeta {
  return index === 0 ? meta : { ...meta, toolCallIds: gen.calls.map(() => ctx.p.toolCallId()) };
}

function fanOutCompletion(ctx: Ctx, gen: Generation, meta: ResponseMeta, n: number): unknown {
  const body = ctx.p.completion(gen, meta) as { choices: Obj[] };
  for (let i = 1; i < n; i++) {
    const other = ctx.p.completion(gen, metaOfChoice(ctx, gen, meta, i)) as { choices: Obj[] };
    body.choices.push({ ...other.choices[0], index: i });
  }
  return body;
}

/** vLLM interleaves the choices' chunks, each chunk one choice; the usage chunk comes last. */
function fanOutChunks(ctx: Ctx, gen: Generation, meta: ResponseMeta, n: number): unknown[] {
  const lists = Array.from({ length: n }, (_, i) =>
    (ctx.p.chunks(gen, metaOfChoice(ctx, gen, meta, i)) as Obj[]).filter((c) => {
      const choices = c.choices;
      return Array.isArray(choices) && choices.length > 0;
    }),
  );
  const usage = (ctx.p.chunks(gen, meta) as Obj[]).filter(
    (c) => Array.isArray(c.choices) && c.choices.length === 0,
  );
  const out: unknown[] = [];
  const longest = Math.max(...lists.map((l) => l.length));
  for (let k = 0; k < longest; k++) {
    lists.forEach((list, i) => {
      const c = list[k];
      if (!c) return;
      const choices = c.choices as Obj[];
      out.push({ ...c, choices: [{ ...choices[0], index: i }] });
    });
  }
  return [...out, ...usage];
}

function buildMeta(
  ctx: Ctx,
  body: Obj,
  gen: Generation,
  prompt: { prompt: number; cached: number },
  choices = 1,
): ResponseMeta {
  const pieces =
    splitTokens(gen.content).length +
    (gen.reasoning ? splitTokens(gen.reasoning).length : 0) +
    gen.calls.reduce((a, c) => a + splitTokens(c.arguments).length + 3, 0);
  return {
    id: ctx.p.completionId(),
    created: Math.floor(Date.now() / 1000),
    model: ctx.p.modelName(ctx.options),
    promptTokens: prompt.prompt,
    cachedTokens: prompt.cached,
    promptTokensDetails: ctx.p.name === 'llama-server' || ctx.options.promptTokensDetails === true,
    completionTokens: Math.max(1, pieces) * choices,
    includeUsage: includeUsage(body),
    toolCallIds: gen.calls.map(() => ctx.p.toolCallId()),
    reasoningField:
      ctx.p.name === 'vllm' ? (ctx.options.reasoningField ?? 'reasoning_content') : 'reasoning_content',
    logprobs: body.logprobs === true ? (typeof body.top_logprobs === 'number' ? body.top_logprobs : 0) : null,
    promptLogprobs:
      typeof body.prompt_logprobs === 'number' && Number.isInteger(body.prompt_logprobs)
        ? Math.min(Math.max(body.prompt_logprobs, 0), 20)
        : null,
  };
}

export async function handleCompletions(
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
    stop: stopStrings(body),
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

export function handleEmbeddings(ctx: Ctx, req: IncomingMessage, res: ServerResponse, body: Obj) {
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
