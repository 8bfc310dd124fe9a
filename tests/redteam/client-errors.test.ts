/**
 * Requests node's HTTP parser refuses before any route runs (headers too large, a bad
 * Content-Length, a broken chunked body), and a URL the router cannot decode, are answered in the
 * API's own error shape, Anthropic's under /v1/messages and OpenAI's elsewhere (the inspector's
 * too), not Fastify's `{"error":"Bad Request",...}`. So is a request of over 1,000 header lines
 * under node's 16 kB, whose later lines node dropped without a word (server/app.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest } from '../support/harness.js';
import { type Stack, startStack } from '../server/stack.js';

let stack: Stack;
let port: number;
beforeAll(async () => {
  stack = await startStack({ sim: { scenario: 'prose' } });
  port = Number(new URL(stack.origin).port);
});
afterAll(() => stack.close());

const body = '{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}';
const requests = (path: string): Array<[string, string, number]> => [
  [
    'a 40 kB header',
    `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Big: ${'a'.repeat(40_000)}\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    431,
  ],
  [
    '3000 headers',
    `POST ${path} HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 3000 }, (_, i) => `X-H${i}: v`).join('\r\n')}\r\nContent-Length: 2\r\n\r\n{}`,
    431,
  ],
  // Under node's 16 kB: node kept the first 1,000 lines and dropped the rest unseen (the
  // Content-Type after them: "Invalid field body: must be object", a 400 naming no header).
  [
    '1,100 short headers, the Content-Type after them',
    `POST ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${Array.from({ length: 1100 }, (_, i) => `X${i}: v`).join('\r\n')}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    431,
  ],
  [
    'a Content-Length that is not a number',
    `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{}`,
    400,
  ],
  [
    'a broken chunked body',
    `POST ${path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n`,
    400,
  ],
  // Request smuggling's framings (redteam12): node refuses each; a proxy that took one of them
  // and forwarded the other reading would desynchronize its upstream connection.
  [
    'two Content-Lengths that differ',
    `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\nContent-Length: ${body.length + 1}\r\n\r\n${body}`,
    400,
  ],
  [
    'Transfer-Encoding with a Content-Length',
    `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
    400,
  ],
  [
    'a folded header line (obs-fold)',
    `POST ${path} HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    400,
  ],
  [
    'a 70 kB cookie',
    `POST ${path} HTTP/1.1\r\nHost: x\r\nCookie: ${'c'.repeat(70_000)}\r\nContent-Length: 2\r\n\r\n{}`,
    431,
  ],
  // Not node's parser: the router, which answered in Fastify's shape ({"code":"FST_ERR_BAD_URL"}).
  [
    'a percent-escape that does not decode',
    `POST ${path}/%ZZ HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}`,
    400,
  ],
];

describe.each(['/v1/messages', '/v1/responses', '/v1/chat/completions', '/inspect/api/requests'])(
  '%s',
  (path) => {
    it.each(requests(path))("%s: the API's error shape", async (_name, request, status) => {
      const res = await rawRequest(port, request, 5_000);
      expect(res.status).toBe(status);
      const json = JSON.parse(res.body) as Record<string, unknown>;
      if (path === '/v1/messages') {
        expect(json).toEqual({
          type: 'error',
          error: { type: expect.any(String), message: expect.any(String) },
        });
      } else {
        expect(json.error).toMatchObject({ type: 'invalid_request_error', code: 'TP_ERR_INVALID_FIELD' });
      }
    });
  },
);
