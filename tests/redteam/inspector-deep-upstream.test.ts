/**
 * An upstream body that nests a few thousand levels in under 16 KB (every upstream scan's
 * threshold: a parse that size costs little whatever its shape) reached the inspector whole:
 * reading its request back wrote the nested object again as JSON (an error object without a
 * message, a Messages-shaped tool_use input), JSON.stringify overflowed the stack, and
 * GET /inspect/api/requests/:id was a 500 for that request, on every door.
 */
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf } from '../support/harness.js';

const deep = `${'['.repeat(7000)}${']'.repeat(7000)}`;
const BODIES: Record<string, { type: string; body: string }> = {
  // An error without a message: its object is what the view shows.
  error: { type: 'application/json', body: `{"error":{"detail":${deep}}}` },
  // A Messages-shaped answer, one event: its tool_use input is written again as the arguments.
  message: {
    type: 'text/event-stream',
    body: `data: {"type":"message","content":[{"type":"tool_use","name":"f","input":{"x":${deep}}}]}\n\n`,
  },
};

const pair = proxyInFrontOf((req, res) => {
  const which = /"(error|message)"/.exec(req.body.toString())?.[1] ?? 'error';
  const answer = BODIES[which]!;
  res.writeHead(200, { 'content-type': answer.type });
  res.end(answer.body);
});

describe('an upstream answer nested 7,000 levels in 14 KB, read back by the inspector', () => {
  it.each([
    ['error', '/v1/chat/completions', { messages: [{ role: 'user', content: 'error' }] }],
    ['error', '/v1/responses', { input: 'error' }],
    [
      'message',
      '/v1/messages',
      { max_tokens: 5, stream: true, messages: [{ role: 'user', content: 'message' }] },
    ],
  ] as const)('%s on %s: the request view is a 200 with a note', async (which, path, body) => {
    const id = `deep-${which}-${path.split('/').pop()}`;
    const res = await fetch(`${pair.proxy.origin}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-request-id': id },
      body: JSON.stringify({ model: 'm1', ...body }),
    });
    await res.text();
    // The client's own answer was never the problem: relayed (the chat door) or the upstream's fault.
    expect([200, 502]).toContain(res.status);
    const view = await fetch(`${pair.proxy.origin}/inspect/api/requests/${id}`);
    expect(view.status).toBe(200);
    const got = (await view.json()) as {
      modelWrote: Array<{ error?: string; calls: Array<{ arguments: string }> }>;
    };
    const wrote = got.modelWrote[0]!;
    if (which === 'error') expect(wrote.error).toBe('(nested too deep to show)');
    else expect(wrote.calls[0]!.arguments).toBe('(nested too deep to show)');
  });
});
