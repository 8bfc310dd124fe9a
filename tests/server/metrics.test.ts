import { describe, expect, it } from 'vitest';
import { FallbackMemory } from '../../server/fallback-memory.js';
import { createMetrics } from '../../server/metrics.js';

describe('toolproof_tool_choice_fallback_active', () => {
  it('is read from the fallback memory at every collection: 1 while remembered, 0 once expired', async () => {
    let now = 1_000_000;
    const memory = new FallbackMemory(() => now);
    const metrics = createMetrics({ defaultMetrics: false });
    metrics.followFallbackMemory(() => memory.active());
    memory.remember('http://up/v1', 'm1', 60);
    expect(await metrics.render()).toMatch(
      /toolproof_tool_choice_fallback_active\{upstream="http:\/\/up\/v1",model="m1"\} 1/,
    );
    now += 61_000;
    // The same collection the cluster primary asks each worker for (getMetricsAsJSON) sees it too.
    const json = await metrics.registry.getMetricsAsJSON();
    const gauge = json.find((m) => m.name === 'toolproof_tool_choice_fallback_active');
    expect(gauge?.values).toEqual([{ value: 0, labels: { upstream: 'http://up/v1', model: 'm1' } }]);
    expect((gauge as { aggregator?: string } | undefined)?.aggregator).toBe('max');
  });

  it('render() is the registry until a cluster worker replaces it with the group view', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    expect(await metrics.render()).toContain('toolproof_requests_total');
    metrics.setExposition(async () => 'group\n');
    expect(await metrics.render()).toBe('group\n');
  });
});
