/**
 * namedState (server/front-doors/responses/index.ts): the id of the kept state a Responses request
 * names first, by which TOOLPROOF_WORKERS > 1 carries it to the worker holding it
 * (server/worker-relay.ts; tests/server/responses-cluster.test.ts drives it). Read from a client's
 * body: its cost is linear in the input it scans.
 */
import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { namedState } from '../../../../server/front-doors/responses/index.js';
import { measureScaling, withinBudget } from '../../../support/cost-scaling.js';

const request = (url: string, body: unknown, params: Record<string, string> = {}) =>
  ({ routeOptions: { url }, params, body }) as unknown as FastifyRequest;

describe('namedState', () => {
  it('names the path id, else previous_response_id, conversation, the first item_reference', () => {
    expect(namedState(request('/v1/responses/:id/input_items', undefined, { id: 'resp_1' }), false)).toBe(
      'resp_1',
    );
    expect(
      namedState(
        request('/v1/conversations/:id/items/:item', undefined, { id: 'conv_1', item: 'msg_1' }),
        false,
      ),
    ).toBe('conv_1');
    const body = {
      previous_response_id: 'resp_2',
      conversation: 'conv_2',
      input: [{ type: 'item_reference', id: 'msg_2' }],
    };
    expect(namedState(request('/v1/responses', body), true)).toBe('resp_2');
    expect(namedState(request('/v1/responses', { ...body, previous_response_id: undefined }), true)).toBe(
      'conv_2',
    );
    expect(namedState(request('/v1/responses', { conversation: { id: 'conv_3' } }), true)).toBe('conv_3');
    expect(
      namedState(
        request('/v1/responses', {
          input: [
            { type: 'message', role: 'user', content: 'x' },
            { type: 'item_reference', id: 'fc_4' },
            { type: 'item_reference', id: 'fc_5' },
          ],
        }),
        true,
      ),
    ).toBe('fc_4');
    // A body is read only where the door says (not a catch-all's), and a body naming nothing names nothing.
    expect(namedState(request('/v1/responses/*', body), false)).toBeUndefined();
    expect(namedState(request('/v1/responses', { input: 'hi' }), true)).toBeUndefined();
    expect(namedState(request('/v1/responses', [1, 2]), true)).toBeUndefined();
  });

  it('budget: 4x the input items costs about 4x', () => {
    const s = measureScaling(
      (n) =>
        request('/v1/responses', {
          input: [
            ...Array.from({ length: n }, (_, i) => ({ type: 'message', role: 'user', content: `m${i}` })),
            { type: 'item_reference', id: 'msg_last' },
          ],
        }),
      (r) => namedState(r, true),
      { from: 1000, max: 1_000_000 },
    );
    expect(withinBudget(s, 5).time, JSON.stringify(s)).toBe(true);
  }, 60_000);
});
