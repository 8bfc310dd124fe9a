/**
 * The flat keys (TOOLPROOF_API_KEYS, server.apiKeys) beside named keys in the inspector. A named
 * key sees only its own requests; the flat keys saw every request, the named keys' prompts and
 * answers included, whatever was configured beside them. A deployment that gives each team a
 * named key and keeps a flat key for a CI job or a shared script thus handed that key every
 * team's conversations. Now, beside named keys, the flat keys see only the flat keys' requests,
 * on every way in (the list, one request with its copy-as-curl and its `?after=` refresh, the
 * sessions, a session's turns, the page's Basic sign-in, each worker of a cluster);
 * TOOLPROOF_API_KEYS_INSPECT=all gives them every request again. With flat keys alone, or no
 * key, every request is seen, as before.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { clusterOnYaml, freshRequest } from '../support/toolproof-process.js';
import { type Stack, startStack, weatherTool } from '../server/stack.js';

const FLAT = 'sk-flat-0123456789';
const FLAT2 = 'sk-flat2-0123456789';
const ALICE = 'sk-alice-0123456789';

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
/** What a browser sends once its user gave the key as the password of the sign-in prompt. */
const basic = (key: string) => ({
  authorization: `Basic ${Buffer.from(`anyone:${key}`).toString('base64')}`,
});

async function ask(s: Stack, key: string | undefined, text: string, session: string): Promise<string> {
  const res = await fetch(`${s.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-session-id': session, ...(key ? bearer(key) : {}) },
    body: JSON.stringify({ model: 'sim', messages: [{ role: 'user', content: text }], tools: [weatherTool] }),
  });
  expect(res.status).toBe(200);
  return res.headers.get('x-request-id')!;
}

const get = async (s: Stack, path: string, headers: Record<string, string>) => {
  const res = await fetch(`${s.origin}${path}`, { headers });
  return { status: res.status, text: await res.text() };
};
const listed = async (s: Stack, headers: Record<string, string>) =>
  new Set(
    (
      JSON.parse((await get(s, '/inspect/api/requests', headers)).text) as { requests: Array<{ id: string }> }
    ).requests.map((r) => r.id),
  );

/** Everything a reader with `headers` can reach of another key's request `id` in session `session`. */
async function reaches(
  s: Stack,
  headers: Record<string, string>,
  id: string,
  session: string,
  secret: string,
) {
  const one = await get(s, `/inspect/api/requests/${id}`, headers);
  const refresh = await get(s, `/inspect/api/requests/${id}?after=x`, headers);
  const sessions = await get(s, '/inspect/api/sessions', headers);
  const turns = await get(s, `/inspect/api/session?key=${encodeURIComponent(session)}`, headers);
  const filtered = await get(s, `/inspect/api/requests?session=${encodeURIComponent(session)}`, headers);
  return {
    one: one.status,
    refresh: refresh.status,
    // The request's view holds the prompt and copy-as-curl's body: neither may leak anywhere.
    leaks:
      [one, refresh, sessions, turns, filtered].some((r) => r.text.includes(secret)) ||
      // (the session view names the session it was asked for: only the others may not)
      [sessions, filtered].some((r) => r.text.includes(session)) ||
      (JSON.parse(turns.text) as { turns: unknown[] }).turns.length > 0,
  };
}

describe('the flat keys beside named keys, in the inspector', () => {
  it("see only the flat keys' requests: no named key's request, session or curl, by Bearer or Basic", async () => {
    stack = await startStack({
      env: { TOOLPROOF_API_KEYS: `${FLAT},${FLAT2}` },
      file: { keys: [{ name: 'alice', key: ALICE }] },
    });
    const aliceId = await ask(stack, ALICE, 'alice private prompt', 'alice-session');
    const flatId = await ask(stack, FLAT, 'flat prompt', 'flat-session');
    const flat2Id = await ask(stack, FLAT2, 'flat2 prompt', 'flat2-session');

    for (const headers of [bearer(FLAT), basic(FLAT), bearer(FLAT2)]) {
      // The flat keys are one owner ("default"): each sees both flat requests, never alice's.
      expect(await listed(stack, headers)).toEqual(new Set([flatId, flat2Id]));
      expect(await reaches(stack, headers, aliceId, 'alice-session', 'alice private prompt')).toEqual({
        one: 404,
        refresh: 404,
        leaks: false,
      });
      const own = JSON.parse((await get(stack, `/inspect/api/requests/${flatId}`, headers)).text) as {
        curl: string[];
      };
      expect(own.curl[0]).toContain('flat prompt');
    }
    // The page itself still opens for a flat key (its data is the API's above).
    expect((await get(stack, '/inspect', { ...basic(FLAT), accept: 'text/html' })).status).toBe(200);
    // The named key: its own, as before.
    expect(await listed(stack, bearer(ALICE))).toEqual(new Set([aliceId]));
  });

  it('TOOLPROOF_API_KEYS_INSPECT=all: the flat keys see every request again', async () => {
    stack = await startStack({
      env: { TOOLPROOF_API_KEYS: FLAT, TOOLPROOF_API_KEYS_INSPECT: 'all' },
      file: { keys: [{ name: 'alice', key: ALICE }] },
    });
    const aliceId = await ask(stack, ALICE, 'alice private prompt', 'alice-session');
    const flatId = await ask(stack, FLAT, 'flat prompt', 'flat-session');
    expect(await listed(stack, bearer(FLAT))).toEqual(new Set([aliceId, flatId]));
    expect((await get(stack, `/inspect/api/requests/${aliceId}`, bearer(FLAT))).status).toBe(200);
  });

  it('server.apiKeysInspect: own in the YAML holds as the variable does', async () => {
    stack = await startStack({
      file: { server: { apiKeys: [FLAT], apiKeysInspect: 'own' }, keys: [{ name: 'alice', key: ALICE }] },
    });
    const aliceId = await ask(stack, ALICE, 'alice private prompt', 'alice-session');
    const flatId = await ask(stack, FLAT, 'flat prompt', 'flat-session');
    expect(await listed(stack, bearer(FLAT))).toEqual(new Set([flatId]));
    expect(aliceId).not.toBe(flatId);
  });

  it('flat keys alone, and no key at all: every request is seen, as before', async () => {
    stack = await startStack({ env: { TOOLPROOF_API_KEYS: `${FLAT},${FLAT2}` } });
    const a = await ask(stack, FLAT, 'one', 's1');
    const b = await ask(stack, FLAT2, 'two', 's2');
    expect(await listed(stack, bearer(FLAT))).toEqual(new Set([a, b]));
    await stack.close();
    stack = await startStack({});
    const c = await ask(stack, undefined, 'three', 's3');
    expect(await listed(stack, {})).toEqual(new Set([c]));
  });
});

// Two workers, each with its own ring: the primary joins what each worker's filtered ring gives.
const cluster = clusterOnYaml(
  { personality: 'vllm' },
  (simUrl) => `
server:
  apiKeys: [${FLAT}]
models:
  m:
    upstream: ${simUrl}
keys:
  - { name: alice, key: ${ALICE} }
`,
);

describe('with TOOLPROOF_WORKERS=2', () => {
  it("a flat key reads none of alice's requests, whichever worker holds them", async () => {
    const body = (text: string) =>
      JSON.stringify({ model: 'm', messages: [{ role: 'user', content: text }], tools: [weatherTool] });
    const ids: string[] = [];
    // Each on a connection of its own: the primary hands them to the workers in turn.
    for (let i = 0; i < 4; i++) {
      const res = await freshRequest(cluster.origin, { key: 'alice', body: body(`alice secret ${i}`) });
      expect(res.status).toBe(200);
      ids.push(String(res.headers['x-request-id']));
    }
    const flat = await freshRequest(cluster.origin, { key: 'flat', body: body('flat words') });
    expect(flat.status).toBe(200);
    for (let i = 0; i < 4; i++) {
      const list = await freshRequest(cluster.origin, {
        key: 'flat',
        method: 'GET',
        path: '/inspect/api/requests',
      });
      const parsed = JSON.parse(list.text) as { workers: number; requests: Array<{ id: string }> };
      expect(parsed.workers).toBe(2);
      expect(parsed.requests.map((r) => r.id)).toEqual([String(flat.headers['x-request-id'])]);
      expect(list.text).not.toContain('alice secret');
      const one = await freshRequest(cluster.origin, {
        key: 'flat',
        method: 'GET',
        path: `/inspect/api/requests/${ids[i]}`,
      });
      expect(one.status).toBe(404);
      const sessions = await freshRequest(cluster.origin, {
        key: 'flat',
        method: 'GET',
        path: '/inspect/api/sessions',
      });
      expect((JSON.parse(sessions.text) as { sessions: unknown[] }).sessions).toHaveLength(1);
    }
    // alice's own, from both workers.
    const mine = await freshRequest(cluster.origin, {
      key: 'alice',
      method: 'GET',
      path: '/inspect/api/requests',
    });
    expect(
      new Set((JSON.parse(mine.text) as { requests: Array<{ id: string }> }).requests.map((r) => r.id)),
    ).toEqual(new Set(ids));
  }, 60_000);
});
