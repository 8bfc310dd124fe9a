/**
 * Upstream answers every reader takes for granted, found by replacing each field of a streamed
 * and a whole answer with odd values (null, numbers, strings, arrays, objects) on every door:
 *
 * - a stream whose first chunk has no `id`, `created` or `model` (some OpenAI-compatible servers
 *   leave them out): leak recovery's note of the chunk's identity read `this.last?.id !== f.id`
 *   as unchanged and threw on the next test, a 500 `TP_ERR_INTERNAL` error event on every
 *   streamed tool request;
 * - an event that is a JSON array (`[]`, `[{}]`): passed as an object, the same 500;
 * - a whole answer whose choice has no `message` (it passes the shape check): the Responses
 *   door's translation read its fields, a 500.
 * Now: served as any answer (the first two), the door's 502 in its own shape (an array event).
 */
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf } from '../support/harness.js';

const chunk = (delta: object, finish: string | null = null, identity = true) => ({
  ...(identity ? { id: 'c1', created: 1, model: 'm1' } : {}),
  object: 'chat.completion.chunk',
  choices: [{ index: 0, delta, finish_reason: finish }],
});

const pair = proxyInFrontOf((req, res) => {
  const body = JSON.parse(req.body.toString()) as {
    stream?: boolean;
    input?: string;
    messages?: { content: unknown }[];
  };
  const said = String(body.input ?? body.messages?.at(-1)?.content ?? '');
  if (!body.stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: 'c1', object: 'chat.completion', created: 1, model: 'm1', choices: [{}] }));
    return;
  }
  const first = said === 'array' ? [] : chunk({ role: 'assistant', content: 'hello' }, null, false);
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.end(
    [first, chunk({ content: ' there' }), chunk({}, 'stop')]
      .map((c) => `data: ${JSON.stringify(c)}\n\n`)
      .join('') + 'data: [DONE]\n\n',
  );
});

const tool = { type: 'function', function: { name: 'f', parameters: { type: 'object' } } };
const bodies = (said: string): Record<string, object> => ({
  '/v1/chat/completions': {
    model: 'm1',
    stream: true,
    messages: [{ role: 'user', content: said }],
    tools: [tool],
  },
  '/v1/messages': {
    model: 'm1',
    stream: true,
    max_tokens: 32,
    messages: [{ role: 'user', content: said }],
    tools: [{ name: 'f', input_schema: { type: 'object' } }],
  },
  '/v1/responses': {
    model: 'm1',
    stream: true,
    input: said,
    tools: [{ type: 'function', name: 'f', parameters: { type: 'object' } }],
  },
});

const post = async (path: string, body: object) => {
  const res = await fetch(`${pair.proxy.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
};

describe('odd upstream chunks and choices', () => {
  it('a first chunk without id, created and model: the answer streams on every door', async () => {
    for (const [path, body] of Object.entries(bodies('hi'))) {
      const r = await post(path, body);
      expect(r.status, path).toBe(200);
      expect(r.text, path).not.toContain('TP_ERR_INTERNAL');
      // the text reaches the client (Messages and Responses put each delta in its own event)
      expect(r.text, path).toContain('hello');
      expect(r.text, path).toContain(' there');
    }
  });

  it("an event that is a JSON array: the upstream's fault, said in each door's stream", async () => {
    for (const [path, body] of Object.entries(bodies('array'))) {
      const r = await post(path, body);
      expect(r.text, path).not.toContain('TP_ERR_INTERNAL');
      expect(r.text, path).toContain('not a JSON object');
    }
  });

  it('a whole answer whose choice has no message: an empty answer on the Responses door, not a 500', async () => {
    const r = await post('/v1/responses', { model: 'm1', input: 'hi' });
    expect(r.status, r.text).toBe(200);
    expect(JSON.parse(r.text)).toMatchObject({ object: 'response', status: 'completed', output: [] });
  });
});
