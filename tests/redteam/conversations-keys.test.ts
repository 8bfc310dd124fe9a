/**
 * The Responses store's conversations (server/front-doors/responses/item-store.ts, sessions18)
 * attacked as another key holder, through the real server on loopback: key A knows key B's
 * response id, conversation id and item ids (leaked in a log, a shared screenshot) and tries to
 * continue, read (the upstream would be sent B's conversation), delete, or refer to them; and B
 * continues its conversation while deleting it. Each is the answer a stranger's id gets, in the
 * OpenAI shape, with nothing of B's sent upstream; B's conversation still goes on.
 */
import { describe, expect, it } from 'vitest';
import { answerJson, proxyInFrontOf, textCompletion } from '../support/harness.js';

const A = 'sk-conv-a-00000000000001';
const B = 'sk-conv-b-00000000000002';
const SECRET = 'b-secret-words-7f3a';

const pair = proxyInFrontOf(answerJson(textCompletion('ok')), {
  file: {
    keys: [
      { name: 'a', key: A },
      { name: 'b', key: B },
    ],
  },
});

async function call(key: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${pair.proxy.origin}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

describe("key A and key B's conversation", () => {
  it('A can neither continue, refer to, nor delete what B keeps', async () => {
    const conv = await call(B, 'POST', '/v1/conversations', {
      items: [{ type: 'message', role: 'user', content: SECRET }],
    });
    expect(conv.status).toBe(200);
    const convId = conv.json.id as string;
    const first = await call(B, 'POST', '/v1/responses', { model: 'm1', conversation: convId, input: 'hi' });
    expect(first.status).toBe(200);
    const respId = first.json.id as string;
    const itemId = (first.json.output as Array<{ id: string }>)[0]!.id;
    const before = pair.upstream.requests.length;

    const tries = [
      await call(A, 'POST', '/v1/responses', { model: 'm1', previous_response_id: respId, input: 'go on' }),
      await call(A, 'POST', '/v1/responses', { model: 'm1', conversation: convId, input: 'go on' }),
      await call(A, 'POST', '/v1/responses', { model: 'm1', conversation: { id: convId }, input: 'go on' }),
      await call(A, 'POST', '/v1/responses', {
        model: 'm1',
        input: [
          { type: 'message', role: 'user', content: 'x' },
          { type: 'item_reference', id: itemId },
        ],
      }),
    ];
    for (const t of tries.slice(0, 3)) {
      expect(t.status).toBe(400);
      expect(t.json.error).toMatchObject({ type: 'invalid_request_error' });
      expect(JSON.stringify(t.json)).not.toContain(SECRET);
    }
    // A reference A does not hold is a note, never B's item.
    expect(pair.upstream.requests.length - before).toBe(1);
    const afterA = pair.upstream.requests.slice(before).map((r) => r.body.toString());
    for (const sent of afterA) {
      expect(sent).not.toContain(SECRET);
      expect(sent).not.toContain('"ok"');
    }
    const deleted = await call(A, 'DELETE', `/v1/conversations/${convId}`);
    expect(deleted.status).toBe(404);
    expect(deleted.json.error).toMatchObject({ type: 'invalid_request_error' });

    // B's conversation still goes on, with what B kept.
    const next = await call(B, 'POST', '/v1/responses', { model: 'm1', conversation: convId, input: 'and?' });
    expect(next.status).toBe(200);
    const last = pair.upstream.requests.at(-1)!.body.toString();
    expect(last).toContain(SECRET);
    expect(last).toContain('and?');
  });

  it('B continuing its conversation while deleting it: each answered, then the conversation is gone', async () => {
    const conv = await call(B, 'POST', '/v1/conversations', {});
    const convId = conv.json.id as string;
    const results = await Promise.all([
      ...Array.from({ length: 8 }, (_, i) =>
        call(B, 'POST', '/v1/responses', { model: 'm1', conversation: convId, input: `turn ${i}` }),
      ),
      call(B, 'DELETE', `/v1/conversations/${convId}`),
      ...Array.from({ length: 8 }, (_, i) =>
        call(B, 'POST', '/v1/responses', { model: 'm1', conversation: convId, input: `late ${i}` }),
      ),
    ]);
    for (const r of results) expect([200, 400]).toContain(r.status);
    expect(results[8]!.status).toBe(200);
    const after = await call(B, 'POST', '/v1/responses', {
      model: 'm1',
      conversation: convId,
      input: 'again',
    });
    expect(after.status).toBe(400);
    expect((after.json.error as { param?: string }).param).toBe('conversation');
  });
});
