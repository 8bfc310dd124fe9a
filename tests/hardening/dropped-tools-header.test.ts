/**
 * x-toolproof-dropped-tools named every dropped server tool: 4,000 dated types (each a valid
 * `web_search_YYYYMMDD`) made an 84 KB header, and a default fetch client failed
 * (UND_ERR_HEADERS_OVERFLOW; nginx answers 502). The header names the first 16 and counts the rest.
 */
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf, streamOrJson, textCompletion, textCompletionStream } from '../support/harness.js';

const pair = proxyInFrontOf(
  streamOrJson(
    () => textCompletionStream('ok'),
    () => textCompletion('ok'),
  ),
);

const serverTools = Array.from({ length: 4000 }, (_, i) => ({
  type: `web_search_${String(20_000_000 + i)}`,
  name: 'web_search',
}));

/**
 * A one-line Messages request with `tools`, through Node's fetch (undici) with its default
 * limits: a header past them fails the request.
 */
const send = (tools: unknown[], stream?: boolean) =>
  fetch(`${pair.proxy.origin}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({
      model: 'm1',
      max_tokens: 16,
      stream,
      messages: [{ role: 'user', content: 'hi' }],
      tools,
    }),
  });

describe('x-toolproof-dropped-tools with thousands of dropped tools', () => {
  for (const stream of [false, true]) {
    it(`stays small enough for a default fetch (${stream ? 'streamed' : 'not streamed'})`, async () => {
      const res = await send(serverTools, stream);
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      const header = res.headers.get('x-toolproof-dropped-tools')!;
      expect(header.length).toBeLessThan(4096);
      const names = header.split(', ');
      expect(names.slice(0, 2)).toEqual(['web_search_20000000', 'web_search_20000001']);
      expect(names.at(-1)).toBe('+3984 more');
    });
  }

  it('a few dropped tools are all named', async () => {
    const res = await send(serverTools.slice(0, 2));
    await res.arrayBuffer();
    expect(res.headers.get('x-toolproof-dropped-tools')).toBe('web_search_20000000, web_search_20000001');
  });
});
