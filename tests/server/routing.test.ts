/**
 * resolveRoute keeps what it resolved per app: the same name is one route object, and the cache
 * stays bounded by the config and ModelLabels' cap (names past it share "other" and stay out).
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../server/config.js';
import { ModelLabels, resolveRoute } from '../../server/routing.js';
import { Upstreams } from '../../server/upstream.js';

const config = loadConfig({ TOOLPROOF_UPSTREAM_URL: 'http://127.0.0.1:9/v1' });

describe('resolveRoute', () => {
  it('resolves a name once per app: the same route object every time', () => {
    const upstreams = new Upstreams(config.timeouts);
    const labels = new ModelLabels(2);
    const first = resolveRoute(config, upstreams, 'm', labels);
    expect(first).toMatchObject({ name: 'm', settings: config.defaults });
    expect(resolveRoute(config, upstreams, 'm', labels)).toBe(first);
    // Another app (its own Upstreams) resolves its own.
    expect(resolveRoute(config, new Upstreams(config.timeouts), 'm', labels)).not.toBe(first);
  });

  it('names past the label cap share "other" and are resolved afresh each time', () => {
    const upstreams = new Upstreams(config.timeouts);
    const labels = new ModelLabels(1);
    expect(resolveRoute(config, upstreams, 'a', labels).name).toBe('a');
    const b = resolveRoute(config, upstreams, 'b', labels);
    expect(b.name).toBe('other');
    expect(resolveRoute(config, upstreams, 'b', labels)).not.toBe(b);
    // No name at all: a fixed label of its own, no slot taken.
    expect(resolveRoute(config, upstreams, undefined, labels).name).toBe('none');
  });

  it('an unknown model without a default upstream is still a 404 every time', () => {
    const none = loadConfig({}, { models: {} } as never);
    const upstreams = new Upstreams(none.timeouts);
    for (let i = 0; i < 2; i++)
      expect(() => resolveRoute(none, upstreams, 'x', new ModelLabels())).toThrow(/does not exist/);
  });
});
