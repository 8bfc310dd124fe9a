/**
 * preserveThinking 'auto' and startsInReasoning 'auto' (protocol/settings.ts), resolved once at
 * start-up (startsInReasoning: the template's generation prompt opens <think>, see
 * templateOpensReasoning). preserveThinking: llama-server's
 * GET /props returns its chat template, and a template with a switch for keeping past reasoning
 * gets it switched on (protocol/template-kwargs.ts). Asked through the capability probe's
 * fetcher, with the upstream's key (a backend behind a key may guard /props). Resolved before the
 * server listens, so a model's requests never change kwargs between two turns of a conversation;
 * an upstream that does not answer (down, or vLLM, which has no /props) resolves to false until
 * the next start.
 */
import { templateHasThinkingSwitch, templateOpensReasoning } from '../protocol/template-kwargs.js';
import type { ModelSettings } from '../protocol/settings.js';
import { fetchJson, type JsonFetcher } from './capability-probe.js';
import type { Config, UpstreamTarget } from './config.js';

/**
 * `config` with every preserveThinking 'auto' replaced by what the upstream's template supports,
 * and every startsInReasoning 'auto' by whether its generation prompt opens the reasoning
 * (templateOpensReasoning: true, 'maybe' or false). One /props request per upstream origin.
 */
export async function resolvePreserveThinking(
  config: Config,
  fetcher: JsonFetcher = fetchJson,
): Promise<Config> {
  const seen = new Map<string, Promise<unknown>>();
  const props = (target: UpstreamTarget | undefined): Promise<unknown> => {
    const first = target?.urls[0];
    if (!first) return Promise.resolve(undefined);
    const origin = new URL(first).origin;
    let known = seen.get(origin);
    if (!known) seen.set(origin, (known = fetcher(`${origin}/props`, target.apiKey)));
    return known;
  };
  const resolve = async (
    settings: ModelSettings,
    target: UpstreamTarget | undefined,
  ): Promise<ModelSettings> => {
    const preserve = settings.preserveThinking === 'auto';
    const starts = settings.startsInReasoning === 'auto';
    if (!preserve && !starts) return settings;
    const p = await props(target);
    return Object.freeze({
      ...settings,
      ...(preserve ? { preserveThinking: templateHasThinkingSwitch(p) } : {}),
      ...(starts ? { startsInReasoning: templateOpensReasoning(p) } : {}),
    });
  };
  const defaults = await resolve(config.defaults, config.defaultUpstream);
  const models: Record<string, Config['models'][string]> = Object.create(null);
  let changed = defaults !== config.defaults;
  for (const [name, route] of Object.entries(config.models)) {
    const settings = await resolve(route.settings, route.upstream);
    changed ||= settings !== route.settings;
    models[name] = settings === route.settings ? route : Object.freeze({ ...route, settings });
  }
  if (!changed) return config;
  return Object.freeze({ ...config, defaults, models: Object.freeze(models) });
}
