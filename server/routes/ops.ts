import type { FastifyInstance } from 'fastify';
import type { AppState } from '../app-state.js';
import { readText } from '../chat/attempt.js';

export function registerOpsRoutes(app: FastifyInstance, state: AppState): void {
  app.get('/health', { schema: { tags: ['ops'], summary: 'The process is up.' } }, async () => ({
    status: 'ok',
  }));

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
    async (_request, reply) => {
      for (const [upstream, model] of state.memory.active())
        state.metrics.toolChoiceFallbackActive.labels(upstream, model).set(1);
      // Expired memories drop back to 0 so the "fallback in effect" alert resolves.
      const active = new Set(state.memory.active().map(([u, m]) => `${u}\u0000${m}`));
      const gauge = await state.metrics.toolChoiceFallbackActive.get();
      for (const v of gauge.values) {
        const key = `${v.labels.upstream}\u0000${v.labels.model}`;
        if (!active.has(key))
          state.metrics.toolChoiceFallbackActive
            .labels(String(v.labels.upstream), String(v.labels.model))
            .set(0);
      }
      return reply.type(state.metrics.registry.contentType).send(await state.metrics.registry.metrics());
    },
  );
}
