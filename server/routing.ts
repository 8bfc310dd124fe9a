/**
 * Request `model` -> where it goes and which settings apply. A YAML-mapped model wins; other
 * names go to the default upstream (TOOLPROOF_UPSTREAM_URL) with the default settings; when
 * there is no default upstream an unmapped model is a 404.
 */
import { ToolproofError } from '../protocol/errors.js';
import { globMatch } from '../protocol/glob.js';
import { ownString } from '../protocol/own-string.js';
import type { PriorityClass } from './admission.js';
import type { ApiKeyEntry } from './config-keys.js';
import type { Config } from './config.js';
import { allowsModel } from './keys.js';
import type { ModelSettings } from '../protocol/settings.js';
import type { UpstreamClient, Upstreams } from './upstream.js';

/** Where a request goes and which settings apply (resolveRoute). */
export interface ResolvedRoute {
  /** The model name as the client sent it (metrics label). */
  name: string;
  settings: ModelSettings;
  client: UpstreamClient;
  upstreamModel?: string;
  /** The model route's priority class (YAML `priority`). */
  priority?: PriorityClass;
  /** The client's name was an alias or matched a glob of `routes` (the name above is the model's). */
  alias?: boolean;
  /** Models tried in order when this one fails before the first byte (their names). */
  fallback?: readonly string[];
  /** The model for prompts beyond `contextWindow`. */
  longContext?: string;
  contextWindow?: number;
}

/** The configured model `name` as a route (fallbacks and long-context routes point at these). */
export function mappedRoute(config: Config, upstreams: Upstreams, name: string): ResolvedRoute | undefined {
  const mapped = Object.hasOwn(config.models, name) ? config.models[name] : undefined;
  if (!mapped) return undefined;
  return {
    name,
    settings: mapped.settings,
    client: upstreams.for(mapped.upstream),
    // The upstream is told the model's own name when the client said another (an alias).
    upstreamModel: mapped.upstreamModel ?? name,
    ...(mapped.priority ? { priority: mapped.priority } : {}),
    ...(mapped.fallback ? { fallback: mapped.fallback } : {}),
    ...(mapped.longContext ? { longContext: mapped.longContext } : {}),
    ...(mapped.contextWindow ? { contextWindow: mapped.contextWindow } : {}),
  };
}

/**
 * Metric labels must come from small sets: models the YAML maps are bounded by the config, but
 * names sent to the default upstream are whatever clients write. The first `cap` distinct names
 * keep their own label; later ones share "other" (the log line still has the request's model).
 */
export class ModelLabels {
  private readonly seen = new Set<string>();
  constructor(private readonly cap = 100) {}

  label(name: string): string {
    if (this.seen.has(name)) return name;
    if (this.seen.size >= this.cap) return 'other';
    this.seen.add(name);
    return name;
  }
}

/** What resolveRoute asks for a label: a first-seen ModelLabels or the ServedModelLabels below. */
export interface LabelSource {
  label(name: string): string;
}

/**
 * Model names on metric labels, for names the YAML does not map (those go to the default
 * upstream, and clients write them). A name keeps its own label only once it is known to be a
 * real model, so junk (even names that 404) takes no slot and cannot push real models into
 * "other": names the default upstream lists as its models (its /v1/models, read at start-up
 * and when /ready or /v1/models asks it), up to `cap`; and names it answered with success, in a bucket of cap/2 of
 * their own (an upstream that answers any name, as llama-server does, fills only that bucket,
 * never the listed names' slots). Until then a name counts as "other" (its log line still says
 * which name it was). Bounded: at most cap + cap/2 names.
 */
export class ServedModelLabels implements LabelSource {
  private readonly served = new Set<string>();
  private readonly answered = new Set<string>();
  constructor(private readonly cap = 100) {}

  label(name: string): string {
    return this.served.has(name) || this.answered.has(name) ? name : 'other';
  }

  /** Names the default upstream lists as its models. */
  serve(names: Iterable<unknown>): void {
    for (const name of names) {
      if (this.served.size >= this.cap) return;
      if (typeof name === 'string' && name.length > 0 && name.length <= 128) this.served.add(ownString(name));
    }
  }

  /** A name the upstream answered with success (a completion, an embedding: not an estimate). */
  answeredWith(name: string): void {
    if (name.length === 0 || name.length > 128 || this.served.has(name) || this.answered.has(name)) return;
    // A copy of its own: the name is often the head of a longer one (app.ts cuts it at 128), and
    // a slice would hold the client's whole model name (of any length) for the process's life.
    if (this.answered.size < Math.floor(this.cap / 2)) this.answered.add(ownString(name));
  }
}

/**
 * Routes resolved before, per app (its Upstreams): a route is a pure function of the config and
 * the name, and every request resolved it again (a fresh object, a slice, two lookups). Bounded:
 * only mapped names (the config's) and names that have their own label (the labels' cap).
 */
const resolved = new WeakMap<Upstreams, { config: Config; routes: Map<string, ResolvedRoute> }>();

export function resolveRoute(
  config: Config,
  upstreams: Upstreams,
  model: unknown,
  labels: LabelSource,
  /** The asking key: a 404 lists only the models its allow-list lets it see, as /v1/models does. */
  key?: ApiKeyEntry,
): ResolvedRoute {
  const name = typeof model === 'string' ? model : '';
  // Per configuration: a reload's routes replace the cached ones.
  let held = resolved.get(upstreams);
  if (held === undefined || held.config !== config)
    resolved.set(upstreams, (held = { config, routes: new Map() }));
  const cache = held.routes;
  const known = cache.get(name);
  if (known !== undefined) return known;
  const route = resolveUncached(config, upstreams, name, labels, key);
  if (route.name === name || route.alias) cache.set(name, route);
  return route;
}

/**
 * The metric label of a requested model name: a name the YAML maps is its own label; any other
 * name is the labels' to judge ("other" until it has one); no name at all is "none".
 */
export function modelLabel(config: Config, name: string, labels: LabelSource): string {
  if (name && Object.hasOwn(config.models, name)) return name;
  return name ? labels.label(name.slice(0, 128)) : 'none';
}

function resolveUncached(
  config: Config,
  upstreams: Upstreams,
  name: string,
  labels: LabelSource,
  key: ApiKeyEntry | undefined,
): ResolvedRoute {
  // Own keys only: "constructor" or "__proto__" must not find Object.prototype's members.
  const mapped = name && Object.hasOwn(config.models, name) ? config.models[name] : undefined;
  if (mapped) {
    return {
      name,
      settings: mapped.settings,
      client: upstreams.for(mapped.upstream),
      ...(mapped.upstreamModel ? { upstreamModel: mapped.upstreamModel } : {}),
      ...(mapped.priority ? { priority: mapped.priority } : {}),
      ...(mapped.fallback ? { fallback: mapped.fallback } : {}),
      ...(mapped.longContext ? { longContext: mapped.longContext } : {}),
      ...(mapped.contextWindow ? { contextWindow: mapped.contextWindow } : {}),
    };
  }
  // Aliases and globs, in the order the YAML lists them (the name is cut: bounded work).
  const short = name.slice(0, 256);
  for (const rule of config.routes) {
    if (!rule.match.some((pattern) => globMatch(pattern, short))) continue;
    const target = mappedRoute(config, upstreams, rule.model);
    if (target) return { ...target, alias: true };
  }
  if (config.defaultUpstream) {
    return {
      name: modelLabel(config, name, labels),
      settings: config.defaults,
      client: upstreams.for(config.defaultUpstream),
    };
  }
  const names = Object.keys(config.models).filter((m) => allowsModel(key, m));
  throw new ToolproofError('TP_ERR_MODEL_NOT_FOUND', {
    param: 'model',
    message: `The model "${name}" does not exist. Configured models: ${names.join(', ') || '(none)'}.`,
  });
}
