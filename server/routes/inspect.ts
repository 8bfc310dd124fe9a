/**
 * The inspector (docs/inspect.md): a page at /inspect and the JSON API behind it, over the
 * capture ring of every worker (server/capture/). Behind the API keys like every route that is
 * not open (server/auth.ts); the page's routes also take the key as a Basic password, so a
 * browser can open it. The page is three static files served from inspect/ in the repository:
 * no build step, no external network, and it writes every captured text with textContent only.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ToolproofError } from '../../protocol/errors.js';
import type { AppState } from '../app-state.js';
import { type AskGroup, joinCaptureGroup } from '../capture/cluster.js';
import {
  type AttemptTrace,
  attemptTraces,
  type CaptureOp,
  EXPORT_CHARS,
  type ExportPart,
  type RequestView,
  type SessionRecord,
  type SessionSummary,
  sessionRecordOf,
  turnsOf,
} from '../capture/query.js';
import type { CapturePage, CaptureRecord } from '../capture/ring.js';
import { errorHandler } from '../error-handler.js';
import { openAIErrorBody } from '../front-doors/chat/errors.js';
import { withDelta } from './inspect-delta.js';
import { type DiffBase, diffBaseOf, diffBasesWithin } from './inspect-diff.js';
import {
  exportSchema,
  listSchema,
  OUTCOMES,
  requestSchema,
  sessionSchema,
  sessionsSchema,
} from './inspect-schemas.js';

/** The page's files: next to the sources (tsx), or next to dist/ (the built package, the image). */
function pageDir(): string | undefined {
  for (const rel of ['../../inspect/', '../../../inspect/']) {
    const dir = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(`${dir}index.html`)) return dir;
  }
  return undefined;
}

const PAGE_FILES: Record<string, string> = {
  '/inspect': 'index.html',
  '/inspect/inspect.js': 'inspect.js',
  '/inspect/inspect.css': 'inspect.css',
};
const TYPES: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
};
/** Nothing but the page's own files: a script that slipped through escaping could not run or call out. */
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** The longest `after` cursor taken (64 texts' entries); a longer one is read as none. */
const AFTER_MAX = 16_384;

/**
 * Whether a request's Accept names HTML (what a browser's page load sends; a script's fetch and the
 * API clients ask for JSON or anything). `text/html;q=0` is a refusal of HTML. Only the first 64
 * entries of a header at most 1 KB are read: the header is the client's.
 */
export function acceptsHtml(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  for (const entry of accept.slice(0, 1024).split(',', 64)) {
    const [type, ...params] = entry.split(';');
    if (type?.trim().toLowerCase() !== 'text/html') continue;
    const q = params.map((p) => p.trim().toLowerCase()).find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  }
  return false;
}

const HTML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};
const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);

/** The short page a browser shows when its user cancels the sign-in prompt (no script, no style). */
function unauthorizedPage(message: string): string {
  return (
    '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>toolproof inspector: key needed</title></head>\n' +
    '<body><h1>An API key is needed</h1>\n' +
    `<p>${escapeHtml(message)}</p>\n` +
    '<p><a href="/inspect">Try again</a> and give the key as the password (any user name).</p></body></html>\n'
  );
}

/**
 * Whose requests a reader may see: a named key (inspect: own, its default) only those made with
 * its own name; a key with inspect: all (the flat keys) and an open server every request. The
 * capture holds prompts and answers: a key limited to one model read every other team's.
 */
function ownerOf(request: FastifyRequest): string | undefined {
  const key = request.tpKey;
  return key && key.inspect !== 'all' ? key.name : undefined;
}

/**
 * The API routes' answers go out as JSON.stringify writes them: their response schemas
 * (inspect-schemas.ts) document them in the OpenAPI document and never strip or coerce a field
 * (a record's getters, a status that is a number or `aborted`).
 */
const DOCUMENTED_ONLY = { serializerCompiler: () => (data: unknown) => JSON.stringify(data) };

/** A record as answered: without its flat key's token (the diff base read it; no reader needs it). */
function answered(record: CaptureRecord): CaptureRecord {
  if (record.keyToken === undefined) return record;
  const { keyToken: _token, ...rest } = record;
  return rest;
}

/** A request as the API answers it: its view, its diff base and its attempts' trace ids. */
type WholeView = RequestView & { diffBase: DiffBase; traces: Array<AttemptTrace | null> };

export function registerInspectRoutes(app: FastifyInstance, state: AppState): void {
  const group: AskGroup = joinCaptureGroup(state.capture);
  // Every worker traces alike (the same OTEL_* variables): this process's tracing says for all.
  const tracesOf = (view: RequestView) => attemptTraces(view.record, state.tracing !== undefined);
  // Refused by the cluster's primary for its relay budget (capture/cluster.ts): a 429 to retry.
  const ask = async (op: CaptureOp, request: FastifyRequest) => {
    // The relay's budget is per reader: one key's loop of reads refuses only its own.
    const got = await group(op, request.tpKey?.name ?? '');
    if (got.busy !== undefined)
      throw new ToolproofError('TP_ERR_RATE_LIMITED', {
        detail: { kind: 'retry-later', retryAfter: String(got.busy) },
        message: `The inspector's reads across the workers are over the cluster primary's budget (it relays every worker's answer); please try again in ${got.busy}s.`,
      });
    return got;
  };
  const dir = pageDir();
  const files = new Map<string, { body: string; type: string }>();
  if (dir)
    for (const [route, file] of Object.entries(PAGE_FILES))
      files.set(route, {
        body: readFileSync(`${dir}${file}`, 'utf8'),
        type: TYPES[file.split('.').pop() ?? ''] ?? 'text/plain',
      });

  /** One request whole, if this reader may see it; a 404 otherwise. */
  const wholeRequest = async (
    id: string,
    request: FastifyRequest,
  ): Promise<{ view: WholeView; got: { parts: unknown[]; partial: boolean } }> => {
    const owner = ownerOf(request);
    const got = await ask({ op: 'get', id, ...(owner === undefined ? {} : { owner }) }, request);
    const view = (got.parts as Array<RequestView | null>).find((p) => p !== null);
    if (!view)
      throw new ToolproofError('TP_ERR_NOT_FOUND', {
        message: `No captured request ${JSON.stringify(id.slice(0, 200))} (never seen, or dropped from the ring).`,
      });
    // What the page diffs each attempt's request against (a Messages or Responses request, translated).
    return {
      view: {
        ...view,
        record: answered(view.record),
        diffBase: diffBaseOf(view.record, state),
        traces: tracesOf(view),
      },
      got,
    };
  };
  const oneRequest = async (id: string, request: FastifyRequest): Promise<WholeView & { cursor: string }> => {
    const { view } = await wholeRequest(id, request);
    // Only what changed since the asker's cursor (inspect-delta.ts): the page's in-flight refresh.
    const after = (request.query as { after?: unknown } | undefined)?.after;
    return withDelta(view, typeof after === 'string' && after.length <= AFTER_MAX ? after : undefined);
  };
  /** A request or a session as a file to hand on: the page's data, downloaded (docs/inspect.md). */
  const exportFile = (
    reply: FastifyReply,
    name: string,
    got: { parts: unknown[]; partial: boolean },
    requests: WholeView[],
    session?: unknown,
  ) => {
    // A file name of the id's or the session's safe characters only (the header is ours to write).
    const safe = name.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 100);
    void reply
      .header('content-disposition', `attachment; filename="toolproof-${safe}.json"`)
      .type('application/json; charset=utf-8');
    return {
      format: 'toolproof-inspect-export',
      version: 1,
      exportedAt: new Date().toISOString(),
      workers: got.parts.length,
      partial: got.partial,
      ...(session === undefined ? {} : { session }),
      requests,
    };
  };
  const exportRequest = async (id: string, request: FastifyRequest, reply: FastifyReply) => {
    const { view, got } = await wholeRequest(id, request);
    return exportFile(reply, `request-${id}`, got, [view]);
  };

  void app.register(async (scope) => {
    const base = errorHandler(openAIErrorBody, (model) => state.metrics.internalErrors.labels(model).inc());
    scope.setErrorHandler((err, request, reply) => {
      // A browser asks for the key (as a Basic password) when the page is refused.
      if ((err as { code?: string }).code === 'TP_ERR_UNAUTHORIZED') {
        reply.header('www-authenticate', 'Basic realm="toolproof inspector", charset="UTF-8"');
        // A browser whose user cancelled the prompt shows this body: a page, not the JSON error.
        if (acceptsHtml(request.headers.accept)) {
          void reply
            .code(401)
            .header('content-security-policy', "default-src 'none'; base-uri 'none'; form-action 'none'")
            .header('x-content-type-options', 'nosniff')
            .header('cache-control', 'no-store')
            .type('text/html; charset=utf-8')
            .send(unauthorizedPage((err as Error).message));
          return;
        }
      }
      base(err, request, reply);
    });

    // An answer the reader already holds is a 304 without a body: the page polls its list every
    // 2 s, and an idle proxy's list of 200 requests (~62 KB) came again whole each time, per tab.
    // `no-store`: the page keeps its copy itself; no browser writes prompts to its disk cache.
    scope.addHook('onSend', async (request, reply, payload) => {
      if (request.method !== 'GET' || reply.statusCode !== 200 || typeof payload !== 'string') return payload;
      if (!request.url.startsWith('/inspect/api/')) return payload;
      const etag = `"${createHash('sha1').update(payload).digest('base64url')}"`;
      reply.header('etag', etag).header('cache-control', 'no-store');
      if (request.headers['if-none-match'] !== etag) return payload;
      reply.code(304).removeHeader('content-type').removeHeader('content-length');
      return '';
    });

    const page = (request: FastifyRequest, reply: FastifyReply) => {
      const f = files.get(request.routeOptions.url ?? '');
      if (!f)
        throw new ToolproofError('TP_ERR_NOT_FOUND', {
          message: 'The inspector page is not installed (the inspect/ folder is missing).',
        });
      return reply
        .header('content-security-policy', CSP)
        .header('x-content-type-options', 'nosniff')
        .header('cache-control', 'no-cache')
        .type(f.type)
        .send(f.body);
    };
    for (const route of Object.keys(PAGE_FILES))
      scope.get(route, { schema: { hide: true } }, async (request, reply) => page(request, reply));

    scope.get(
      '/inspect/api/requests',
      {
        ...DOCUMENTED_ONLY,
        schema: {
          tags: ['inspect'],
          summary:
            'Recent and in-flight requests, newest first, from every worker (docs/inspect.md). Every inspector answer has an ETag: If-None-Match with it gets a 304 without a body while the answer is the same.',
          security: [{ bearer: [] }],
          querystring: {
            type: 'object',
            properties: {
              session: { type: 'string', maxLength: 400 },
              model: { type: 'string', maxLength: 256 },
              outcome: { type: 'string', enum: OUTCOMES },
              // A query string is text, and the app never coerces types (a body's numbers are the
              // client's): `?limit=50` is validated as digits here and read as a number below.
              limit: {
                type: 'string',
                pattern: '^(?:[1-9][0-9]{0,2}|1000)$',
                description: '1 to 1000, default 200',
              },
              before: {
                type: 'string',
                pattern: '^[0-9]{1,15}$',
                description:
                  "Only requests that arrived before this time (epoch ms): the next page is `before` the last listed request's `at`.",
              },
            },
          },
          response: { 200: listSchema },
        },
      },
      async (request) => {
        const q = request.query as {
          session?: string;
          model?: string;
          outcome?: string;
          limit?: string;
          before?: string;
        };
        const limit = q.limit === undefined ? 200 : Number(q.limit);
        const before = q.before === undefined ? undefined : Number(q.before);
        const query = { ...q, limit, before, owner: ownerOf(request) };
        const got = await ask({ op: 'list', query }, request);
        const parts = got.parts as CapturePage[];
        const all = parts.flatMap((p) => p.requests).sort((a, b) => b.at - a.at);
        // As each worker's page: never cut inside a millisecond, so `before` the last misses none.
        let end = Math.min(limit, all.length);
        while (end < all.length && all[end]!.at === all[end - 1]!.at) end++;
        // Summed over the workers (each its own ring), the newest of their newest.
        const dropped = parts.flatMap((p) => (p.droppedForOthers ? [p.droppedForOthers] : []));
        return {
          capture: state.capture !== undefined,
          workers: got.parts.length,
          partial: got.partial,
          requests: all.slice(0, end),
          older: parts.reduce((n, p) => n + p.older, all.length - end),
          ...(dropped.length === 0
            ? {}
            : {
                droppedForOthers: {
                  records: dropped.reduce((n, d) => n + d.records, 0),
                  newest: Math.max(...dropped.map((d) => d.newest)),
                },
              }),
        };
      },
    );

    scope.get(
      '/inspect/api/requests/:id',
      {
        ...DOCUMENTED_ONLY,
        schema: {
          tags: ['inspect'],
          summary:
            "One request whole: the client request (no credentials), every upstream attempt, the decisions, what the client received, read-back views, and diffBase: what each attempt's request is diffed against (the client's request, or a Messages or Responses request translated to chat completions before toolproof's policies). While the request is in flight, the running attempt's response and the client's response body are what was read and sent so far, marked `partial: true`. Every answer has a `cursor`; asked `?after=<cursor>`, each long text (1,024 characters or more) the asker holds the start of is sent as its rest only, and `delta` maps its path (`record.clientRequest.body.text`) to how many characters of the asker's copy come before it: an in-flight page reads only what changed.",
          security: [{ bearer: [] }],
          response: { 200: requestSchema },
          params: {
            type: 'object',
            properties: { id: { type: 'string', maxLength: 200 } },
            required: ['id'],
          },
          querystring: {
            type: 'object',
            properties: {
              after: {
                type: 'string',
                maxLength: AFTER_MAX,
                description:
                  "The `cursor` of the answer the asker holds: each long text it holds the start of comes as its rest, and `delta` says how many characters of the asker's copy to keep in front of it.",
              },
            },
          },
        },
      },
      async (request) => oneRequest((request.params as { id: string }).id, request),
    );

    scope.get(
      '/inspect/api/requests/:id/export',
      {
        ...DOCUMENTED_ONLY,
        schema: {
          tags: ['inspect'],
          summary:
            'One request as a single JSON file to hand to someone (a bug report): the client\'s request (no credentials), every attempt, the decisions, what the client received, as /inspect/api/requests/:id answers; sent as an attachment (Content-Disposition). The page\'s "download JSON" link.',
          security: [{ bearer: [] }],
          response: { 200: exportSchema },
          params: {
            type: 'object',
            properties: { id: { type: 'string', maxLength: 200 } },
            required: ['id'],
          },
        },
      },
      async (request, reply) => exportRequest((request.params as { id: string }).id, request, reply),
    );

    // Every other path under /inspect is the inspector's too: a 404 in its shape. It fell through
    // to the pass-through before and was relayed to the upstream (a typo, a route of a newer
    // page, and any id longer than the router's 100-character parameters: a client's own
    // x-request-id may have 128), which answered in its own shape about a path it never served.
    scope.all('/inspect/*', { schema: { hide: true } }, async (request, reply) => {
      const path = (request.params as { '*': string })['*'];
      const [, id, exported] = /^api\/requests\/([^/]+)(\/export)?$/.exec(path) ?? [];
      // The router has decoded the path already.
      if (request.method === 'GET' && id !== undefined && id.length <= 200)
        return exported ? exportRequest(id, request, reply) : oneRequest(id, request);
      throw new ToolproofError('TP_ERR_NOT_FOUND', {
        message: `No inspector route ${request.method} /inspect/${JSON.stringify(path.slice(0, 200)).slice(1, -1)} (docs/inspect.md lists them).`,
      });
    });

    scope.get(
      '/inspect/api/sessions',
      {
        ...DOCUMENTED_ONLY,
        schema: {
          tags: ['inspect'],
          summary: 'Sessions (by affinity key: the client session id or the hash of the opening messages).',
          security: [{ bearer: [] }],
          response: { 200: sessionsSchema },
        },
      },
      async (request) => {
        const owner = ownerOf(request);
        const got = await ask({ op: 'sessions', ...(owner === undefined ? {} : { owner }) }, request);
        const by = new Map<string, SessionSummary>();
        // Each merged session's models as a Set (query.ts's sessionsOf: a list searched per model
        // is the models squared).
        const models = new Map<SessionSummary, Set<string>>();
        for (const s of (got.parts as SessionSummary[][]).flat()) {
          const e = by.get(s.session);
          if (!e) {
            const fresh = { ...s, models: [...s.models] };
            by.set(s.session, fresh);
            models.set(fresh, new Set(s.models));
          } else {
            e.requests += s.requests;
            e.failed += s.failed;
            e.first = Math.min(e.first, s.first);
            e.last = Math.max(e.last, s.last);
            const seen = models.get(e)!;
            for (const m of s.models)
              if (!seen.has(m)) {
                seen.add(m);
                e.models.push(m);
              }
          }
        }
        return {
          workers: got.parts.length,
          partial: got.partial,
          sessions: [...by.values()].sort((a, b) => b.last - a.last),
        };
      },
    );

    scope.get(
      '/inspect/api/session',
      {
        ...DOCUMENTED_ONLY,
        schema: {
          tags: ['inspect'],
          summary:
            "One session's turns in order, with each turn's cached-prompt ratio and where its prompt first differs from the turn before (docs/prefix.md).",
          security: [{ bearer: [] }],
          response: { 200: sessionSchema },
          querystring: {
            type: 'object',
            properties: { key: { type: 'string', maxLength: 400 } },
            required: ['key'],
          },
        },
      },
      async (request) => {
        const { key } = request.query as { key: string };
        const owner = ownerOf(request);
        const got = await ask({ op: 'session', key, ...(owner === undefined ? {} : { owner }) }, request);
        return {
          session: key,
          workers: got.parts.length,
          partial: got.partial,
          turns: turnsOf((got.parts as SessionRecord[][]).flat()),
        };
      },
    );

    scope.get(
      '/inspect/api/session/export',
      {
        ...DOCUMENTED_ONLY,
        schema: {
          tags: ['inspect'],
          summary:
            'One session as a single JSON file to hand to someone (a bug report): its turns with their cached ratio and prefix check (as /inspect/api/session answers) and each of its requests whole, in order (as /inspect/api/requests/:id answers); sent as an attachment (Content-Disposition). At most what the rings hold of it. The page\'s "download JSON" link.',
          security: [{ bearer: [] }],
          response: { 200: exportSchema },
          querystring: {
            type: 'object',
            properties: { key: { type: 'string', maxLength: 400 } },
            required: ['key'],
          },
        },
      },
      async (request, reply) => {
        const { key } = request.query as { key: string };
        const owner = ownerOf(request);
        // Each worker's part a share of the bound: the whole within one reader's relay burst.
        const chars = Math.floor(EXPORT_CHARS / Math.max(1, state.config.workers ?? 1));
        const got = await ask(
          { op: 'export', key, chars, ...(owner === undefined ? {} : { owner }) },
          request,
        );
        const parts = got.parts as ExportPart[];
        const views = parts.flatMap((p) => p.requests).sort((a, b) => a.record.at - b.record.at);
        // The bases within the export's bound too: a Responses request's is its conversation now.
        const bases = diffBasesWithin(
          views.map((v) => v.record),
          state,
          EXPORT_CHARS,
        );
        const requests = views.map((v, i) => ({
          ...v,
          record: answered(v.record),
          diffBase: bases[i]!,
          traces: tracesOf(v),
        }));
        const turns = turnsOf(views.map((v) => sessionRecordOf(v.record)));
        const omitted = parts.reduce((n, p) => n + p.omitted, 0);
        const session = { session: key, turns, ...(omitted === 0 ? {} : { omitted }) };
        return exportFile(reply, `session-${key}`, got, requests, session);
      },
    );
  });
}
