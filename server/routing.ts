/**
 * Request `model` -> where it goes and which settings apply. A YAML-mapped model wins; other
 * names go to the default upstream (TOOLPROOF_UPSTREAM_URL) with the default settings; when
 * there is no default upstream an unmapped model is a 404.
 */
import { ToolproofError } from '../protocol/errors.js';
import type { Config } from './config.js';
import type { ResolvedRoute } from './chat/context.js';
import type { Upstreams } from './upstream.js';

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

/**
 * Routes resolved before, per app (its Upstreams): a route is a pure function of the config and
 * the name, and every request resolved it again (a fresh object, a slice, two lookups). Bounded:
 * only mapped names (the config's) and names that kept their own label (ModelLabels' cap).
 */
const resolved = new WeakMap<Upstreams, Map<string, ResolvedRoute>>();

export function resolveRoute(
  config: Config,
  upstreams: Upstreams,
  model: unknown,
  labels: ModelLabels,
): ResolvedRoute {
  const name = typeof model === 'string' ? model : '';
  let cache = resolved.get(upstreams);
  if (cache === undefined) resolved.set(upstreams, (cache = new Map()));
  const known = cache.get(name);
  if (known !== undefined) return known;
  const route = resolveUncached(config, upstreams, name, labels);
  if (route.name === name) cache.set(name, route);
  return route;
}

function resolveUncached(
  config: Config,
  upstreams: Upstreams,
  name: string,
  labels: ModelLabels,
): ResolvedRoute {
  // Own keys only: "constructor" or "__proto__" must not find Object.prototype's members.
  const mapped = name && Object.hasOwn(config.models, name) ? config.models[name] : undefined;
  if (mapped) {
    return {
      name,
      settings: mapped.settings,
      client: upstreams.for(mapped.upstream),
      ...(mapped.upstreamModel ? { upstreamModel: mapped.upstreamModel } : {}),
    };
  }
  if (config.defaultUpstream) {
    return {
      name: labels.label(name.slice(0, 128) || 'unknown'),
      settings: config.defaults,
      client: upstreams.for(config.defaultUpstream),
    };
  }
  throw new ToolproofError('TP_ERR_MODEL_NOT_FOUND', {
    param: 'model',
    message: `The model "${name}" does not exist. Configured models: ${Object.keys(config.models).join(', ') || '(none)'}.`,
  });
}
