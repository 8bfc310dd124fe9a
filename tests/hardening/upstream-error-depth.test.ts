/**
 * An upstream error body nested a few thousand levels in under 16 KB: under the upstream scan's
 * threshold it was parsed (at once) and kept as the error's `upstream` body, and writing it
 * again overflowed JSON.stringify's stack: the client's error response (or a FastAPI `detail`
 * list quoted as the message) was toolproof's own 500 TP_ERR_INTERNAL, on every door. Such a
 * body is now read as the text it is, as one past the scan's bounds already was.
 */
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf } from '../support/harness.js';

const deep = `${'['.repeat(7000)}${']'.repeat(7000)}`;
const BODIES = {
  // OpenAI-shaped, its message not a string: the body is relayed beside the fallback message.
  openai: { status: 400, body: `{"error":{"message":${deep}}}` },
  // FastAPI-shaped: a `detail` list is quoted as the message.
  fastapi: { status: 500, body: `{"detail":${deep}}` },
};

const pair = proxyInFrontOf((req, res) => {
  const which = req.body.includes('fastapi') ? BODIES.fastapi : BODIES.openai;
  res.writeHead(which.status, { 'content-type': 'application/json' });
  res.end(which.body);
});

const DOORS = [
  ['/v1/chat/completions', (text: string) => ({ messages: [{ role: 'user', content: text }] })],
  ['/v1/responses', (text: string) => ({ input: text })],
  ['/v1/messages', (text: string) => ({ max_tokens: 5, messages: [{ role: 'user', content: text }] })],
] as const;

describe('an upstream error body nested 7,000 levels in 14 KB', () => {
  for (const [path, body] of DOORS)
    it.each(['openai', 'fastapi'] as const)(
      `${path}, %s-shaped: the upstream's status, its text as the message`,
      async (which) => {
        const res = await fetch(`${pair.proxy.origin}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
          body: JSON.stringify({ model: 'm1', ...body(which) }),
        });
        const text = await res.text();
        expect(res.status).toBe(BODIES[which].status);
        expect(text).not.toContain('TP_ERR_INTERNAL');
        const parsed = JSON.parse(text) as { type?: string; error: { message: string } };
        if (path === '/v1/messages') expect(parsed.type).toBe('error');
        expect(parsed.error.message.startsWith(BODIES[which].body.slice(0, 20))).toBe(true);
      },
    );
});
