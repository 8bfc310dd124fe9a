/**
 * Hardening (issue 8), through the server: the declared tool count is capped (100k tools used
 * to block the event loop for 11.5 s), and at the cap a corrective retry's feedback stays short
 * (the checks' side: tests/policies/call-checks.test.ts).
 */
import { describe, expect, it } from 'vitest';
import type { ToolCall } from '../../protocol/openai.js';
import { MAX_DECLARED_TOOLS } from '../../protocol/tools.js';
import { proxyInFrontOfChat, toolCallCompletion } from '../support/fake-upstream.js';

const toolList = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    type: 'function' as const,
    function: { name: `tool_${i}`, parameters: { type: 'object', properties: { q: { type: 'string' } } } },
  }));

describe('through the server', () => {
  const pair = proxyInFrontOfChat((body, res) => {
    // First attempt names a tool nobody declared; the corrective retry then calls a real one.
    const retry = (body.messages as unknown[]).length > 1;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(toolCallCompletion(String(body.model), retry ? 'tool_7' : 'no_such_tool', '{"q":"x"}'));
  });

  const post = (tools: unknown[]) =>
    fetch(`${pair.proxy.origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], tools }),
    });

  it(`more than ${MAX_DECLARED_TOOLS} tools: 400 naming \`tools\` (100k tools blocked the loop 11.5 s)`, async () => {
    const res = await post(toolList(100_000));
    expect(res.status).toBe(400);
    const json = (await res.json()) as { error: { code: string; param: string; message: string } };
    expect(json.error).toMatchObject({ code: 'TP_ERR_INVALID_FIELD', param: 'tools' });
    expect(json.error.message).toContain(String(MAX_DECLARED_TOOLS));
    expect(pair.upstream.requests).toHaveLength(0);
  }, 30_000);

  it(`${MAX_DECLARED_TOOLS} tools are served, and the retry feedback stays short`, async () => {
    const res = await post(toolList(MAX_DECLARED_TOOLS));
    expect(res.status).toBe(200);
    const json = (await res.json()) as { choices: Array<{ message: { tool_calls: ToolCall[] } }> };
    expect(json.choices[0]?.message.tool_calls[0]?.function.name).toBe('tool_7');
    const retry = pair.upstream.requests.at(-1) as { messages: Array<{ role: string; content: string }> };
    const feedback = retry.messages.find((m) => m.role === 'tool')?.content ?? '';
    expect(feedback).toContain('does not exist');
    expect(feedback.length).toBeLessThan(4096);
  }, 30_000);
});

/** An error body of either shape (OpenAI's error.code/param, Anthropic's type). */
interface ErrorBody {
  type?: string;
  error: { code?: string; param?: string; type?: string; message: string };
}

describe('the Responses and Messages doors: the same cap', () => {
  // Uncapped there, 200k tools (14 MB) held the loop 11.3 s on /v1/responses and 1.5 s on
  // /v1/messages, where the chat door answered 400.
  const pair = proxyInFrontOfChat((body, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(toolCallCompletion(String(body.model), 'tool_7', '{"q":"x"}'));
  });
  const schema = { type: 'object', properties: { q: { type: 'string' } } };
  const fn = (i: number) => ({ type: 'function', name: `tool_${i}`, parameters: schema });
  const post = (path: string, body: object) =>
    fetch(`${pair.proxy.origin}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify(body),
    }).then(async (r) => ({ status: r.status, json: (await r.json()) as ErrorBody }));
  const responses = (tools: unknown[]) => post('/v1/responses', { model: 'm', input: 'hi', tools });
  const messages = (n: number) =>
    post('/v1/messages', {
      model: 'm',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'hi' }],
      tools: Array.from({ length: n }, (_, i) => ({ name: `tool_${i}`, input_schema: schema })),
    });
  const many = (n: number) => Array.from({ length: n }, (_, i) => fn(i));

  it(`/v1/responses: more than ${MAX_DECLARED_TOOLS} tools, or as many inside namespaces, is a 400 naming tools`, async () => {
    for (const tools of [
      many(MAX_DECLARED_TOOLS + 1),
      [0, 1].map((k) => ({ type: 'namespace', name: `ns${k}`, tools: many(MAX_DECLARED_TOOLS / 2 + k) })),
    ]) {
      const { status, json } = await responses(tools);
      expect(status).toBe(400);
      expect(json.error).toMatchObject({ code: 'TP_ERR_INVALID_FIELD', param: 'tools' });
      expect(json.error.message).toContain(String(MAX_DECLARED_TOOLS));
    }
    expect(pair.upstream.requests).toHaveLength(0);
    const ok = await responses(many(MAX_DECLARED_TOOLS));
    expect(ok.status).toBe(200);
  }, 30_000);

  it(`/v1/messages: more than ${MAX_DECLARED_TOOLS} tools is a 400 in Anthropic's shape`, async () => {
    const before = pair.upstream.requests.length;
    const { status, json } = await messages(MAX_DECLARED_TOOLS + 1);
    expect(status).toBe(400);
    expect(json).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(json.error.message).toContain(String(MAX_DECLARED_TOOLS));
    expect(pair.upstream.requests).toHaveLength(before);
    expect((await messages(MAX_DECLARED_TOOLS)).status).toBe(200);
  }, 30_000);
});
