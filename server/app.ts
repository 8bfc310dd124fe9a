/**
 * buildApp(config) assembles the Fastify instance; it never listens (main.ts and tests do).
 */
import { Connections } from './connections.js';
import type { ServerResponse } from 'node:http';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import AjvCompiler from '@fastify/ajv-compiler';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, {
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
  LogController,
} from 'fastify';
import { ToolproofError } from '../protocol/errors.js';
import type { Usage } from '../protocol/openai.js';
import { parseJsonBody } from '../protocol/json-body.js';
import { MAX_REQUEST_DEPTH, tooDeepError, tooDeepPath } from '../protocol/json-depth.js';
import { excessKeys, keyExcessError } from '../protocol/json-keys.js';
import { POLICIES } from '../policies/registry.js';
import type { Policy } from '../policies/types.js';
import type { PolicyEffect } from '../policies/registry.js';
import { clientClosed, type RequestAbort } from './abort.js';
import type { AdmissionHooks } from './admission.js';
import type { AppState } from './app-state.js';
import { isInspectorRoute, isOpenRoute } from './auth.js';
import type { ApiKeyEntry } from './config-keys.js';
import { type KeyEnd, type KeyLimiter, KeyLimits, keyRing, OPEN_KEY } from './keys.js';
import { KeyWaits } from './key-waits.js';
import { GroupKeyLimits, groupChannel } from './group-admission.js';
import type { ChatCall } from './chat/context.js';
import { harnessOf } from './chat/harness-summary.js';
import { callUsage } from './chat/pipeline.js';
import { recordPromptCache, tokenCount } from './chat/prompt-cache.js';
import { type Config, DEFAULT_RESPONSES_STORE_MB } from './config.js';
import { decodedBody } from './content-encoding.js';
import { createCors } from './cors.js';
import {
  frameworkErrorHandler,
  handleClientError,
  noteReceiving,
  registerErrorHandling,
} from './error-handler.js';
import { FallbackMemory } from './fallback-memory.js';
import { createMetrics, type Metrics } from './metrics.js';
import { FRONT_DOORS, type FrontDoorApi } from './front-doors/index.js';
import { registerFrontDoor } from './front-doors/register.js';
import { registerModelRoutes } from './routes/models.js';
import { chatErrorEvent } from './front-doors/chat/errors.js';
import { endStreamWith, type OpenStream, OpenStreams } from './open-streams.js';
import { registerOpsRoutes } from './routes/ops.js';
import { registerPassthroughRoutes } from './routes/passthrough.js';
import { registerRelayRoutes } from './routes/relay.js';
import { redactForLog } from './log-redact.js';
import { createRequestLogger } from './request-logger.js';
import { canonicalTarget } from './request-target.js';
import { REQUEST_ID_HEADER, requestIdOf } from './request-id.js';
import { modelLabel, ServedModelLabels } from './routing.js';
import { ToolLabels } from './tool-labels.js';
import { createDocumentReader } from './documents/document-reader.js';
import type { PdfPool } from './documents/pdf-worker.js';
import { Upstreams } from './upstream.js';
import { CompileBudgets } from './compile-budget.js';
import { type RequestSpan, startTracing } from './tracing/index.js';
import { CapturingResponse, finishCapture, finishRefused } from './capture/recorder.js';
import { CaptureRing, type RecordWriter } from './capture/ring.js';
import { registerInspectRoutes } from './routes/inspect.js';
import { ResponsesItemStore } from './front-doors/responses/item-store.js';
import { relayedHere } from './relayed.js';

declare module 'fastify' {
  interface FastifyRequest {
    rawBody?: Buffer;
    /** The error this request ended with (for the log line). */
    tpError?: ToolproofError;
    /** Aborts the upstream request when the client goes away before the response ended. */
    tpAbort?: RequestAbort;
    tp?: {
      model: string;
      upstream: string;
      stream: boolean;
      call?: ChatCall;
      api?: ChatCall['api'];
      /** What the upstream reported of a relayed request (/v1/completions, /v1/embeddings). */
      usage?: Usage;
      /**
       * The upstream answered without reporting its usage (set by the log line's logRequest,
       * before the span ends): the request's tokens are unknown, not 0.
       */
      usageUnreported?: true;
    };
    tpStart: number;
    /** The request's server span (tracing on, server/tracing/). */
    tpSpan?: RequestSpan<ChatCall>;
    /** The client key the request presented (server/keys.ts); undefined when none is needed. */
    tpKey?: ApiKeyEntry;
    /** Ends the request's count against its key's limits (server/keys.ts countAgainstKey). */
    tpKeyEnd?: KeyEnd;
    /** Waiting for a slot of its key's concurrency (countAgainstKey): settled before it goes upstream. */
    tpKeyWait?: Promise<void>;
    /** The request's capture record (capture on, front doors only; docs/inspect.md). */
    tpCapture?: RecordWriter;
    /** The worker this request was relayed to (worker-relay.ts): that worker counts and logs it. */
    tpRelayed?: number;
    /**
     * Bytes of the items other workers hold placed in this request's input where its
     * item_references named them (front-doors/responses/gather.ts): counted with the references
     * and the conversation it continues against the body limit, as one worker counts them.
     */
    tpPlaced?: number;
  }
  /**
   * Every reply is its response's default OpenStream (chat framing): a method on the prototype,
   * so registering a response costs no object or closure per request.
   */
  interface FastifyReply extends OpenStream {}
}

/**
 * node's parser keeps 2,000 entries of a request's raw headers (names and values: 1,000 lines,
 * http.Server's maxHeadersCount) and drops the rest unseen: a request that fills them is refused.
 */
const MAX_HEADER_ENTRIES = 2000;

/** The inspector's 401: its page is opened in a browser, which answers the Basic challenge. */
const INSPECTOR_UNAUTHORIZED =
  'Missing or invalid API key. In a browser, give the key as the password of the sign-in prompt (any user name); from a script, send it as "Authorization: Bearer <key>".';

/**
 * Which door a request came through (a label on the request metrics and the log line): a front
 * door; `passthrough`, relayed to the upstream as it is (/v1/completions, /v1/embeddings, any
 * route toolproof does not own); or one toolproof answers itself: `models` (GET /v1/models and
 * /v1/models/{id}), `inspect` (the inspector), `ops` (health, metrics, docs).
 */
export type Api = FrontDoorApi | 'passthrough' | 'models' | 'inspect' | 'ops';

export interface BuildOptions {
  metrics?: Metrics;
  policies?: readonly Policy<PolicyEffect>[];
  /** Fastify logger option; default: pino at config.logLevel. */
  logger?: FastifyServerOptions['logger'];
  memory?: FallbackMemory;
  /**
   * Fastify's limit on one plugin's start (10 s by default); test stacks on a loaded box raise it
   * (the agent suite saw '@fastify/swagger-ui' pass 10 s at load 15 on 2 cores).
   */
  pluginTimeout?: number;
  /**
   * The PDF reader's worker threads, shared with other apps of the process (the test suite's:
   * tests/support/pdf-pool.ts); default: a pool of the app's own.
   */
  pdfPool?: PdfPool;
}

export type ToolproofApp = FastifyInstance & { toolproof: AppState };

const QUIET_ROUTES = new Set(['/health', '/metrics', '/ready', '/api/hello']);
const LOG_LEVELS: Record<string, number> = {
  trace: 10,
  debug: 20,
  info: 30,
  warn: 40,
  error: 50,
  fatal: 60,
  silent: 100,
};

/**
 * The routes' validators (a querystring, a params, the relayed bodies) compiled once per process,
 * not per app: fastify's own compiler (one Ajv per set of options), each distinct schema compiled
 * once, whichever app's route object holds it. Each app made its own Ajv, compiled Ajv's
 * meta-schema and every route schema again: 53% of the ~47 ms of CPU a warm buildApp + listen +
 * close took, and the test suite builds an app for nearly every test file, many for some. Keyed
 * by the schema's text, so a route whose schema object is made per app (an inline literal) finds
 * the validator too, and Ajv keeps no new schema object per app. A validator is a pure function
 * of its schema and the options (its `errors` are read right after each call). Given a compiler
 * factory, fastify passes a headers schema as it is, not lower-cased: no route here has one.
 */
const routeValidatorPool = AjvCompiler();
const routeValidators = new WeakMap<object, Map<string, ReturnType<AjvCompiler.ValidatorCompiler>>>();
const buildRouteValidator: AjvCompiler.ValidatorFactory = (externalSchemas, options) => {
  const compile = routeValidatorPool(externalSchemas, options);
  let byText = routeValidators.get(compile);
  if (!byText) routeValidators.set(compile, (byText = new Map()));
  const cache = byText;
  return (route) => {
    const key = JSON.stringify(route.schema);
    let validate = cache.get(key);
    if (!validate) cache.set(key, (validate = compiledOnFirstCall(() => compile(route), route.httpPart)));
    return validate;
  };
};

type RouteValidator = ReturnType<AjvCompiler.ValidatorCompiler>;

/**
 * A route's validator compiled when the route first validates a request, not when the app is
 * built: a process serves few of its routes' schemas soon, and compiling them all at start was
 * ~0.2 s of CPU in every process toolproof starts (the suite starts ~40). Fastify reads two things
 * off a validator: `schemaEnv` before the call (an Ajv validator is then passed the request as
 * the root value's parent, so a coerced root value lands there), `errors` after a failed one;
 * both are the compiled validator's own.
 */
function compiledOnFirstCall(compile: () => RouteValidator, part: string | undefined): RouteValidator {
  let compiled: RouteValidator | undefined;
  const real = () => {
    if (compiled === undefined) {
      compiled = compile();
      uncompiledBodies.delete(real);
    }
    return compiled as RouteValidator & { schemaEnv?: unknown; errors?: unknown };
  };
  if (part === 'body') uncompiledBodies.add(real);
  const validate = (data: unknown, cxt?: unknown) =>
    (real() as (d: unknown, c?: unknown) => unknown)(data, cxt);
  Object.defineProperties(validate, {
    schemaEnv: { get: () => real().schemaEnv },
    errors: { get: () => real().errors },
  });
  return validate as unknown as RouteValidator;
}

/** The request bodies' validators not compiled yet (compileBodyValidators). */
const uncompiledBodies = new Set<() => unknown>();

/**
 * Compiles now every route's body validator that a request would compile first; returns how many.
 * A worker of TOOLPROOF_WORKERS > 1 calls it before it says it listens (server/main.ts): the chat
 * body's schema (Ajv's meta-schema with it) took a cold worker's first request 0.1-0.3 s before
 * it reached the group's key queue, so a request that came later to a warm worker went first.
 */
export function compileBodyValidators(): number {
  const todo = [...uncompiledBodies];
  for (const compile of todo) compile();
  return todo.length;
}

export async function buildApp(config: Config, options: BuildOptions = {}): Promise<ToolproofApp> {
  const app = Fastify({
    logger: options.logger ?? {
      level: config.logLevel,
      redact: ['req.headers.authorization', 'req.headers["x-api-key"]'],
    },
    bodyLimit: config.bodyLimitBytes,
    ...(options.pluginTimeout !== undefined ? { pluginTimeout: options.pluginTimeout } : {}),
    // Receiving a request is bounded (a client that withholds the last byte of a large body holds
    // its buffer); node's timers cover receiving only, so long streamed responses are not cut.
    requestTimeout: config.clientTimeouts.requestMs,
    // Requests node's parser refuses are answered in the API's error shape too.
    clientErrorHandler: handleClientError,
    // A URL the router cannot decode, too.
    frameworkErrors: frameworkErrorHandler,
    http: {
      // Capture: node makes every response a CapturingResponse (server/capture/recorder.ts).
      ...(config.capture && config.capture.maxBytes > 0 ? { ServerResponse: CapturingResponse } : {}),
      headersTimeout: config.clientTimeouts.headersMs,
      // node checks these timers on an interval (30 s by default): short limits need a finer one.
      connectionsCheckingInterval: Math.max(
        50,
        Math.min(5_000, Math.floor(config.clientTimeouts.headersMs / 4)),
      ),
    },
    // request.log: its pino child is made when a request first logs (rarely), not per request.
    childLoggerFactory: createRequestLogger,
    // One line per request, written by logRequest below (with the harness trace).
    logController: new LogController({ disableRequestLogging: true }),
    // Requests that arrive while closing get TP_ERR_SHUTTING_DOWN from the onRequest hook below.
    return503OnClosing: false,
    requestIdHeader: false,
    genReqId: requestIdOf,
    // One spelling of each path, for the router and the pass-through alike (request-target.ts).
    rewriteUrl: (req) => canonicalTarget(req.url ?? '/'),
    ajv: {
      customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: false, allErrors: false },
    },
    schemaController: { compilersFactory: { buildValidator: buildRouteValidator } },
  });

  const metrics = options.metrics ?? createMetrics();
  metrics.configReloadOk.set(1);
  const upstreams = new Upstreams(
    config.timeouts,
    config.affinity,
    (upstream) => metrics.upstreamReplays.labels(upstream).inc(),
    (upstream) => admissionMetrics(metrics, upstream),
  );
  // Every configured upstream key is scrubbed from every upstream's answers from the start,
  // not only once its own upstream has been used (a reload's new keys join as they are used).
  upstreams.secrets.add(config.defaultUpstream?.apiKey);
  for (const route of Object.values(config.models)) upstreams.secrets.add(route.upstream.apiKey);
  const memory = options.memory ?? new FallbackMemory();
  const policies = options.policies ?? POLICIES;
  const dumpRaw = config.rawDumpDir
    ? (reqId: string, attempt: number, text: string) => {
        try {
          mkdirSync(config.rawDumpDir!, { recursive: true });
          writeFileSync(
            join(config.rawDumpDir!, `${reqId.replace(/[^A-Za-z0-9._-]/g, '_')}.${attempt}.txt`),
            text,
          );
        } catch (err) {
          app.log.warn({ err }, 'could not save the raw upstream response');
        }
      }
    : undefined;
  // Config built without loadConfig (tests) gets the default, as TOOLPROOF_RESPONSES_STORE_MB unset does.
  const storeBytes = config.responsesStoreBytes ?? DEFAULT_RESPONSES_STORE_MB * 1024 * 1024;
  const state: AppState = {
    config,
    metrics,
    upstreams,
    memory,
    policies,
    chatDeps: {
      config,
      upstreams,
      metrics,
      memory,
      refusals: new FallbackMemory(),
      windows: new FallbackMemory(),
      policies,
      toolLabels: new ToolLabels(200),
      compileBudgets: new CompileBudgets(),
      documents: createDocumentReader(options.pdfPool ? { pool: options.pdfPool } : {}),
      onInternalError: (call, err) => {
        metrics.internalErrors.labels(call.route.name).inc();
        app.log.error({ reqId: call.reqId, err }, 'internal error while handling a request');
      },
      ...(dumpRaw ? { dumpRaw } : {}),
    },
    modelLabels: new ServedModelLabels(),
    openStreams: new OpenStreams(),
    connections: new Connections(app.server),
    keyWaits: new KeyWaits(),
    keyLimits: keyLimiter((name, delta) =>
      delta > 0 ? metrics.keyQueueDepth.labels(name).inc() : metrics.keyQueueDepth.labels(name).dec(),
    ),
    ...(config.capture && config.capture.maxBytes > 0
      ? { capture: new CaptureRing(config.capture, true) }
      : {}),
    ...(storeBytes > 0 ? { responsesStore: new ResponsesItemStore(storeBytes) } : {}),
  };
  const store = state.responsesStore;
  if (store) metrics.followResponsesStore(() => store.bytes);
  // Loaded only when the OTEL_* variables ask for traces (config.tracing).
  const tracing = await startTracing(config.tracing, (message) => app.log.warn(message));
  if (tracing) state.tracing = tracing;
  app.decorate('toolproof', state);
  app.decorateRequest('rawBody', undefined);
  app.decorateRequest('tpAbort', undefined);
  app.decorateRequest('tpError', undefined);
  app.decorateRequest('tp', undefined);
  app.decorateRequest('tpStart', 0);
  app.decorateRequest('tpSpan', undefined);
  app.decorateRequest('tpKey', undefined);
  app.decorateRequest('tpKeyEnd', undefined);
  app.decorateRequest('tpKeyWait', undefined);
  app.decorateRequest('tpCapture', undefined);
  app.decorateRequest('tpRelayed', undefined);
  app.decorateReply('abortWithError', function (this: FastifyReply, err: ToolproofError) {
    return endStreamWith(this.raw, (e) => this.request.tpAbort?.abort(e), err, chatErrorEvent);
  });

  // Bodies are parsed once, kept raw so an untouched request is forwarded byte for byte.
  // Any content type is read as JSON: llama-server does the same, and curl users forget it.
  const parseJson = (
    request: import('fastify').FastifyRequest,
    body: Buffer,
    done: (err: Error | null, value?: unknown) => void,
  ) => {
    // Kept as bytes: an untouched request is forwarded without being encoded again.
    request.rawBody = body;
    // Counted before the parse: JSON.parse pays seconds for a million distinct keys.
    const excess = excessKeys(body);
    if (excess !== null) return done(keyExcessError(excess));
    let value: unknown;
    try {
      value = parseJsonBody(body);
    } catch (err) {
      done(
        new ToolproofError('TP_ERR_INVALID_JSON', {
          message: `The request body is not valid JSON: ${(err as Error).message}`,
          cause: err,
        }),
      );
      return;
    }
    // Every front door, on the client's own field names: a body nested past the bound would
    // overflow the stack later (JSON.stringify on the way upstream, recursive translation).
    const tooDeep = tooDeepPath(value, MAX_REQUEST_DEPTH);
    if (tooDeep !== null) return done(tooDeepError(tooDeep));
    done(null, value);
  };
  // A compressed body is decoded before any parser reads it (server/content-encoding.ts).
  app.addHook('preParsing', (request, _reply, payload, done) => {
    const body = decodedBody(request.headers, payload, config.bodyLimitBytes);
    if (body instanceof ToolproofError) done(body);
    else if (body instanceof Promise) body.then((decoded) => done(null, decoded), done);
    else done(null, body);
  });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, body, done) =>
    parseJson(req, body as Buffer, done),
  );
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (req, body, done) =>
    parseJson(req, body as Buffer, done),
  );

  registerErrorHandling(app, (model) => metrics.internalErrors.labels(model).inc());

  await app.register(swagger, {
    openapi: {
      info: {
        title: 'toolproof',
        description: 'OpenAI-compatible proxy that makes tool calling on self-hosted models trustworthy.',
        version: '0.1.0',
      },
      components: {
        securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      },
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });

  const cors = createCors(config.corsOrigins);
  const owner: Owner = { app, state };
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    // A connection that never carried a byte has no request to finish (connections.ts).
    state.connections.closing();
    done();
  });
  app.addHook('onRequest', (request, reply, done) => {
    request.tpStart = performance.now();
    // A body not received in time is answered in this request's API shape (error-handler.ts).
    noteReceiving(request.raw);
    if (closing) {
      reply.header('connection', 'close');
      done(new ToolproofError('TP_ERR_SHUTTING_DOWN'));
      return;
    }
    // node keeps the first ~1,000 header lines and drops the rest without a word: a request's
    // Content-Type or key past them read as "body must be object" or a 401.
    if (request.raw.rawHeaders.length >= MAX_HEADER_ENTRIES) {
      done(
        new ToolproofError('TP_ERR_INVALID_FIELD', {
          status: 431,
          message: `The request has too many header lines (toolproof reads at most ${MAX_HEADER_ENTRIES / 2 - 1}).`,
        }),
      );
      return;
    }
    // On the raw response: hijacked (streamed) responses carry it too.
    reply.raw.setHeader(REQUEST_ID_HEADER, request.id);
    // Before the key check: a refused request is in the trace too.
    if (tracing) request.tpSpan = tracing.startRequest(request, request.routeOptions.url);
    // Preflights are answered before the key check (browsers send no key on them).
    if (cors?.(request, reply)) return;
    // Any response that turns out to be a stream is ended with an error event at the shutdown
    // deadline: the reply itself frames it (see the FastifyReply declaration above).
    const res = reply.raw;
    state.openStreams.add(res, reply);
    // Capture: what a front door's client receives, as written (server/capture/recorder.ts).
    if (state.capture && request.routeOptions.config?.api !== undefined)
      (res as CapturingResponse).tpRequest = request;
    // One listener per event (on(), not once(): each fires once, and once() costs a bound wrapper
    // and its state): a client that goes away cancels the upstream request at once (also while
    // waiting for the first token, or during a fallback or corrective retry), and the request's
    // log line and metrics are written. 'finish' is not redundant with res.writableFinished:
    // inject()'s fake socket is never detached, so only the event says the response ended there.
    let finished = false;
    res.on('finish', () => {
      finished = true;
      // A response that ends while closing leaves its keep-alive connection idle: close it now,
      // or the shutdown waits for the client's keep-alive timeout (or the deadline).
      if (closing) setImmediate(() => app.server.closeIdleConnections());
    });
    res.on('close', () => onResponseClose(owner, request, res, finished));
    // The configuration in force now (a reload swaps it): a revoked key is refused at once.
    const ring = keyRing(state.config);
    if (ring && !isOpenRoute(request.routeOptions.url, config.protectOps)) {
      const entry = ring.match(request);
      if (entry === undefined) {
        done(
          new ToolproofError(
            'TP_ERR_UNAUTHORIZED',
            isInspectorRoute(request.routeOptions.url) ? { message: INSPECTOR_UNAUTHORIZED } : {},
          ),
        );
        return;
      }
      // Its limits are counted where the request goes upstream (countAgainstKey), not here: the
      // model list, count_tokens, the inspector and refused requests do not use them up.
      request.tpKey = entry;
    }
    done();
  });

  for (const door of FRONT_DOORS) await registerFrontDoor(app, state, door);
  registerRelayRoutes(app, state);
  await registerModelRoutes(app, state, FRONT_DOORS);
  registerOpsRoutes(app, state);
  registerInspectRoutes(app, state);
  // Last: the catch-all for every route toolproof does not own.
  await app.register(registerPassthroughRoutes, { state });

  app.addHook('onClose', async () => {
    // Every client connection has ended by now: an upstream request still open belongs to no
    // one (an abandoned body), and a graceful pool close would wait for it forever.
    await upstreams.destroy();
    // Every span has ended: export what is left before the process goes. A collector that is
    // down or mute costs those spans, said in a line, never the shutdown (app.close() rejected,
    // and the graceful shutdown exited 1 as 'shutdown failed').
    await tracing
      ?.shutdown()
      .catch((err: unknown) =>
        app.log.warn(
          { err: { message: (err as Error)?.message ?? String(err) } },
          'tracing: the spans still batched could not be exported at shutdown (is the OTLP collector up?)',
        ),
      );
    // prom-client's default metrics never let go of their registry (a GC PerformanceObserver and
    // an event-loop histogram, no way to stop either): emptied, it no longer holds this app's
    // metrics, whose collect callbacks hold its state (capture ring, upstream pools). A process
    // that builds app after app (the test suite's workers) kept every closed one alive.
    if (!options.metrics) metrics.registry.clear();
  });
  return app as unknown as ToolproofApp;
}

/**
 * What a request's key used, as the upstream reported it: the per-key usage counters, and its
 * tokens against the key's per-minute limit.
 */
function recordKeyUsage(
  state: AppState,
  key: string,
  model: string,
  usage: Usage | undefined,
  /** Of the prompt, served from the prefix cache (recordPromptCache's reading), when reported. */
  cached = 0,
): void {
  if (!usage) return;
  const prompt = tokenCount(usage.prompt_tokens);
  const completion = tokenCount(usage.completion_tokens);
  const m = state.metrics.keyTokens;
  if (prompt > 0) m.labels(key, model, 'prompt').inc(prompt);
  if (cached > 0) m.labels(key, model, 'cached').inc(cached);
  if (completion > 0) m.labels(key, model, 'completion').inc(completion);
  state.keyLimits.addTokens(key, prompt + completion);
}

/** An upstream's admission gates report here (server/admission.ts). */
function admissionMetrics(metrics: Metrics, upstream: string): AdmissionHooks {
  return {
    queued: (cls, delta) => metrics.admissionQueueDepth.labels(upstream, cls).inc(delta),
    admitted: (cls, ms, owner) => {
      metrics.admissionAdmitted.labels(upstream, cls).inc();
      metrics.admissionQueued.labels(upstream, cls).observe(ms / 1000);
      if (owner?.key === undefined) return;
      metrics.keyAdmissionQueued.labels(owner.key).observe(ms / 1000);
      metrics.keyAdmissionInflight.labels(owner.key).inc();
    },
    released: (_cls, owner) => {
      if (owner?.key !== undefined) metrics.keyAdmissionInflight.labels(owner.key).dec();
    },
    shed: (cls, reason) => metrics.admissionShed.labels(upstream, cls, reason).inc(),
  };
}

/** The app a response belongs to, one object per app. */
interface Owner {
  app: FastifyInstance;
  state: AppState;
}

function onResponseClose(
  owner: Owner,
  request: FastifyRequest,
  res: ServerResponse,
  finished: boolean,
): void {
  owner.state.openStreams.delete(res);
  // Nothing sent upstream (a request policy's 400, the client gone before the first attempt):
  // the request is given back to its key's minute.
  const call = request.tp?.call;
  request.tpKeyEnd?.(call === undefined || call.trace.attempts > 0);
  // Ended: the last byte was handed to the socket; not: the client or the socket went away first.
  const ended = finished || res.writableFinished;
  if (!ended) request.tpAbort?.abort(clientClosed());
  // This runs from the response's 'close' event, outside any request's error handling: a throw
  // here (a counter refusing a value an upstream reported) would end the process and every
  // stream on it. The response is gone; what is left is bookkeeping, so log it and go on.
  try {
    logRequest(owner.app, owner.state, request, res.statusCode, ended, res.headersSent);
  } catch (err) {
    owner.app.log.error({ err, reqId: request.id }, 'writing the request log line and metrics failed');
    owner.state.metrics.internalErrors.labels('other').inc();
  }
  request.tpSpan?.end(request, res.statusCode, ended, res.headersSent);
}

const OPS_ROUTES = new Set(['/health', '/ready', '/metrics', '/api/hello']);
/** Routes whose success means the upstream served the model (count_tokens may only estimate). */
const ANSWERING_ROUTES = new Set<string | undefined>([
  ...FRONT_DOORS.map((door) => door.path),
  '/v1/embeddings',
  '/v1/completions',
]);
const FRONT_DOOR_APIS = new Set<string>(FRONT_DOORS.map((door) => door.api));

/**
 * The label by matched route, for routes that do not say: a front door's routes say in their
 * config (their own label also when a request is rejected before its handler ran: a validation
 * 400), and request.tp.api wins over both.
 */
function apiOf(matched: string | undefined): Api {
  if (matched && (OPS_ROUTES.has(matched) || matched === '/docs' || matched.startsWith('/docs/')))
    return 'ops';
  if (matched === '/v1/models' || matched === '/v1/models/*') return 'models';
  if (isInspectorRoute(matched)) return 'inspect';
  return 'passthrough';
}

/** Route label from the matched route pattern (a closed set), never from the client's URL. */
function routeLabel(matched: string | undefined): string {
  if (matched === undefined) return 'unmatched';
  if (matched === '*' || matched === '/*') return 'other';
  return matched.startsWith('/v1/') ? matched.slice(4) : matched.replace(/^\//, '');
}

/** Route patterns are a closed set: their labels are computed once per pattern, not per request. */
const labelsByRoute = new Map<string | undefined, { route: string; api: Api }>();
function routeLabels(matched: string | undefined): { route: string; api: Api } {
  let labels = labelsByRoute.get(matched);
  if (labels === undefined) {
    labels = { route: routeLabel(matched), api: apiOf(matched) };
    labelsByRoute.set(matched, labels);
  }
  return labels;
}

/** The one log line per request, with the harness trace for chat completions. */
function logRequest(
  app: FastifyInstance,
  state: AppState,
  request: import('fastify').FastifyRequest,
  status: number,
  finished: boolean,
  headersSent: boolean,
): void {
  if (request.tpRelayed !== undefined) {
    // The worker that holds its state answered it, and counts and logs it as its own request
    // (its line says `relayed`); here only the hop (worker-relay.ts counts its outcome).
    if ((LOG_LEVELS[app.log.level] ?? 0) <= 20)
      app.log.debug(
        { reqId: request.id, relayedTo: request.tpRelayed, status: finished ? status : 'aborted' },
        'relayed',
      );
    return;
  }
  const routeOptions = request.routeOptions;
  const matched = routeOptions.url;
  // The log line names the path asked for when the catch-all served it (metrics use the closed label).
  const path =
    matched === undefined || matched === '*' || matched === '/*'
      ? (request.url.split('?')[0] ?? '').slice(0, 256)
      : matched;
  const labels = routeLabels(matched);
  const route = labels.route;
  const tp = request.tp;
  const api = tp?.api ?? routeOptions.config?.api ?? labels.api;
  const ended = performance.now();
  const seconds = (ended - request.tpStart) / 1000;
  // The model the client asked for (JSON front doors); a request rejected before its handler
  // ran has no tp, and is labelled by that name like any other (a junk name is "other", a body
  // without one "none"). A request refused before its body was read (a 401, the shutdown's 503,
  // malformed JSON) names no model anyone read: "", as a route without a model.
  const body = request.body as { model?: unknown } | null | undefined;
  const askedFor = body?.model;
  const asked = typeof askedFor === 'string' ? askedFor : undefined;
  // A route whose JSON body names its model: the front doors, /v1/completions, /v1/embeddings.
  const modelRoute = FRONT_DOOR_APIS.has(api) || ANSWERING_ROUTES.has(matched);
  const model =
    tp?.model ??
    (asked !== undefined
      ? modelLabel(state.config, asked, state.modelLabels)
      : !modelRoute || body === undefined || body === null
        ? ''
        : askedFor === undefined
          ? 'none'
          : 'other');
  // A name the upstream answered with success is a real model: its own label from now on.
  if (
    finished &&
    status < 300 &&
    tp?.model === 'other' &&
    asked !== undefined &&
    ANSWERING_ROUTES.has(matched)
  )
    state.modelLabels.answeredWith(asked.slice(0, 128));
  state.metrics.hot.requests(model, route, finished ? String(status) : 'aborted', api).inc();
  if (request.tpKey)
    state.metrics.keyRequests.labels(request.tpKey.name, finished ? String(status) : 'aborted').inc();
  // Not ended because the upstream cut its body (the pass-through's socket destroyed to say so:
  // routes/passthrough.ts saysCut) is no client leaving: counted in upstream_errors.
  if (!finished && request.tpError?.code !== 'TP_ERR_UPSTREAM_CUT_OFF')
    state.metrics.clientAborts.labels(api, headersSent ? 'mid_response' : 'before_response').inc();
  state.metrics.hot.requestDuration(model, route, tp?.stream ? 'true' : 'false', api).observe(seconds);
  const call = tp?.call;
  if (call?.trace.finalKind && call.trace.finalKind !== 'passthrough' && call.trace.finalKind !== 'error') {
    const k = call.trace.finalKind;
    const kind = k === 'both' ? 'both' : k === 'tool_calls' ? 'tool_calls' : 'content';
    if (Array.isArray(call.original.tools) && call.original.tools.length > 0)
      state.metrics.hot.responses(model, kind, call.api).inc();
  }
  const usage = call ? callUsage(call) : tp?.usage;
  const cache = call ? recordPromptCache(call, usage, state.metrics) : undefined;
  const keyName = request.tpKey?.name ?? (keyRing(state.config) ? undefined : OPEN_KEY);
  // A relayed completion or embedding's tokens count against its key as a front door's do.
  if (keyName !== undefined) recordKeyUsage(state, keyName, model, usage, cache?.cached);
  const err = request.tpError ?? tp?.call?.streamError;
  // The upstream answered and reported no usage (vLLM's stream when nobody asked it for
  // stream_options.include_usage: a chat stream passed through as the client sent it, a
  // completions stream): its tokens are unknown, and said to be, not counted as 0 by omission.
  const unreported =
    usage === undefined &&
    finished &&
    status < 300 &&
    err === undefined &&
    (call ? call.trace.attempts > 0 : tp !== undefined && ANSWERING_ROUTES.has(matched));
  if (unreported) {
    state.metrics.usageUnreported.labels(model, api).inc();
    if (tp) tp.usageUnreported = true;
  }
  if (call?.capture) {
    // harnessOf itself: the capture makes the summary only when it has no copy of it (finishCapture).
    finishCapture(call, status, finished, usage, cache, harnessOf, err, ended);
    request.tpCapture = undefined;
  } else if (request.tpCapture) {
    // A request refused before its call began (its key's limits): recorded all the same.
    finishRefused(request.tpCapture, status, finished, err, ended);
    request.tpCapture = undefined;
  }
  const quiet = QUIET_ROUTES.has(path);
  if ((LOG_LEVELS[app.log.level] ?? 0) > (quiet ? 20 : 30)) return; // level off: skip building the line
  const line: Record<string, unknown> = {
    reqId: request.id,
    method: request.method,
    route: path,
    api,
    status: finished ? status : 'aborted',
    latencyMs: Math.round(seconds * 10_000) / 10,
  };
  if (request.tpSpan) line.traceId = request.tpSpan.traceId;
  // Cut, and without the input values upstream validation errors echo (prompts stay out of logs).
  if (err) line.error = { code: err.code, status: err.status, message: redactForLog(err.message) };
  if (request.tpKey) line.key = request.tpKey.name;
  // Carried here by the worker it reached, because this worker holds its state (worker-relay.ts).
  if (relayedHere(request)) line.relayed = true;
  if (tp) {
    line.model = asked !== undefined ? asked.slice(0, 256) : tp.model;
    // The upstream that answered: a route fallback moved the call after tp was set.
    line.upstream = call?.route.client.label ?? tp.upstream;
    line.stream = tp.stream;
  } else if (asked !== undefined) line.model = asked.slice(0, 256);
  if (usage) line.usage = usage;
  else if (unreported) line.usageUnreported = true;
  if (call) line.harness = harnessOf(call, cache);
  if (quiet) app.log.debug(line, 'request');
  else app.log.info(line, 'request');
}

/**
 * The key limits: this process's, or, in a worker of TOOLPROOF_WORKERS > 1, the group's, held by
 * the cluster primary (group-admission.ts): a key's limits are the group's, whichever worker.
 */
function keyLimiter(onWaiting: (name: string, delta: 1 | -1) => void): KeyLimiter {
  const ch = groupChannel();
  return ch ? new GroupKeyLimits(ch, onWaiting) : new KeyLimits(Date.now, onWaiting);
}
