/**
 * What toolproof asks of the backends before a configuration is used: at start-up, before the
 * server listens, and at each reload, before the swap (so a model's requests never see a setting
 * change between two turns, and a reload does not put what was learnt back to unknown). The
 * template probe (preserveThinking, startsInReasoning) and the capability probe (vision, audio,
 * the context window), each one /props per upstream.
 */
import { fetchJson, type JsonFetcher, resolveCapabilities } from './capability-probe.js';
import type { Config } from './config.js';
import { resolvePreserveThinking } from './template-probe.js';

/** `config` with every `auto` the backends can answer resolved. */
export async function askBackends(config: Config, fetcher: JsonFetcher = fetchJson): Promise<Config> {
  return resolveCapabilities(await resolvePreserveThinking(config, fetcher), fetcher);
}
