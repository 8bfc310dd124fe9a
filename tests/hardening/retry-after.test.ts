/**
 * An upstream's Retry-After on a 429 or a 503 reaches the client on every front door (chat,
 * Responses, Messages, streamed or not, the embeddings/completions relay and the pass-through):
 * clients' back-off depends on it. Only a well-formed value (delay seconds or an HTTP date) on
 * those statuses is relayed.
 */
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf, type Recorded } from '../support/harness.js';

const DATE = 'Wed, 21 Oct 2026 07:28:00 GMT';

/** The model name picks the answer: "busy" 429 + 7 s, "down" 503 + a date, "junk" 429 + a bad value, "bad" 400 + 7. */
function handler(req: Recorded, res: ServerResponse): void {
  const model = (JSON.parse(req.body.toString('utf8') || '{}') as { model?: string }).model;
  const [status, retryAfter] =
    model === 'busy'
      ? [429, '7']
      : model === 'down'
        ? [503, DATE]
        : model === 'junk'
          ? [429, 'soon, maybe <script>']
          : [400, '7'];
  res.writeHead(status, { 'content-type': 'application/json', 'retry-after': retryAfter });
  res.end(JSON.stringify({ error: { message: 'try later', type: 'rate_limit_error' } }));
}

const pair = proxyInFrontOf(handler);

const messages = [{ role: 'user', content: 'hi' }];
const tools = [{ type: 'function', function: { name: 'get', parameters: { type: 'object' } } }];

function bodies(model: string): Array<[string, string, Record<string, unknown>]> {
  return [
    ['chat', '/v1/chat/completions', { model, messages }],
    ['chat, tools', '/v1/chat/completions', { model, messages, tools }],
    ['chat, streamed', '/v1/chat/completions', { model, messages, stream: true }],
    ['responses', '/v1/responses', { model, input: 'hi' }],
    ['responses, streamed', '/v1/responses', { model, input: 'hi', stream: true }],
    ['messages', '/v1/messages', { model, max_tokens: 9, messages }],
    ['messages, streamed', '/v1/messages', { model, max_tokens: 9, messages, stream: true }],
    ['embeddings', '/v1/embeddings', { model, input: 'x' }],
    ['completions', '/v1/completions', { model, prompt: 'x' }],
    ['pass-through', '/v1/rerank', { model, query: 'q', documents: ['d'] }],
  ];
}

async function post(path: string, body: unknown): Promise<{ status: number; retryAfter: string | null }> {
  const res = await fetch(`${pair.proxy.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  await res.arrayBuffer();
  return { status: res.status, retryAfter: res.headers.get('retry-after') };
}

describe('Retry-After from the upstream', () => {
  it.each(bodies('busy'))('429 with delay seconds: %s', async (_name, path, body) => {
    expect(await post(path, body)).toEqual({ status: 429, retryAfter: '7' });
  });

  it.each(bodies('down'))('503 with an HTTP date: %s', async (_name, path, body) => {
    expect(await post(path, body)).toEqual({ status: 503, retryAfter: DATE });
  });

  it('a malformed value, or one on another status, is not relayed by the front doors', async () => {
    for (const [, path, body] of bodies('junk').slice(0, 9))
      expect(await post(path, body), path).toEqual({ status: 429, retryAfter: null });
    for (const [, path, body] of bodies('bad').slice(0, 9))
      expect(await post(path, body), path).toEqual({ status: 400, retryAfter: null });
  });
});
