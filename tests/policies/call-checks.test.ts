/**
 * Hardening (issue 8): per-request work over the declared tools must be linear, and the tool
 * count is capped. 100k tools used to block the event loop for 11.5 s: buildCatalogue looked
 * each declared name up in the offered list (quadratic), and every undeclared call listed every
 * tool in its feedback.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCatalogue, checkCalls, MAX_LISTED_TOOLS } from '../../policies/support/call-checks.js';
import type { ChatCompletionRequest, ToolCall } from '../../protocol/openai.js';
import { MAX_DECLARED_TOOLS } from '../../protocol/tools.js';
import { buildApp, type ToolproofApp } from '../../server/app.js';
import { loadConfig } from '../../server/config.js';
import { type FakeUpstream, startFakeUpstream, toolCallCompletion } from '../support/fake-upstream.js';

const toolList = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    type: 'function' as const,
    function: { name: `tool_${i}`, parameters: { type: 'object', properties: { q: { type: 'string' } } } },
  }));

const call = (name: string, args = '{}'): ToolCall => ({
  id: `call_${name}`,
  type: 'function',
  function: { name, arguments: args },
});

describe('catalogue and call checks are linear in the tool count', () => {
  it('100k tools: catalogue and 1000 bad calls in seconds at most (quadratic before: 12 s+ unloaded)', () => {
    // Linear costs ~30 ms here unloaded; the bound is loose for a shared, loaded 2-core box.
    const tools = toolList(100_000);
    const original = { model: 'm', messages: [], tools } as unknown as ChatCompletionRequest;
    const sent = {
      ...original,
      tools: [...tools, { type: 'function', function: { name: 'final_answer' } }],
    } as unknown as ChatCompletionRequest;
    const start = performance.now();
    const cat = buildCatalogue(sent, original);
    const checks = checkCalls(
      Array.from({ length: 1000 }, (_, i) => call(`missing_${i}`)),
      cat,
      true,
    );
    const ms = performance.now() - start;
    expect(cat.finalAnswerName).toBe('final_answer');
    expect(cat.offered).toHaveLength(100_001);
    expect(checks.every((c) => c.problem === 'undeclared-tool')).toBe(true);
    expect(ms).toBeLessThan(8000);
  });

  it('feedback lists at most MAX_LISTED_TOOLS names and counts the rest', () => {
    const tools = toolList(500);
    const req = { model: 'm', messages: [], tools } as unknown as ChatCompletionRequest;
    const [check] = checkCalls([call('nope')], buildCatalogue(req, req), true);
    expect(check?.feedback).toContain(`tool_${MAX_LISTED_TOOLS - 1} and`);
    expect(check?.feedback).not.toContain(`tool_${MAX_LISTED_TOOLS},`);
    expect(check?.feedback).toContain(`and ${500 - MAX_LISTED_TOOLS} more`);
  });

  it('an unenforced schema part is reported on the check', () => {
    const tools = [{ type: 'function', function: { name: 't', parameters: { $ref: '#' } } }];
    const req = { model: 'm', messages: [], tools } as unknown as ChatCompletionRequest;
    const [check] = checkCalls([call('t', '{"a":1}')], buildCatalogue(req, req), true);
    expect(check?.problem).toBeUndefined();
    expect(check?.unenforced?.[0]).toContain('could not be applied');
  });
});

describe('through the server', () => {
  let upstream: FakeUpstream;
  let app: ToolproofApp;
  let url: string;
  beforeAll(async () => {
    upstream = await startFakeUpstream((body, res) => {
      // First attempt names a tool nobody declared; the corrective retry then calls a real one.
      const retry = (body.messages as unknown[]).length > 1;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(toolCallCompletion(String(body.model), retry ? 'tool_7' : 'no_such_tool', '{"q":"x"}'));
    });
    app = await buildApp(loadConfig({ TOOLPROOF_UPSTREAM_URL: upstream.url }), { logger: false });
    await app.listen({ host: '127.0.0.1', port: 0 });
    url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/v1/chat/completions`;
  });
  afterAll(async () => {
    await app.close();
    await upstream.close();
  });

  const post = (tools: unknown[]) =>
    fetch(url, {
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
    expect(upstream.requests).toHaveLength(0);
  }, 30_000);

  it(`${MAX_DECLARED_TOOLS} tools are served, and the retry feedback stays short`, async () => {
    const res = await post(toolList(MAX_DECLARED_TOOLS));
    expect(res.status).toBe(200);
    const json = (await res.json()) as { choices: Array<{ message: { tool_calls: ToolCall[] } }> };
    expect(json.choices[0]?.message.tool_calls[0]?.function.name).toBe('tool_7');
    const retry = upstream.requests.at(-1) as { messages: Array<{ role: string; content: string }> };
    const feedback = retry.messages.find((m) => m.role === 'tool')?.content ?? '';
    expect(feedback).toContain('does not exist');
    expect(feedback.length).toBeLessThan(4096);
  }, 30_000);
});
