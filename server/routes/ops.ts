import type { FastifyInstance } from 'fastify';
import { upstreamJsonProblem } from '../../protocol/completion-shape.js';
import type { AppState } from '../app-state.js';
import { readText } from '../chat/attempt.js';

export function registerOpsRoutes(app: FastifyInstance, state: AppState): void {
  state.metrics.followFallbackMemory(() => state.memory.active());
  state.metrics.followOpenStreams(() => state.openStreams.streaming());
  app.get('/health', { schema: { tags: ['ops'], summary: 'The process is up.' } }, async () => ({
    status: 'ok',
  }));

  // Claude Code warms its connection with HEAD <base>/api/hello (and its doctor GETs it): answered
  // here rather than sent to the model server, which has no such route.
  app.get(
    '/api/hello',
    { schema: { tags: ['ops'], summary: "Claude Code's connection probe." } },
    async () => ({
      status: 'ok',
    }),
  );

  app.get(
    '/ready',
    { schema: { tags: ['ops'], summary: 'Every configured upstream answers.' } },
    async (_request, reply) => {
      const targets = [
        ...(state.config.defaultUpstream ? [state.upstreams.for(state.config.defaultUpstream)] : []),
        ...Object.values(state.config.models).map((m) => state.upstreams.for(m.upstream)),
      ];
      const unique = [...new Set(targets)];
      const served = state.config.defaultUpstream
        ? state.upstreams.for(state.config.defaultUpstream)
        : undefined;
      const checks = await Promise.all(
        unique.map(async (client) => {
          try {
            const res = await client.request({
              method: 'GET',
              path: '/models',
              signal: AbortSignal.timeout(3_000),
            });
            const text = await readText(res);
            // Readiness probes poll this: what the default upstream serves keeps its own metric
            // label (see ServedModelLabels).
            if (client === served && res.status === 200) state.modelLabels.serve(listedIds(text));
            return { upstream: client.label, ok: res.status < 500, status: res.status };
          } catch (err) {
            return { upstream: client.label, ok: false, error: (err as Error).message };
          }
        }),
      );
      const ready = checks.every((c) => c.ok);
      // What serves the models when nothing else was configured: a launcher that finds this
      // toolproof running says so (cli/launch), as the process's own first log line does.
      return reply.code(ready ? 200 : 503).send({
        status: ready ? 'ready' : 'not_ready',
        ...(state.config.simulator ? { simulator: true } : {}),
        upstreams: checks,
      });
    },
  );

  app.get(
    '/metrics',
    { schema: { tags: ['ops'], summary: 'Prometheus metrics.' } },
    async (_request, reply) => reply.type(state.metrics.contentType).send(await state.metrics.render()),
  );
}

/** The model ids of a /v1/models answer ({"data":[{"id":...}]}), none when it is anything else. */
function listedIds(text: string): string[] {
  // Not parsed past the upstream bounds (nesting, keys): 1 MB of nested arrays held /ready 1.4 s.
  if (upstreamJsonProblem(text) !== undefined) return [];
  try {
    const data = (JSON.parse(text) as { data?: unknown } | null)?.data;
    return Array.isArray(data)
      ? data.map((m) => (m as { id?: unknown } | null)?.id).filter((id) => typeof id === 'string')
      : [];
  } catch {
    return [];
  }
}
