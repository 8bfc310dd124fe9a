/**
 * Every route toolproof does not own (/tokenize, /detokenize, /v1/rerank,
 * /v1/score, /pooling, /v1/audio/*, ...) is relayed to the model's upstream as it is: method,
 * path, query, body bytes and content type in; status, headers (minus hop-by-hop) and the body
 * streamed with backpressure out. A proxy must not take capabilities away from its backend.
 * Auth, timeouts, abort on disconnect and the log line come from app.ts like any route.
 */
import { Readable } from 'node:stream';
import { performance } from 'node:perf_hooks';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Dispatcher } from 'undici';
import { ToolproofError } from '../../protocol/errors.js';
import { MAX_REQUEST_DEPTH, tooDeepError, tooDeepPath } from '../../protocol/json-depth.js';
import { excessKeys, keyExcessError } from '../../protocol/json-keys.js';
import { keepSourceText, stringifyJson } from '../../protocol/lossless-json.js';
import { RequestAbort } from '../abort.js';
import type { AppState } from '../app-state.js';
import type { UpstreamTarget } from '../config.js';
import { bodyErrorKind, tooLarge } from '../chat/attempt.js';
import { dropAfterDone } from '../chat/stream-read.js';
import { cutWhenUnread } from '../drain.js';
import { allowsModel, countAgainstKey, forbiddenModel } from '../keys.js';
import { resolveRoute } from '../routing.js';
import { formModels, type ModelSpan, queryModels } from './form-model.js';
import { HOP_BY_HOP_HEADERS } from '../hop-by-hop.js';
import { canonicalTarget, misspeltOwnRoute } from '../request-target.js';
import { chatErrorEvent, openAIErrorBody } from '../front-doors/chat/errors.js';
import { anthropicErrorBody } from '../front-doors/messages/errors.js';
import { SseDoneScan } from '../sse-done.js';
import { toCutError, type UpstreamClient, type UpstreamResponse } from '../upstream.js';

const METHODS: Dispatcher.HttpMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
/** The most bytes of a declared length read whole before the status goes out (one a request). */
const WHOLE_BODY = 1 << 20;
/** A request's refusals that are toolproof's own, not the upstream's failures. */
const OWN_REFUSALS = new Set(['TP_ERR_QUEUE_FULL', 'TP_ERR_QUEUE_TIMEOUT', 'TP_ERR_UNAUTHORIZED']);
/** Methods that only read: not counted against a key's limits. */
const READS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** RFC 9110 §9.2.2: the methods a request can be repeated with. */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

/** Never forwarded upstream: hop-by-hop, recomputed, or the client's own credentials. */
const DROP_REQUEST_HEADERS = new Set<string>([
  ...HOP_BY_HOP_HEADERS,
  'proxy-authorization',
  'host',
  'content-length',
  'expect',
  // The client's key is for toolproof; the upstream gets its own (UpstreamClient adds it).
  'authorization',
  'x-api-key',
  'cookie',
  'x-request-id',
  // Set below as a reverse proxy sets them (see forwardedHeaders), never the client's alone.
  'x-forwarded-for',
  'x-real-ip',
  'forwarded',
]);

const DROP_RESPONSE_HEADERS = new Set<string>([
  ...HOP_BY_HOP_HEADERS,
  // The upstream's own, not the client's (docs/security.md): cookies it sets would land on
  // toolproof's origin (and the client's cookies never reach it); its challenge asks for the
  // upstream's credential, which toolproof holds, not the client; its software and version
  // help only who fingerprints it; its alternative services are its own, not toolproof's.
  'set-cookie',
  'www-authenticate',
  'server',
  'x-powered-by',
  'alt-svc',
]);

/** Only the built-in simulator understands it; a real upstream must not see test plumbing. */
const SIMULATOR_HEADER = 'x-sim-scenario';

/**
 * The client's request target -> the path to send upstream: its canonical form
 * (server/request-target.ts), the one the router judged, so the path can only name on the
 * upstream's origin what the router did not serve itself ("//v1/chat/completions" was read as
 * the host "v1" and sent as "/chat/completions"). "/v1/x" maps to the upstream's base URL +
 * "/x"; any other path to its origin + path.
 */
export function upstreamPathFor(requestTarget: string): { path: string; fromOrigin: boolean } {
  const target = canonicalTarget(requestTarget);
  if (target === '/v1' || target.startsWith('/v1/') || target.startsWith('/v1?'))
    return { path: target.slice(3), fromOrigin: false };
  return { path: target, fromOrigin: true };
}

/**
 * Where a body that may be a JSON object begins: past a UTF-8 byte-order mark and JSON's
 * whitespace, at its `{`; -1 when it begins otherwise (not JSON, or not an object).
 */
function objectStart(body: Buffer): number {
  let i = body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? 3 : 0;
  while (i < body.length && (body[i] === 0x20 || body[i] === 0x0a || body[i] === 0x0d || body[i] === 0x09))
    i++;
  return body[i] === 0x7b ? i : -1;
}

/**
 * The body as JSON when it is a JSON object (its `model` picks the upstream, and a key's
 * allow-list judges it), else undefined: a body that is not JSON is not ours to judge (the
 * upstream answers malformed bodies itself). Read whatever its content type says, past a
 * byte-order mark: llama-server parses a body whatever its label and skips a mark, and an
 * upstream serving several models (its router, llama-swap) picks one by this field, so a body
 * toolproof left unread (JSON sent as text/plain) took a key held to one model to any other.
 * Scanned before the parse as on the front doors (app.ts): JSON.parse pays for every distinct
 * key and level of nesting on the event loop (1M keys held it 5 s here), so such a body is
 * refused with the front doors' 400.
 */
function jsonObjectOf(
  request: FastifyRequest,
): { parsed: Record<string, unknown>; source: Buffer } | undefined {
  const whole = request.body;
  if (!Buffer.isBuffer(whole) || whole.length === 0) return undefined;
  const start = objectStart(whole);
  if (start < 0) return undefined;
  const body = start === 0 ? whole : whole.subarray(start);
  const excess = excessKeys(body);
  if (excess !== null) throw keyExcessError(excess);
  try {
    const parsed = JSON.parse(body.toString('utf8')) as unknown;
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed)
      ? { parsed: parsed as Record<string, unknown>, source: body }
      : undefined;
  } catch {
    return undefined; // not ours to judge: the upstream answers malformed bodies itself
  }
}

/**
 * The body with its model renamed; everything else (numbers, key order) as the client wrote it.
 * Written again by toolproof, so nested no deeper than a front door's body may be (the writer
 * recurses: 10k levels were a 500).
 */
function renamed(parsed: Record<string, unknown>, raw: Buffer, model: string): string {
  const tooDeep = tooDeepPath(parsed, MAX_REQUEST_DEPTH);
  if (tooDeep !== null) throw tooDeepError(tooDeep);
  keepSourceText(parsed, raw);
  return stringifyJson({ ...parsed, model }, parsed);
}

/** The upstream when the body names no model: the default one, or the only one configured. */
function fallbackTarget(state: AppState): UpstreamTarget | undefined {
  if (state.config.defaultUpstream) return state.config.defaultUpstream;
  const targets = Object.values(state.config.models).map((m) => m.upstream);
  const first = targets[0];
  if (first && targets.every((t) => t.urls.join(',') === first.urls.join(',') && t.apiKey === first.apiKey))
    return first;
  return undefined;
}

interface Target {
  client: UpstreamClient;
  model: string;
  body: Buffer | undefined;
}

function pickTarget(state: AppState, request: FastifyRequest): Target {
  const raw = Buffer.isBuffer(request.body) && request.body.length > 0 ? request.body : undefined;
  const json = jsonObjectOf(request);
  const parsed = json?.parsed;
  const model = parsed?.model;
  const key = request.tpKey;
  // A key held to some models: a body that opens as a JSON object but does not parse here is not
  // relayed unjudged. Python's json reads what JSON.parse refuses (NaN, Infinity), so vLLM would
  // serve whatever model such a body names (a LoRA adapter, a router's other model).
  if (key?.models !== undefined && raw !== undefined && json === undefined && objectStart(raw) >= 0)
    throw new ToolproofError('TP_ERR_INVALID_JSON', {
      message: `The request body opens as a JSON object but is not valid JSON: the API key "${key.name}" may use only some models, and this body's model cannot be read.`,
    });
  // Go's FormValue (llama-swap's router for forms) reads the query when the form names no model.
  if (key?.models !== undefined) {
    for (const asked of queryModels(request.url)) {
      if (allowsModel(key, asked)) continue;
      state.metrics.keyRefusals.labels(key.name, 'model').inc();
      throw forbiddenModel(key, asked);
    }
  }
  // A form (/v1/audio/*) names its model in a field: judged and routed by it as a JSON body is.
  const form =
    json === undefined && raw !== undefined ? formModels(request.headers['content-type'], raw) : undefined;
  if (form && 'unreadable' in form) {
    if (key?.models !== undefined)
      throw new ToolproofError('TP_ERR_INVALID_FIELD', {
        param: 'model',
        message: `The form's model cannot be read (${form.unreadable}): the API key "${key.name}" may use only some models.`,
      });
  } else if (form) return formTarget(state, request, raw!, form);
  // A key with an allow-list reaches other paths only for its models (or without a model).
  if (key && typeof model === 'string' && model && !allowsModel(key, model)) {
    state.metrics.keyRefusals.labels(key.name, 'model').inc();
    throw forbiddenModel(key, model);
  }
  if (typeof model === 'string' && model) {
    const route = resolveRoute(state.config, state.upstreams, model, state.modelLabels, key);
    // A renamed model is renamed here too, as on the chat route.
    const body =
      route.upstreamModel && json ? Buffer.from(renamed(json.parsed, json.source, route.upstreamModel)) : raw;
    return { client: route.client, model: route.name, body };
  }
  return defaultTarget(state, request, raw);
}

/**
 * A form's target: every model field it holds must be one of the key's (an upstream reads the
 * first or the last), all of them the same model to pick one upstream, renamed where that
 * model's upstream knows it by another name.
 */
function formTarget(
  state: AppState,
  request: FastifyRequest,
  raw: Buffer,
  form: { models: string[]; spans: ModelSpan[] },
): Target {
  const key = request.tpKey;
  for (const model of form.models) {
    if (key && !allowsModel(key, model)) {
      state.metrics.keyRefusals.labels(key.name, 'model').inc();
      throw forbiddenModel(key, model);
    }
  }
  const model = form.models[0];
  if (!model) return defaultTarget(state, request, raw);
  if (form.models.some((m) => m !== model))
    throw new ToolproofError('TP_ERR_INVALID_FIELD', {
      param: 'model',
      message: 'The form names more than one model; send one "model" field.',
    });
  let route: ReturnType<typeof resolveRoute>;
  try {
    route = resolveRoute(state.config, state.upstreams, model, state.modelLabels, key);
  } catch (err) {
    // A model toolproof does not map goes where forms went before their model was read: the
    // default upstream, or the only one (an audio model configured only there).
    if (err instanceof ToolproofError && err.code === 'TP_ERR_MODEL_NOT_FOUND')
      return defaultTarget(state, request, raw);
    throw err;
  }
  const upstreamModel = route.upstreamModel;
  if (!upstreamModel) return { client: route.client, model: route.name, body: raw };
  const pieces: Buffer[] = [];
  let at = 0;
  for (const span of form.spans) {
    pieces.push(raw.subarray(at, span.start), Buffer.from(span.encode(upstreamModel)));
    at = span.end;
  }
  pieces.push(raw.subarray(at));
  return { client: route.client, model: route.name, body: Buffer.concat(pieces) };
}

function defaultTarget(state: AppState, request: FastifyRequest, raw: Buffer | undefined): Target {
  const target = fallbackTarget(state);
  if (!target) {
    throw new ToolproofError('TP_ERR_INVALID_FIELD', {
      param: 'model',
      message: `Cannot tell which upstream serves ${request.method} ${request.url.split('?')[0]}: send a JSON body with a configured "model", or set TOOLPROOF_UPSTREAM_URL as the default upstream.`,
    });
  }
  return { client: state.upstreams.for(target), model: '', body: raw };
}

/** The peer's address as a proxy names it (IPv4-mapped IPv6 addresses as plain IPv4). */
function peerAddress(request: FastifyRequest): string | undefined {
  const address = request.socket.remoteAddress;
  return address?.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}

/**
 * X-Forwarded-For, Forwarded and X-Real-IP as a reverse proxy sets them: the peer that connected
 * to toolproof is appended to the client's X-Forwarded-For and Forwarded chains (the last entry
 * is the one toolproof vouches for; earlier ones are whatever the client or proxies before it
 * said), and X-Real-IP is the peer, whatever the client wrote.
 */
export function forwardedHeaders(
  headers: FastifyRequest['headers'],
  peer: string | undefined,
  proto: 'http' | 'https',
): Record<string, string> {
  const out: Record<string, string> = {};
  if (!peer) return out;
  const joined = (v: string | string[] | undefined) => (Array.isArray(v) ? v.join(', ') : v);
  const xff = joined(headers['x-forwarded-for'])?.trim();
  out['x-forwarded-for'] = xff ? `${xff}, ${peer}` : peer;
  // RFC 7239: an IPv6 node is quoted and bracketed.
  const node = peer.includes(':') ? `"[${peer}]"` : peer;
  const forwarded = joined(headers.forwarded)?.trim();
  const element = `for=${node};proto=${proto}`;
  out.forwarded = forwarded ? `${forwarded}, ${element}` : element;
  out['x-real-ip'] = peer;
  return out;
}

function forwardHeaders(request: FastifyRequest, simulator: boolean): Record<string, string> {
  const out: Record<string, string> = {
    'x-request-id': request.id,
    ...forwardedHeaders(request.headers, peerAddress(request), request.protocol),
  };
  const connection = String(request.headers.connection ?? '').toLowerCase();
  const named = new Set(connection.split(',').map((h) => h.trim()));
  for (const [name, value] of Object.entries(request.headers)) {
    if (DROP_REQUEST_HEADERS.has(name) || named.has(name) || value === undefined) continue;
    if (name === SIMULATOR_HEADER && !simulator) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  // Tracing on: the upstream's span nests under toolproof's server span, not beside it.
  request.tpSpan?.inject(out);
  return out;
}

function responseHeaders(
  headers: Record<string, string | string[] | undefined>,
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const named = new Set(
    String(headers.connection ?? '')
      .toLowerCase()
      .split(',')
      .map((h) => h.trim()),
  );
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || DROP_RESPONSE_HEADERS.has(name) || named.has(name)) continue;
    // Which browser origins may read an answer is toolproof's to say (server/cors.ts), on this
    // route as on any: vLLM allows every origin that asks ("*"), whatever the operator allowed.
    if (name.startsWith('access-control-')) continue;
    // The request's id is toolproof's (app.ts sets it on every response, the same one it sent
    // upstream, on the log line, in the inspector), and so are its own headers: an upstream's
    // x-request-id written over it gave the client an id no record of toolproof's holds.
    if (name === 'x-request-id' || name.startsWith('x-toolproof-')) continue;
    out[name] = value;
  }
  return out;
}

/**
 * The models a path names for llama-swap's `/upstream/<model>/...` (its direct access to one
 * model's server, past its router): the first segment after `/upstream/`, as it is and decoded
 * (a `%2F` in it may be read as a slash). Empty when the path is no such path.
 */
export function upstreamPathModels(path: string): string[] {
  const m = /^\/upstream\/+([^/?]*)/.exec(path);
  if (!m) return [];
  let decoded = m[1]!;
  try {
    decoded = decodeURIComponent(decoded);
  } catch {
    // kept as it is: judged as written
  }
  return [...new Set([m[1]!, decoded, decoded.split('/')[0]!])];
}

async function relay(state: AppState, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  // `OPTIONS *` (or an authority-form target) names no path to relay: undici refused it, and the
  // client read "the upstream is unreachable" (a 502).
  if (!request.url.startsWith('/'))
    throw new ToolproofError('TP_ERR_INVALID_FIELD', {
      message: `The request target ${JSON.stringify(request.url.slice(0, 200))} is not a path: toolproof relays paths only.`,
    });
  const misspelt = misspeltOwnRoute(request.url.split('?')[0] ?? '');
  if (misspelt !== undefined) {
    const err = new ToolproofError('TP_ERR_NOT_FOUND', {
      message: `Not served: ${request.method} ${request.url.split('?')[0]!.slice(0, 200)}. toolproof's own paths are spelt in lower case without ;parameters (/v1/chat/completions, /v1/responses, /v1/messages, /v1/models, /inspect).`,
    });
    request.tpError = err;
    return reply
      .code(404)
      .type('application/json; charset=utf-8')
      .send(misspelt === 'messages' ? anthropicErrorBody(err) : openAIErrorBody(err));
  }
  const { path, fromOrigin } = upstreamPathFor(request.url);
  // llama-swap serves any of its models at /upstream/<model>/..., its router and the body's model
  // unread: a key held to some models reached every other one there.
  const key = request.tpKey;
  if (key?.models !== undefined) {
    for (const named of upstreamPathModels(path)) {
      if (allowsModel(key, named)) continue;
      state.metrics.keyRefusals.labels(key.name, 'model').inc();
      throw forbiddenModel(key, named);
    }
  }
  const target = pickTarget(state, request);
  // What the upstream runs (rerank, score, audio, ...) uses the key's limits; a read does not.
  const controller = new RequestAbort();
  request.tpAbort = controller;
  if (!READS.has(request.method)) {
    const waiting = countAgainstKey(request, state.keyLimits, state.metrics, controller);
    if (waiting) await waiting;
  }
  request.tp = { model: target.model, upstream: target.client.label, stream: false, api: 'passthrough' };
  // Its failures are counted as the front doors' and the relays' are (toolproof_upstream_errors_total):
  // uncounted, a backend failing every rerank or transcription showed nowhere but as statuses.
  const failed = (kind: string) =>
    state.metrics.upstreamErrors.labels(target.model, target.client.label, kind).inc();
  const started = performance.now();
  const res = await target.client
    .request({
      method: request.method as Dispatcher.HttpMethod,
      path,
      fromOrigin,
      ...(target.body ? { body: target.body } : {}),
      headers: forwardHeaders(request, state.config.simulator),
      signal: controller,
      // Sent again after a stale keep-alive connection only when the method says it may be.
      replayable: IDEMPOTENT.has(request.method),
    })
    .catch((err: unknown) => {
      // The client leaving, or toolproof's own refusal, is no upstream failure (as routes/relay.ts).
      const code = (err as ToolproofError).code;
      if (!controller.aborted && !OWN_REFUSALS.has(code))
        failed(code === 'TP_ERR_UPSTREAM_TIMEOUT' ? 'timeout' : 'unreachable');
      throw err;
    });
  if (res.status >= 400) failed(res.status >= 500 ? 'status_5xx' : 'status_4xx');
  state.metrics.hot
    .upstreamDuration(target.model, 'passthrough', target.client.label)
    .observe((performance.now() - started) / 1000);
  const headers = responseHeaders(res.headers);
  if (res.status === 204 || res.status === 304 || request.method === 'HEAD') {
    await res.body.dump();
    return reply.code(res.status).headers(headers).send();
  }
  request.tp.stream = String(headers['content-type'] ?? '')
    .toLowerCase()
    .startsWith('text/event-stream');
  // A small body of declared length (a rerank's scores, /tokenize's ids) is read whole before its
  // status goes out: cut mid-way, the client gets a 502 in the API's shape, not a short body on a
  // connection cut under a 200. Larger or chunked bodies (audio, a file), and bodies whose echoed
  // keys are replaced (another length), stream as they come. At most 1 MiB held a request.
  const declared = res.body.declaredLength;
  if (!request.tp.stream && !res.body.rewritten && declared >= 0 && declared <= WHOLE_BODY) {
    let whole: Buffer | null;
    try {
      whole = await res.body.bytes(WHOLE_BODY);
    } catch (err) {
      const cut = toCutError(err, target.client.label, 'the response body');
      if (cut instanceof ToolproofError && !controller.aborted) failed(bodyErrorKind(cut));
      throw cut;
    }
    // More than it declared: undici refuses that as it reads, so never here; refused all the same.
    if (whole === null) {
      failed('bad_response');
      throw tooLarge(target.client.label);
    }
    cutWhenUnread(reply.raw, state.config.clientTimeouts.requestMs);
    return reply.code(res.status).headers(headers).send(whole);
  }
  const body = saysCut(request.tp.stream ? untilDone(res) : res.body, request.tp.stream, (err) => {
    if (controller.aborted) return undefined;
    const cut = toCutError(err, target.client.label, request.tp?.stream ? 'the stream' : 'the response body');
    const e =
      cut instanceof ToolproofError ? cut : new ToolproofError('TP_ERR_UPSTREAM_CUT_OFF', { cause: err });
    failed(request.tp?.stream ? 'mid_stream' : bodyErrorKind(e));
    request.tpError = e;
    return e;
  });
  // The upstream's length counts its own bytes: an event stream cut at its [DONE], or a body
  // whose echoed key was replaced, is another length. Sent with it, the client waited for bytes
  // that never came (a key longer than its marker) or read the rest as the next response.
  if (request.tp.stream || res.body.rewritten) delete headers['content-length'];
  // Fastify pipes the body with backpressure and destroys it if the client goes away (the
  // iterator's return() cancels the upstream request); its error listener keeps a failing
  // upstream body from crashing us. A client that stays connected and reads nothing is cut as
  // gone (server/drain.ts): it held the upstream request, a backend slot, for good.
  cutWhenUnread(reply.raw, state.config.clientTimeouts.requestMs);
  return reply
    .code(res.status)
    .headers(headers)
    .send(Readable.from(body, { objectMode: false }));
}

/**
 * `body` as it comes, and its cut (the upstream's read failing after the status went out) said:
 * `cut` names it (undefined: the client left, nothing to say). An event stream ends with the
 * OpenAI error event and `[DONE]`, as the relays end a cut stream (routes/relay.ts), and ends
 * whole: before, its last event came and the connection closed, which an SSE client reads as the
 * stream's end, the answer silently short. Any other body has no place for words once its status
 * and its first bytes are out: its error is thrown on, and the socket is destroyed with the chunked
 * body unterminated (no last chunk), the one way HTTP/1.1 says a body of unknown length is not
 * whole (fetch's `terminated`); a last chunk would have made the torn body look complete.
 */
function saysCut(
  body: AsyncIterable<Buffer>,
  stream: boolean,
  cut: (err: unknown) => ToolproofError | undefined,
): AsyncIterable<Buffer> {
  const reads = body[Symbol.asyncIterator]();
  let over = false;
  const iterator: AsyncIterator<Buffer, undefined> = {
    next: async () => {
      if (over) return { done: true, value: undefined };
      try {
        return await reads.next();
      } catch (err) {
        const said = cut(err);
        if (!stream || said === undefined) throw err;
        over = true;
        return { done: false, value: Buffer.from(`\n\n${chatErrorEvent(said)}`) };
      }
    },
    return: () => reads.return?.() ?? Promise.resolve({ done: true, value: undefined }),
  };
  return { [Symbol.asyncIterator]: () => iterator };
}

/**
 * An event stream's bytes up to the end of its `[DONE]` event, as they came; the rest is the
 * upstream's, not the client's (read and dropped in the background, as on the front doors: an
 * upstream that kept its connection open after [DONE] held the client's response open until
 * the idle timeout). A plain iterator, as the body's own: its return() (the client gone) must
 * cancel the upstream request at once, even while a read waits, which a generator's cannot.
 */
function untilDone(res: UpstreamResponse): AsyncIterable<Buffer> {
  const reads = res.body[Symbol.asyncIterator]();
  const scan = new SseDoneScan();
  const over = { done: true, value: undefined } as const;
  const iterator: AsyncIterator<Buffer, undefined> = {
    next: async () => {
      if (scan.done) return over;
      const read = await reads.next();
      if (read.done) return read;
      const end = scan.push(read.value);
      if (end < 0) return read;
      dropAfterDone(res);
      return { done: false, value: end === read.value.length ? read.value : read.value.subarray(0, end) };
    },
    return: () => (scan.done ? Promise.resolve(over) : (reads.return?.() ?? Promise.resolve(over))),
  };
  return { [Symbol.asyncIterator]: () => iterator };
}

/** Registered in its own context: here bodies are bytes of any type, never parsed as JSON. */
export async function registerPassthroughRoutes(
  app: FastifyInstance,
  options: { state: AppState },
): Promise<void> {
  const { state } = options;
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  app.route({
    method: METHODS,
    url: '*',
    schema: { hide: true },
    handler: (request, reply) => relay(state, request, reply),
  });
}
