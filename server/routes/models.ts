import type { FastifyInstance, FastifyRequest } from 'fastify';
import { MAX_UPSTREAM_DEPTH, upstreamJsonProblem } from '../../protocol/completion-shape.js';
import { ToolproofError } from '../../protocol/errors.js';
import { deeperThan } from '../../protocol/json-depth.js';
import type { AppState } from '../app-state.js';
import { readText } from '../chat/attempt.js';
import { errorHandler } from '../error-handler.js';
import { openAIErrorBody } from '../front-doors/chat/errors.js';
import { allowsModel } from '../keys.js';
import { redactForLog } from '../log-redact.js';
import type { FrontDoor, ModelEntry } from '../front-doors/types.js';
import type { UpstreamClient } from '../upstream.js';

async function listUpstream(client: UpstreamClient, signal: AbortSignal): Promise<ModelEntry[]> {
  const res = await client.request({ method: 'GET', path: '/models', signal });
  const text = await readText(res);
  if (res.status >= 400) throw new Error(`HTTP ${res.status}`);
  // Its entries are listed to the client as they are: one nested 400k levels (in the 1 MB read)
  // overflowed the writer's stack, and GET /v1/models was toolproof's own 500 for every client.
  const problem = upstreamJsonProblem(text);
  if (problem) throw new Error(`sent ${problem}`);
  const body = JSON.parse(text) as { data?: unknown };
  if (deeperThan(body, MAX_UPSTREAM_DEPTH))
    throw new Error(`sent a value nested deeper than ${MAX_UPSTREAM_DEPTH} levels`);
  return Array.isArray(body.data)
    ? (body.data.filter((m) => m && typeof (m as ModelEntry).id === 'string') as ModelEntry[])
    : [];
}

/**
 * How long an upstream's model list is reused. GET /v1/models does not count against a key's
 * limits (docs/operations.md), so without this each one, and each models.retrieve, was a request
 * to every upstream: a client looping on it turned one request into N on the backends. Backends
 * that swap models (llama-swap) are seen within this time.
 */
const UPSTREAM_LIST_REUSE_MS = 2_000;

const upstreamLists = new WeakMap<UpstreamClient, { at: number; list: Promise<ModelEntry[]> }>();

/**
 * An upstream's model list: one request in flight per upstream whoever asks (the others wait
 * on it), and a list read in the last UPSTREAM_LIST_REUSE_MS reused. A failure is not kept.
 */
function upstreamList(client: UpstreamClient, timeoutMs: number): Promise<ModelEntry[]> {
  const now = performance.now();
  const kept = upstreamLists.get(client);
  if (kept && now - kept.at < UPSTREAM_LIST_REUSE_MS) return kept.list;
  const list = listUpstream(client, AbortSignal.timeout(timeoutMs));
  const entry = { at: now, list };
  upstreamLists.set(client, entry);
  list.then(
    () => {
      // Reused from when it was read, not from when it was asked for.
      entry.at = performance.now();
    },
    () => {
      if (upstreamLists.get(client) === entry) upstreamLists.delete(client);
    },
  );
  return list;
}

function positive(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : undefined;
}

/**
 * `entry` with the model's context window where it is known (docs/api.md): `context_window` (the
 * field agents such as Codex read from a model list) and `max_model_len` (vLLM's own). Known from
 * the model's settings (YAML `contextWindow`, or resolved from the backend at start-up), else
 * from what the backend listed (vLLM `max_model_len`, llama-server `meta.n_ctx`).
 */
function withWindow(entry: ModelEntry, configured: number | undefined): ModelEntry {
  const meta = entry.meta as { n_ctx?: unknown } | undefined;
  const window = configured ?? positive(entry.max_model_len) ?? positive(meta?.n_ctx);
  if (window === undefined) return entry;
  return { ...entry, context_window: window, max_model_len: window };
}

/**
 * `entry` with what the model reads, where toolproof knows it (`vision: true | false`, or `auto`
 * resolved from llama-server's /props at start-up): `input_modalities` `["text", "image"]` or
 * `["text"]`, which `toolproof launch` hands to agents that ask (pi, opencode, Qwen Code), and audio after
 * them where the model takes audio (`audio: true`, or resolved from /props): the values of
 * OpenRouter's model list. `auto` that no backend answered says nothing: an agent keeps its own
 * default (audio alone, with vision unknown, is not listed: the list would read as text-only).
 */
function withModalities(
  entry: ModelEntry,
  settings: { vision: boolean | 'auto'; audio: boolean | 'auto' },
): ModelEntry {
  const { vision, audio } = settings;
  if (typeof vision !== 'boolean') return entry;
  return {
    ...entry,
    input_modalities: ['text', ...(vision ? ['image'] : []), ...(audio === true ? ['audio'] : [])],
  };
}

/**
 * What GET /v1/models lists: the configured model names, then what each upstream serves, as the
 * request's key may see them.
 */
async function listModels(
  state: AppState,
  request: FastifyRequest,
): Promise<{ list: ModelEntry[]; created: number; incomplete: boolean }> {
  const timeoutMs = Math.min(state.config.timeouts.firstByteMs, 10_000);
  const data = new Map<string, ModelEntry>();
  const created = Math.floor(Date.now() / 1000);
  for (const [name, route] of Object.entries(state.config.models)) {
    data.set(
      name,
      withModalities(
        withWindow(
          {
            id: name,
            object: 'model',
            created,
            owned_by: 'toolproof',
            upstream_model: route.upstreamModel ?? name,
          },
          positive(route.settings.contextWindow),
        ),
        route.settings,
      ),
    );
  }
  const targets = [
    ...(state.config.defaultUpstream ? [state.upstreams.for(state.config.defaultUpstream)] : []),
    ...Object.values(state.config.models).map((m) => state.upstreams.for(m.upstream)),
  ];
  const unique = [...new Set(targets)];
  const results = await Promise.allSettled(unique.map((c) => upstreamList(c, timeoutMs)));
  const served = state.config.defaultUpstream ? state.upstreams.for(state.config.defaultUpstream) : undefined;
  results.forEach((r, i) => {
    if (r.status === 'fulfilled') {
      // What the default upstream serves keeps its own metric label (see ServedModelLabels).
      if (unique[i] === served) state.modelLabels.serve(r.value.map((m) => m.id));
      // The default upstream's models take the defaults' window: configured, it is what the
      // proxy's cut and overflow mapping use, so it is what the list says; resolved from the
      // backend at start-up (0 configured, one model served), it is that model's own.
      const configured = unique[i] === served ? positive(state.config.defaults.contextWindow) : undefined;
      for (const m of r.value) {
        if (data.has(m.id)) continue;
        const own = positive(m.max_model_len) ?? positive((m.meta as { n_ctx?: unknown } | undefined)?.n_ctx);
        const listed = withWindow(m, configured ?? own);
        data.set(m.id, unique[i] === served ? withModalities(listed, state.config.defaults) : listed);
      }
    } else {
      request.log.warn(
        { upstream: unique[i]!.label, err: redactForLog(String(r.reason)) },
        'listing upstream models failed',
      );
    }
  });
  // A key with an allow-list sees only the models it may use.
  const key = request.tpKey;
  const list = [...data.values()].filter((m) => allowsModel(key, m.id));
  return { list, created, incomplete: results.some((r) => r.status === 'rejected') };
}

export async function registerModelRoutes(
  app: FastifyInstance,
  state: AppState,
  /** A door with its own page answers the requests it claims (Anthropic's clients), errors too. */
  doors: readonly Pick<FrontDoor, 'models' | 'errorBody'>[],
): Promise<void> {
  const claiming = (request: FastifyRequest) => doors.find((door) => door.models?.claims(request));
  await app.register(async (scope) => {
    // An Anthropic client's 404 (an unknown id) or 401 in Anthropic's shape, as its SDK parses it.
    scope.setErrorHandler(
      errorHandler(
        (err, request) => (claiming(request) ?? { errorBody: openAIErrorBody }).errorBody(err),
        (model) => state.metrics.internalErrors.labels(model).inc(),
      ),
    );
    routes(scope, state, claiming);
  });
}

function routes(
  app: FastifyInstance,
  state: AppState,
  claiming: (request: FastifyRequest) => Pick<FrontDoor, 'models'> | undefined,
): void {
  app.get(
    '/v1/models',
    {
      schema: {
        tags: ['openai'],
        summary: 'Models of every configured upstream, plus the configured model names.',
      },
    },
    async (request) => {
      const { list, created } = await listModels(state, request);
      return claiming(request)?.models?.page(list, created) ?? { object: 'list', data: list };
    },
  );
  // The SDKs' models.retrieve. Answered from the same list, not passed through: vLLM and
  // llama-server serve no /v1/models/{id} (vLLM: 404 {"detail":"Not Found"}), and a configured
  // name or alias is toolproof's own, unknown upstream. A wildcard: ids hold slashes (org/model).
  app.get(
    '/v1/models/*',
    {
      schema: {
        tags: ['openai'],
        summary: 'One model of GET /v1/models, or a 404 (model_not_found).',
      },
    },
    async (request) => {
      const id = (request.params as { '*': string })['*'];
      const { list, created, incomplete } = await listModels(state, request);
      const found = list.find((m) => m.id === id);
      // An upstream that did not answer may serve it: not a 404, which would say it does not exist.
      if (!found && incomplete)
        throw new ToolproofError('TP_ERR_UPSTREAM_UNREACHABLE', {
          message: `An upstream did not list its models, so whether "${id}" is served is not known.`,
        });
      if (!found)
        throw new ToolproofError('TP_ERR_MODEL_NOT_FOUND', {
          param: 'model',
          message: `The model "${id}" does not exist here: GET /v1/models lists the models served.`,
        });
      return claiming(request)?.models?.model(found, created) ?? found;
    },
  );
}
