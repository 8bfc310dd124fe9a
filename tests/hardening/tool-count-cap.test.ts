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
