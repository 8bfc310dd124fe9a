/**
 * A request whose tools are empty after translation (no tools, hosted tools dropped, an empty
 * namespace, an agent's compaction turn that keeps its tool_choice) reaches the upstream without
 * tool_choice, parallel_tool_calls or an empty tools array, and is not forced, on every door,
 * streamed and not. The simulator's vLLM personality refuses `tool_choice` without tools with
 * vLLM's own message ("When using `tool_choice`, `tools` must be set."), as Codex's
 * auto-compaction met it: without the tool-fields policy each of these turns is a 400.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../server/stack.js';

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

const TOOL_ONLY = ['tools', 'tool_choice', 'parallel_tool_calls'];

async function post(s: Stack, path: string, body: object) {
  const res = await fetch(`${s.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': 'x' },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

function lastUpstream(s: Stack): Record<string, unknown> {
  return s.sim.requests.at(-1)!.body as Record<string, unknown>;
}

const user = [{ role: 'user', content: 'Summarize the conversation so far.' }];

const cases: Array<{ name: string; path: string; body: object; answer: string }> = [
  {
    name: 'chat: tool_choice "auto" without tools',
    path: '/v1/chat/completions',
    body: { model: 'm', messages: user, tool_choice: 'auto', parallel_tool_calls: true },
    answer: 'choices',
  },
  {
    name: 'chat: tool_choice "required" beside an empty tools array',
    path: '/v1/chat/completions',
    body: { model: 'm', messages: user, tools: [], tool_choice: 'required' },
    answer: 'choices',
  },
  {
    name: 'responses: a compaction turn (tool_choice, parallel_tool_calls, no tools)',
    path: '/v1/responses',
    body: {
      model: 'm',
      input: 'Summarize the conversation so far.',
      tool_choice: 'auto',
      parallel_tool_calls: false,
    },
    answer: 'output',
  },
  {
    name: 'responses: only a hosted tool (dropped) and an empty namespace',
    path: '/v1/responses',
    body: {
      model: 'm',
      input: 'Summarize the conversation so far.',
      tools: [{ type: 'web_search' }, { type: 'namespace', name: 'mcp', description: 'none', tools: [] }],
      tool_choice: 'auto',
      parallel_tool_calls: true,
    },
    answer: 'output',
  },
  {
    name: 'messages: tool_choice auto with parallel use disabled, no tools',
    path: '/v1/messages',
    body: {
      model: 'm',
      max_tokens: 200,
      messages: user,
      tool_choice: { type: 'auto', disable_parallel_tool_use: true },
    },
    answer: 'content',
  },
  {
    name: 'messages: only a server tool (dropped)',
    path: '/v1/messages',
    body: {
      model: 'm',
      max_tokens: 200,
      messages: user,
      tools: [{ type: 'web_search_20250305', name: 'web_search' }],
      tool_choice: { type: 'any' },
    },
    answer: 'content',
  },
];

describe('a request without tools carries no tool-only field upstream', () => {
  for (const c of cases) {
    for (const stream of [false, true]) {
      it(`${c.name}${stream ? ', streamed' : ''}`, async () => {
        stack = await startStack({ sim: { scenario: 'prose' } });
        const res = await post(stack, c.path, { ...c.body, ...(stream ? { stream: true } : {}) });
        expect(res.status, res.text).toBe(200);
        if (stream) expect(res.text).not.toMatch(/event: error|response\.failed|"type":"error"/);
        else expect(Object.keys(JSON.parse(res.text))).toContain(c.answer);
        const sent = lastUpstream(stack);
        for (const f of TOOL_ONLY) expect(Object.keys(sent), f).not.toContain(f);
        expect(stack.sim.requests).toHaveLength(1); // not forced, no fallback round trip
      });
    }
  }

  it('the simulator refuses tool_choice without tools as vLLM does (what the upstream would say)', async () => {
    stack = await startStack({ sim: { scenario: 'prose' } });
    const res = await fetch(`${stack.sim.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: user, tool_choice: 'auto' }),
    });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('When using `tool_choice`, `tools` must be set.');
  });
});
