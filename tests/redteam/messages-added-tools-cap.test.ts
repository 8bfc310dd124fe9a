/**
 * A request declares at most MAX_DECLARED_TOOLS (4,096) tools on every door: every per-request
 * step over the tool list is linear, and the cap is what bounds linear (docs/bounds.md). On
 * Messages, a system turn's `tool_addition` blocks (Claude Code's mid-conversation tool changes)
 * declare tools too, upstream, after the request's own: the schema's `maxItems` on `tools` never
 * saw them, so one request declared as many as its body could hold.
 */
import { describe, expect, it } from 'vitest';
import { MAX_DECLARED_TOOLS } from '../../protocol/tools.js';
import { proxyInFrontOf, sendCompletion } from '../support/harness.js';

const pair = proxyInFrontOf((_req, res) => sendCompletion(res, { content: 'ok' }));

const schema = { type: 'object', properties: { q: { type: 'string' } } };
const added = (name: string) => ({
  type: 'tool_addition',
  tool: { type: 'tool_definition', definition: { name, input_schema: schema } },
});

function messages(declared: number, addedCount: number, path = '/v1/messages') {
  const body = {
    model: 'm1',
    max_tokens: 16,
    ...(declared > 0
      ? { tools: Array.from({ length: declared }, (_, i) => ({ name: `t${i}`, input_schema: schema })) }
      : {}),
    messages: [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'hello' },
      { role: 'system', content: Array.from({ length: addedCount }, (_, i) => added(`a${i}`)) },
      { role: 'user', content: 'go on' },
    ],
  };
  return fetch(`${pair.proxy.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  });
}

describe('tools added by system turns count against the request’s tool cap', () => {
  it('past the cap by tool_addition alone: the 400 in Anthropic’s shape, nothing sent upstream', async () => {
    const before = pair.upstream.requests.length;
    const res = await messages(0, MAX_DECLARED_TOOLS + 1);
    const body = (await res.json()) as { type?: string; error?: { type?: string; message?: string } };
    expect(res.status).toBe(400);
    expect(body.type).toBe('error');
    expect(body.error?.type).toBe('invalid_request_error');
    expect(body.error?.message).toContain(String(MAX_DECLARED_TOOLS));
    expect(pair.upstream.requests.length).toBe(before);
  });

  it('past the cap with the request’s own tools and the added ones together, count_tokens too', async () => {
    const before = pair.upstream.requests.length;
    const res = await messages(MAX_DECLARED_TOOLS - 10, 11);
    expect(res.status).toBe(400);
    await res.text();
    const count = await messages(MAX_DECLARED_TOOLS - 10, 11, '/v1/messages/count_tokens');
    expect(count.status).toBe(400);
    await count.text();
    expect(pair.upstream.requests.length).toBe(before);
  });

  it('at the cap: answered, every tool declared upstream', async () => {
    const res = await messages(MAX_DECLARED_TOOLS - 10, 10);
    expect(res.status).toBe(200);
    await res.text();
    const sent = JSON.parse(pair.upstream.requests.at(-1)!.body.toString()) as {
      tools: Array<{ function: { name: string } }>;
    };
    const names = new Set(sent.tools.map((t) => t.function.name));
    for (const name of ['t0', `t${MAX_DECLARED_TOOLS - 11}`, 'a0', 'a9']) expect(names.has(name)).toBe(true);
  });
});
