import type { FastifyInstance } from 'fastify';
import type { AppState } from '../app-state.js';
import { readText } from '../chat/attempt.js';
import type { UpstreamClient } from '../upstream.js';

interface ModelEntry {
  id: string;
  object: 'model';
  created?: number;
  owned_by?: string;
  [extra: string]: unknown;
}

async function listUpstream(client: UpstreamClient, signal: AbortSignal): Promise<ModelEntry[]> {
  const res = await client.request({ method: 'GET', path: '/models', signal });
  const text = await readText(res);
  if (res.status >= 400) throw new Error(`HTTP ${res.status}`);
  const body = JSON.parse(text) as { data?: unknown };
  return Array.isArray(body.data)
    ? (body.data.filter((m) => m && typeof (m as ModelEntry).id === 'string') as ModelEntry[])
    : [];
}

export function registerModelRoutes(app: FastifyInstance, state: AppState): void {
  app.get(
    '/v1/models',
    {
      schema: {
        tags: ['openai'],
        summary: 'Models of every configured upstream, plus the configured model names.',
      },
    },
    async (request) => {
      const signal = AbortSignal.timeout(Math.min(state.config.timeouts.firstByteMs, 10_000));
      const data = new Map<string, ModelEntry>();
      const created = Math.floor(Date.now() / 1000);
      for (const [name, route] of Object.entries(state.config.models)) {
        data.set(name, {
          id: name,
          object: 'model',
          created,
          owned_by: 'toolproof',
          upstream_model: route.upstreamModel ?? name,
        });
      }
      const targets = [
        ...(state.config.defaultUpstream ? [state.upstreams.for(state.config.defaultUpstream)] : []),
        ...Object.values(state.config.models).map((m) => state.upstreams.for(m.upstream)),
      ];
      const unique = [...new Set(targets)];
      const results = await Promise.allSettled(unique.map((c) => listUpstream(c, signal)));
      results.forEach((r, i) => {
        if (r.status === 'fulfilled') {
          for (const m of r.value) if (!data.has(m.id)) data.set(m.id, m);
        } else {
          request.log.warn(
            { upstream: unique[i]!.label, err: String(r.reason) },
            'listing upstream models failed',
          );
        }
      });
      const list = [...data.values()];
      // An Anthropic client (its SDKs always send anthropic-version) reads Anthropic's page shape:
      // type, display_name and created_at per model, has_more / first_id / last_id. Added beside
      // the OpenAI fields, so either client reads the same answer.
      if (request.headers['anthropic-version'] !== undefined) {
        const models = list.map((m) => ({
          ...m,
          type: 'model',
          display_name: m.id,
          created_at: new Date((typeof m.created === 'number' ? m.created : created) * 1000).toISOString(),
        }));
        return {
          object: 'list',
          data: models,
          has_more: false,
          first_id: models[0]?.id ?? null,
          last_id: models.at(-1)?.id ?? null,
        };
      }
      return { object: 'list', data: list };
    },
  );
}
