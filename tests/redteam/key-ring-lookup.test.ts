/**
 * Every request is matched against the keys (server/keys.ts KeyRing), with a key or without one.
 * The presented key's SHA-256 was compared with each key's in turn: a keys file of 10,000 keys
 * cost ~0.8 ms of the event loop a request, 100,000 ~12 ms, paid for any request by anyone who
 * can reach the port (a wrong key is matched to the end). Now one lookup by digest: a request
 * costs the same whatever the number of keys.
 */
import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { KeyRing } from '../../server/keys.js';
import { compareCosts, cpuMsOf } from '../support/cost-scaling.js';

const ring = (n: number) =>
  new KeyRing(
    Array.from({ length: n }, (_, i) => ({ name: `k${i}`, key: `sk-test-${i}-${'x'.repeat(24)}` })),
  );

const request = (headers: Record<string, string>, url = '/v1/chat/completions') =>
  ({ headers, routeOptions: { url } }) as unknown as FastifyRequest;

/** CPU ms of 200 matches of a wrong key. */
function cost(r: KeyRing): number {
  const wrong = request({ authorization: 'Bearer sk-not-a-key-of-this-ring' });
  return cpuMsOf(() => {
    for (let i = 0; i < 200; i++) r.match(wrong);
  });
}

describe('the key ring', () => {
  it('finds a key by Bearer, x-api-key and (on the inspector) Basic; no other', () => {
    const r = ring(1000);
    expect(r.match(request({ authorization: 'Bearer sk-test-7-xxxxxxxxxxxxxxxxxxxxxxxx' }))?.name).toBe('k7');
    expect(r.match(request({ 'x-api-key': 'sk-test-999-xxxxxxxxxxxxxxxxxxxxxxxx' }))?.name).toBe('k999');
    const basic = `Basic ${Buffer.from('any:sk-test-3-xxxxxxxxxxxxxxxxxxxxxxxx').toString('base64')}`;
    expect(r.match(request({ authorization: basic }, '/inspect/api/requests'))?.name).toBe('k3');
    expect(r.match(request({ authorization: basic }))).toBeUndefined();
    expect(r.match(request({ authorization: 'Bearer sk-test-7-xxxxxxxxxxxxxxxxxxxxxxx' }))).toBeUndefined();
    expect(r.match(request({ authorization: 'Bearer ' }))).toBeUndefined();
    expect(r.match(request({}))).toBeUndefined();
  });

  it('matches a request at the same cost with 20,000 keys as with 10', () => {
    const small = ring(10);
    const large = ring(20_000);
    // before: ~x100 (each of the 20,000 digests compared); a lookup: ~x1
    const c = compareCosts(
      () => cost(large),
      () => cost(small),
      (many, few) => many < few * 5 + 5,
      5,
    );
    expect(c.ok, JSON.stringify(c)).toBe(true);
  });
});
