/**
 * What each model can take, asked of its backend once at start-up, before the server listens
 * (so no conversation sees it change between two turns; a configuration reload asks again):
 * `vision: auto`, `audio: auto` and `contextWindow: 0` (protocol/settings.ts) are resolved here.
 *
 * - llama-server: GET /props says `modalities.vision` and `modalities.audio` (what its --mmproj
 *   projector takes) and the context size (`default_generation_settings.n_ctx`).
 * - vLLM has no /props: GET /v1/models gives each served model's `max_model_len`. Whether it
 *   takes images is not exposed, so `vision: auto` stays auto there (images pass unchanged):
 *   set `vision: false` for a text-only model on vLLM (docs/configuration.md). Nor is audio:
 *   `audio: auto` stays auto, and audio passes until the backend refuses it (then as a note).
 * A backend that does not answer, or a /props without the field, leaves each unknown until the
 * next start or reload. The same answers say which server it is (ModelSettings.backend: a
 * /props that reads as llama-server's, else /v1/models `owned_by`), whose fix a leak's hint names.
 */
import { request } from 'undici';
import { type ModelSettings, resolvedFromBackend, type UpstreamKind } from '../protocol/settings.js';
import { isObject } from '../protocol/is-object.js';
import type { Config, UpstreamTarget } from './config.js';
import { readProbeJson } from './probe-json.js';

export interface BackendFacts {
  vision?: boolean;
  audio?: boolean;
  contextWindow?: number;
  /** Which server it is: a /props that reads as llama-server's, else its /v1/models `owned_by`. */
  backend?: UpstreamKind;
}

/**
 * /v1/models `owned_by` -> the server that wrote it: each server's own default (llama.cpp's server
 * 'llamacpp', vLLM's and SGLang's ModelCard 'vllm' and 'sglang'); a gateway's name is not known.
 */
const OWNERS: Readonly<Record<string, UpstreamKind>> = {
  llamacpp: 'llama-server',
  vllm: 'vllm',
  sglang: 'sglang',
};

/** GET `url` as JSON within 3 s (Bearer key when given); undefined on any failure. */
export type JsonFetcher = (url: string, apiKey?: string) => Promise<unknown>;

/**
 * A probe's whole time, its body included. undici's bodyTimeout is the longest silence between
 * two chunks: an upstream trickling its /props a byte every second held the start-up (which
 * waits for the probes before it listens) and a reload (before its swap) until the 1 MiB limit.
 */
const PROBE_MS = 3000;

/**
 * An upstream's 401 or 403 to a probe: it was started with an API key (llama-server and vLLM
 * `--api-key`) that toolproof was not given, or not that one. llama-server lists its models without
 * the key, so before this the first sign was the agent's first request refused.
 */
export interface Refusal {
  url: string;
  status: number;
  /** Whether a key was sent (then it is the wrong one). */
  keyed: boolean;
}

/** The JSON fetcher, telling `onRefused` of each 401 and 403. */
export function refusalFetcher(onRefused: (refusal: Refusal) => void): JsonFetcher {
  return async (url, apiKey) => {
    try {
      const res = await request(url, {
        headersTimeout: PROBE_MS,
        bodyTimeout: PROBE_MS,
        signal: AbortSignal.timeout(PROBE_MS),
        ...(apiKey ? { headers: { authorization: `Bearer ${apiKey}` } } : {}),
      });
      if (res.statusCode !== 200) {
        // Said before its body is read: a refusal whose body never ends is a refusal all the same.
        if (res.statusCode === 401 || res.statusCode === 403)
          onRefused({ url, status: res.statusCode, keyed: Boolean(apiKey) });
        await res.body.dump();
        return undefined;
      }
      return await readProbeJson(res.body);
    } catch {
      return undefined;
    }
  };
}

export const fetchJson: JsonFetcher = refusalFetcher(() => {});

/** One line for the start-up log: which upstream refused, and the setting that gives it its key. */
export function describeRefusal(r: Refusal): string {
  const { origin, pathname } = new URL(r.url);
  return r.keyed
    ? `the upstream at ${origin} refused the key toolproof sends (HTTP ${r.status} to GET ${pathname}): ` +
        'it is not one that server takes; give its key as TOOLPROOF_UPSTREAM_API_KEY (or models.NAME.apiKey in the YAML)'
    : `the upstream at ${origin} wants an API key (HTTP ${r.status} to GET ${pathname} without one: ` +
        'llama-server or vLLM started with --api-key): every request would be refused; ' +
        "give toolproof that key: TOOLPROOF_UPSTREAM_API_KEY=<the server's key> (or models.NAME.apiKey in the YAML)";
}

function positive(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : undefined;
}

/** llama-server's /props body -> facts; undefined when it is not one. */
export function factsFromProps(props: unknown): BackendFacts | undefined {
  if (!isObject(props)) return undefined;
  const facts: BackendFacts = {};
  const modalities = isObject(props.modalities) ? props.modalities : {};
  if (typeof modalities.vision === 'boolean') facts.vision = modalities.vision;
  if (typeof modalities.audio === 'boolean') facts.audio = modalities.audio;
  const settings = props.default_generation_settings;
  const ctx = positive(isObject(settings) ? settings.n_ctx : undefined) ?? positive(props.n_ctx);
  if (ctx) facts.contextWindow = ctx;
  return facts.vision === undefined && facts.audio === undefined && facts.contextWindow === undefined
    ? undefined
    : { ...facts, backend: 'llama-server' };
}

/** A /v1/models body -> `model`'s entry (or the only model served's). */
function modelEntry(body: unknown, model: string | undefined): Record<string, unknown> | undefined {
  const data = isObject(body) && Array.isArray(body.data) ? body.data.filter(isObject) : [];
  return (
    (model !== undefined ? data.find((m) => m.id === model) : undefined) ??
    (data.length === 1 ? data[0] : undefined)
  );
}

/** A /v1/models body -> the context window of `model` (or of the only model served). */
export function windowFromModels(body: unknown, model: string | undefined): number | undefined {
  const entry = modelEntry(body, model);
  if (!entry) return undefined;
  const meta = entry.meta;
  return positive(entry.max_model_len) ?? positive(isObject(meta) ? meta.n_ctx : undefined);
}

/** A /v1/models body -> the server that lists `model`, by its `owned_by`; undefined when unknown. */
export function kindFromModels(body: unknown, model: string | undefined): UpstreamKind | undefined {
  const owner = modelEntry(body, model)?.owned_by;
  return typeof owner === 'string' && Object.hasOwn(OWNERS, owner) ? OWNERS[owner] : undefined;
}

/**
 * `config` with every `vision: auto`, `audio: auto` and `contextWindow: 0` resolved from the
 * backends that say.
 */
export async function resolveCapabilities(config: Config, fetcher: JsonFetcher = fetchJson): Promise<Config> {
  const props = new Map<string, Promise<unknown>>();
  const models = new Map<string, Promise<unknown>>();
  const once = (cache: Map<string, Promise<unknown>>, url: string, key?: string): Promise<unknown> => {
    let p = cache.get(url);
    if (!p) cache.set(url, (p = fetcher(url, key)));
    return p;
  };
  const learn = async (
    target: UpstreamTarget | undefined,
    model: string | undefined,
  ): Promise<BackendFacts> => {
    const base = target?.urls[0];
    if (!base) return {};
    const fromProps = factsFromProps(await once(props, `${new URL(base).origin}/props`, target.apiKey));
    if (fromProps) return fromProps;
    const listed = await once(models, `${base}/models`, target.apiKey);
    const window = windowFromModels(listed, model);
    const backend = kindFromModels(listed, model);
    return { ...(window ? { contextWindow: window } : {}), ...(backend ? { backend } : {}) };
  };
  const resolve = async (
    settings: ModelSettings,
    target: UpstreamTarget | undefined,
    model: string | undefined,
  ): Promise<ModelSettings> => {
    if (settings.vision !== 'auto' && settings.audio !== 'auto' && settings.contextWindow > 0)
      return settings;
    const facts = await learn(target, model);
    const vision = settings.vision === 'auto' ? (facts.vision ?? 'auto') : settings.vision;
    const audio = settings.audio === 'auto' ? (facts.audio ?? 'auto') : settings.audio;
    const contextWindow = settings.contextWindow > 0 ? settings.contextWindow : (facts.contextWindow ?? 0);
    const backend = facts.backend ?? settings.backend;
    if (
      vision === settings.vision &&
      audio === settings.audio &&
      contextWindow === settings.contextWindow &&
      backend === settings.backend
    )
      return settings;
    return resolvedFromBackend(settings, { vision, audio, contextWindow, ...(backend ? { backend } : {}) });
  };
  const defaults = await resolve(config.defaults, config.defaultUpstream, undefined);
  const routes: Record<string, Config['models'][string]> = Object.create(null);
  let changed = defaults !== config.defaults;
  for (const [name, route] of Object.entries(config.models)) {
    const settings = await resolve(route.settings, route.upstream, route.upstreamModel ?? name);
    changed ||= settings !== route.settings;
    routes[name] = settings === route.settings ? route : Object.freeze({ ...route, settings });
  }
  if (!changed) return config;
  return Object.freeze({ ...config, defaults, models: Object.freeze(routes) });
}

/**
 * The model ids `target` lists (its /v1/models), none when it does not answer: read once at
 * start-up, so a served model keeps its own metric label from its first request on, not only
 * once /ready or /v1/models has asked (docs/metrics.md).
 */
export async function servedModelIds(
  target: UpstreamTarget,
  fetcher: JsonFetcher = fetchJson,
): Promise<string[]> {
  const base = target.urls[0];
  if (!base) return [];
  const body = await fetcher(`${base}/models`, target.apiKey);
  const data = isObject(body) && Array.isArray(body.data) ? body.data.filter(isObject) : [];
  return data.map((m) => m.id).filter((id): id is string => typeof id === 'string');
}
