/**
 * Every spelling of a front door's path is that front door, never a raw relay past the harness.
 * The router matched the target as spelled while the pass-through resolved it another way:
 * `//v1/chat/completions` (a client's base URL ending in '/') read as the host "v1" and went
 * upstream as `/chat/completions` (llama-server serves chat there), and `/v1//chat/completions`,
 * `/v1/./chat/completions`, `/v1%2Fchat%2Fcompletions` (uvicorn and cpp-httplib decode %2F), a
 * trailing '/' or `/chat/completions` (llama-server's unversioned path) reached the backend's
 * chat endpoint raw. Case and `;params` name no path on vLLM or llama-server: a 404 in the
 * API's own shape, nothing sent upstream. Spellings: RFC 3986 §5.2.4 (dot segments) and §6.2.2
 * (normalization), llama-server's route table (tools/server/server.cpp).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalTarget } from '../../server/request-target.js';
import { upstreamPathFor } from '../../server/routes/passthrough.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';
import {
  type FakeUpstream,
  fakeUpstream,
  httpRequest,
  type RunningProxy,
  rawRequest,
  startProxy,
} from '../support/harness.js';

const KEY = 'client-key-123456';
const AUTH = { authorization: `Bearer ${KEY}` };
let up: FakeUpstream;
let proxy: RunningProxy;

beforeAll(async () => {
  up = await fakeUpstream((_req, res) => {
    // A front door never relays the upstream's headers: this one on the client's answer says raw.
    res.writeHead(200, { 'content-type': 'application/json', 'x-raw-relay': 'yes' });
    res.end(
      JSON.stringify({
        id: 'c1',
        object: 'chat.completion',
        model: 'm1',
        choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'hello' } }],
      }),
    );
  });
  proxy = await startProxy({ TOOLPROOF_UPSTREAM_URL: up.url, TOOLPROOF_API_KEYS: KEY });
});
afterAll(async () => {
  await proxy.close();
  await up.close();
});

const CHAT = JSON.stringify({ model: 'm1', messages: [{ role: 'user', content: 'hi' }] });
const MESSAGES = JSON.stringify({ model: 'm1', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
const RESPONSES = JSON.stringify({ model: 'm1', input: 'hi' });

async function post(target: string, body: string, headers: Record<string, string> = AUTH) {
  const before = up.requests.length;
  const res = await rawRequest(proxy.port, httpRequest('POST', target, body, headers));
  return { res, sent: up.requests.slice(before) };
}

describe('a front door whatever the spelling of its path', () => {
  const chat = [
    '//v1/chat/completions',
    '///v1/chat/completions',
    '/v1//chat/completions',
    '/v1/chat//completions',
    '/v1/chat/completions/',
    '/v1/chat/completions//',
    '/v1%2Fchat%2Fcompletions',
    '/v1/chat%2fcompletions',
    '/v1/./chat/completions',
    '/v1/%2e/chat/completions',
    '/v1/x/../chat/completions',
    '/x/../v1/chat/completions',
    '/../v1/chat/completions',
    '/v1/%2e%2e/v1/chat/completions',
    'http://h//v1/chat/completions',
    '/chat/completions',
    '//chat/completions',
    '/v1/chat/completions?x=1',
  ];
  for (const target of chat)
    it(`POST ${target} is the chat door`, async () => {
      const { res, sent } = await post(target, CHAT);
      expect(res.status).toBe(200);
      expect(res.head.toLowerCase()).not.toContain('x-raw-relay');
      expect(sent.map((r) => r.url)).toEqual(['/v1/chat/completions']);
    });

  for (const target of [
    '//v1/messages',
    '/v1//messages',
    '/v1/messages/',
    '/v1/./messages',
    '/v1%2Fmessages',
  ])
    it(`POST ${target} is the Messages door`, async () => {
      const { res, sent } = await post(target, MESSAGES);
      expect(res.status).toBe(200);
      expect(JSON.parse(res.body).type).toBe('message');
      expect(sent.map((r) => r.url)).toEqual(['/v1/chat/completions']);
    });

  for (const target of ['//v1/responses', '/v1/responses/', '/responses', '/v1/x/../responses'])
    it(`POST ${target} is the Responses door`, async () => {
      const { res, sent } = await post(target, RESPONSES);
      expect(res.status).toBe(200);
      expect(JSON.parse(res.body).object).toBe('response');
      expect(sent.map((r) => r.url)).toEqual(['/v1/chat/completions']);
    });

  it('the inspector and the model list, whatever the spelling', async () => {
    for (const target of ['//inspect/api/requests', '/inspect//api/requests', '/inspect/api/requests/']) {
      const before = up.requests.length;
      const res = await rawRequest(proxy.port, httpRequest('GET', target, '', AUTH));
      expect(res.status, target).toBe(200);
      expect(JSON.parse(res.body).capture, target).toBe(true);
      expect(up.requests.length, target).toBe(before);
    }
    const models = await rawRequest(proxy.port, httpRequest('GET', '//v1/models/', '', AUTH));
    expect(JSON.parse(models.body).object).toBe('list');
  });

  it('every spelling needs the key', async () => {
    for (const target of [...chat, '//v1/messages', '/responses']) {
      const { res, sent } = await post(target, CHAT, {});
      expect(res.status, target).toBe(401);
      expect(sent, target).toHaveLength(0);
    }
  });
});

describe("toolproof's own paths in another case or with ;params", () => {
  const openai = [
    '/V1/chat/completions',
    '/v1/Chat/Completions',
    '/v1/chat/completions;x=1',
    '/v1;x/chat/completions',
    '/V1/responses',
  ];
  for (const target of openai)
    it(`POST ${target}: a 404 in OpenAI's shape, nothing relayed`, async () => {
      const { res, sent } = await post(target, CHAT);
      expect(res.status).toBe(404);
      expect(JSON.parse(res.body).error.type).toBe('invalid_request_error');
      expect(sent).toHaveLength(0);
    });
  for (const target of ['/V1/messages', '/v1/Messages', '/v1/messages;a'])
    it(`POST ${target}: a 404 in Anthropic's shape, nothing relayed`, async () => {
      const { res, sent } = await post(target, MESSAGES);
      expect(res.status).toBe(404);
      expect(JSON.parse(res.body)).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
      expect(sent).toHaveLength(0);
    });

  it("the upstream's own paths are still relayed, exactly as routed", async () => {
    for (const [target, want] of [
      ['/v1/chat/completions/input_tokens', '/v1/chat/completions/input_tokens'],
      ['/tokenize/', '/tokenize'],
      ['//tokenize', '/tokenize'],
      ['/a/../../tokenize', '/tokenize'],
      ['/v1/rerank?x=1', '/v1/rerank?x=1'],
    ] as const) {
      const { res, sent } = await post(target, CHAT);
      expect(res.status, target).toBe(200);
      expect(
        sent.map((r) => r.url),
        target,
      ).toEqual([want]);
    }
  });

  it("what node's parser refuses is in the Messages API's shape for its path however spelt", async () => {
    for (const target of ['//v1/messages', '/v1//messages', '/v1/./messages']) {
      const res = await rawRequest(
        proxy.port,
        httpRequest('POST', target, MESSAGES, { ...AUTH, 'x-big': 'a'.repeat(20_000) }),
      );
      expect(res.status, target).toBe(431);
      expect(JSON.parse(res.body), target).toMatchObject({ type: 'error' });
    }
  });

  it('an asterisk-form target is a 400, not an upstream error', async () => {
    const before = up.requests.length;
    const res = await rawRequest(proxy.port, httpRequest('OPTIONS', '*', '', AUTH));
    expect(res.status).toBe(400);
    expect(up.requests.length).toBe(before);
  });
});

describe('the pass-through sends the path the router judged', () => {
  it('never reads a leading // as a host', () => {
    expect(upstreamPathFor('//v1/chat/completions')).toEqual({
      path: '/chat/completions',
      fromOrigin: false,
    });
    expect(upstreamPathFor('//x/v1/chat/completions')).toEqual({
      path: '/x/v1/chat/completions',
      fromOrigin: true,
    });
    expect(upstreamPathFor('http://evil.example//etc?q=1')).toEqual({ path: '/etc?q=1', fromOrigin: true });
  });

  it('canonicalizes in one pass: x4 the path costs about x4', () => {
    const make = (n: number) => `/${'a/../b//%2e/c%2F'.repeat(n)}?q=${'x'.repeat(n)}`;
    expect(canonicalTarget(make(2))).toBe('/b/c/b/c?q=xx');
    const s = measureScaling(make, canonicalTarget, { from: 256, max: 65_536 });
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});
