import type { FastifyInstance } from 'fastify';
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
      const checks = await Promise.all(
        unique.map(async (client) => {
          try {
            const res = await client.request({
              method: 'GET',
              path: '/models',
              signal: AbortSignal.timeout(3_000),
            });
            await readText(res);
            return { upstream: client.label, ok: res.status < 500, status: res.status };
          } catch (err) {
            return { upstream: client.label, ok: false, error: (err as Error).message };
          }
        }),
      );
      const ready = checks.every((c) => c.ok);
      return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not_ready', upstreams: checks });
    },
  );

  app.get(
    '/metrics',
    { schema: { tags: ['ops'], summary: 'Prometheus metrics.' } },
    async (_request, reply) => reply.type(state.metrics.contentType).send(await state.metrics.render()),
  );
}
