/**
 * POST /v1/conversations and POST /v1/conversations/{id} through the real server: metadata is
 * held to OpenAI's bounds (16 string pairs, keys up to 64 characters, values up to 512), as its
 * own 400 said; before, any object was kept (nested, megabytes of it) and read back whole on every
 * GET of the conversation. A body that is not an object (an array, a string, null) made a
 * conversation; now a 400 in the OpenAI shape, as a Responses request's is.
 */
import { describe, expect, it } from 'vitest';
import { answerJson, proxyInFrontOf, textCompletion } from '../support/harness.js';

const pair = proxyInFrontOf(answerJson(textCompletion('ok')));

async function post(path: string, body: string) {
  const res = await fetch(`${pair.proxy.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
  return {
    status: res.status,
    json: (await res.json()) as { id?: string; metadata?: unknown; error?: unknown },
  };
}

const pairs = (n: number, value = 'v') =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, value]));

describe('conversation metadata and bodies', () => {
  it('16 pairs at the longest are kept; past any bound, a 400 naming metadata', async () => {
    const widest = { ...pairs(15, 'v'.repeat(512)), ['k'.repeat(64)]: 'x' };
    const made = await post('/v1/conversations', JSON.stringify({ metadata: widest }));
    expect(made.status).toBe(200);
    expect(made.json.metadata).toEqual(widest);
    const id = made.json.id!;
    const refused = [
      { metadata: pairs(17) },
      { metadata: { k: 'v'.repeat(513) } },
      { metadata: { ['k'.repeat(65)]: 'v' } },
      { metadata: { k: { nested: 'x'.repeat(100_000) } } },
      { metadata: { k: 5 } },
      { metadata: ['v'] },
    ];
    for (const body of refused)
      for (const path of ['/v1/conversations', `/v1/conversations/${id}`]) {
        const res = await post(path, JSON.stringify(body));
        expect(res.status, `${path} ${JSON.stringify(body).slice(0, 80)}`).toBe(400);
        expect(res.json.error).toMatchObject({ type: 'invalid_request_error', code: 'TP_ERR_INVALID_FIELD' });
        expect((res.json.error as { param: string }).param).toMatch(/^metadata/);
      }
    // The conversation kept its metadata through the refused updates.
    const got = await fetch(`${pair.proxy.origin}/v1/conversations/${id}`);
    expect(((await got.json()) as { metadata: unknown }).metadata).toEqual(widest);
  });

  it('a body that is not an object is a 400, and makes no conversation', async () => {
    const made = await post('/v1/conversations', '{}');
    const id = made.json.id!;
    for (const body of ['[]', '"x"', 'null', '5'])
      for (const path of ['/v1/conversations', `/v1/conversations/${id}`, `/v1/conversations/${id}/items`]) {
        const res = await post(path, body);
        expect(res.status, `${path} ${body}`).toBe(400);
        expect(res.json.error).toMatchObject({ type: 'invalid_request_error', param: 'body' });
      }
  });
});
