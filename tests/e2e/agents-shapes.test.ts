/**
 * The requests Claude Code 2.1.332 and Codex 0.171.0 really send (recorded: tests/fixtures/agents/),
 * replayed through the official SDKs (@anthropic-ai/sdk, openai) to toolproof on loopback in
 * front of the simulator, streamed as the agents stream: every shape is accepted, and what comes
 * back is the shape the agent expects (tool_use, function_call with its namespace,
 * custom_tool_call), with hosted tools left out and said so.
 */
import { readFileSync } from 'node:fs';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../server/stack.js';

interface Recording<T> {
  headers: Record<string, string>;
  body: T;
}
const recorded = <T>(name: string): Recording<T> =>
  JSON.parse(readFileSync(new URL(`../fixtures/agents/${name}`, import.meta.url), 'utf8')) as Recording<T>;

const { _source, ...applyPatchTool } = JSON.parse(
  readFileSync(new URL('../fixtures/agents/codex-apply-patch-tool.json', import.meta.url), 'utf8'),
) as Record<string, unknown>;

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

type Upstream = {
  messages: Array<{ role: string; content: unknown; tool_calls?: Array<{ function: { name: string } }> }>;
  tools?: Array<{ function: { name: string; parameters?: unknown } }>;
};
const lastUpstream = (s: Stack) => s.sim.requests.at(-1)!.body as Upstream;
const scenario = (turns: unknown[]) => ({ 'x-sim-scenario': JSON.stringify({ turns }) });

describe('Claude Code 2.1.332 on /v1/messages', () => {
  const anthropic = (s: Stack, headers: Record<string, string>) =>
    new Anthropic({
      baseURL: s.origin,
      apiKey: 'sk-local',
      maxRetries: 0,
      timeout: 15_000,
      defaultHeaders: headers,
    });

  it('its first request: system turn, adaptive thinking, deferred tools; the Write call comes back as tool_use', async () => {
    stack = await startStack();
    const rec = recorded<Anthropic.MessageCreateParamsStreaming>('claude-code-2.1.332-turn1.json');
    const client = anthropic(stack, {
      'anthropic-beta': rec.headers['anthropic-beta']!,
      ...scenario([{ call: [{ name: 'Write', arguments: { file_path: '/w/proof.txt', content: '7391' } }] }]),
    });
    const { data, response } = await client.messages.create(rec.body).withResponse();
    expect(response.status).toBe(200);
    expect(response.headers.get('x-toolproof-dropped-tools')).toBeNull();
    const blocks: Anthropic.RawMessageStreamEvent[] = [];
    for await (const e of data) blocks.push(e);
    const start = blocks.find((e) => e.type === 'content_block_start') as Anthropic.RawContentBlockStartEvent;
    expect(start.content_block).toMatchObject({ type: 'tool_use', name: 'Write' });
    const up = lastUpstream(stack);
    // One leading system message holding Claude Code's environment turn; the placeholder left out.
    expect(up.messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(String(up.messages[0]!.content)).toContain('# Environment');
    const names = up.tools!.map((t) => t.function.name);
    expect(names).not.toContain('DeferredToolPlaceholder');
    expect(names).toContain('ToolSearch');
  });

  it('its fourth request: tool_reference, is_error:false results, cache_control on a tool_result', async () => {
    stack = await startStack({ sim: { strictHistory: true } });
    const rec = recorded<Anthropic.MessageCreateParamsStreaming>('claude-code-2.1.332-turn4.json');
    const client = anthropic(stack, scenario([{ say: 'x' }, { say: 'x' }, { say: 'x' }, { say: 'done' }]));
    const message = await client.messages.stream(rec.body).finalMessage();
    expect(message.content).toEqual([{ type: 'text', text: 'done' }]);
    const up = lastUpstream(stack);
    expect(up.tools!.map((t) => t.function.name)).toContain('WebFetch');
    expect(up.messages.map((m) => m.role).slice(0, 4)).toEqual(['system', 'user', 'assistant', 'tool']);
  });

  // Its mid-conversation-tool-changes beta (sent on every request): a tool that comes or goes
  // mid-session (an MCP server connecting or leaving) is a system turn of tool_addition and
  // tool_removal blocks. They were a 400 ("System blocks must be text blocks.") on that turn and
  // every later one: the session was dead.
  it('a system turn adding and removing tools mid-session: declared upstream, each change a line where it stands', async () => {
    stack = await startStack({ sim: { strictHistory: true } });
    const rec = recorded<Anthropic.MessageCreateParamsStreaming>('claude-code-2.1.332-turn1.json');
    const body = {
      ...rec.body,
      // A deferred tool the system turn adds by reference.
      tools: [
        ...rec.body.tools!,
        {
          name: 'WebFetch',
          description: 'Fetch a URL.',
          input_schema: { type: 'object', properties: { url: { type: 'string' } } },
          defer_loading: true,
        },
      ],
      messages: [
        ...rec.body.messages,
        { role: 'assistant', content: 'Done.' },
        {
          role: 'system',
          content: [
            { type: 'text', text: 'MCP server db connected.' },
            { type: 'tool_addition', tool: { type: 'tool_reference', name: 'WebFetch' } },
            {
              type: 'tool_addition',
              tool: {
                type: 'tool_definition',
                definition: {
                  name: 'mcp__db__query',
                  description: 'Run a SQL query.',
                  input_schema: {
                    type: 'object',
                    properties: { sql: { type: 'string' } },
                    required: ['sql'],
                  },
                },
              },
            },
            { type: 'tool_removal', tool: { type: 'tool_reference', name: 'NotebookEdit' } },
          ],
        },
        { role: 'user', content: 'How many users are there?' },
      ],
    } as unknown as Anthropic.MessageCreateParamsStreaming;
    const call = { call: [{ name: 'mcp__db__query', arguments: { sql: 'select count(*) from users' } }] };
    for (const stream of [true, false]) {
      const client = anthropic(stack, scenario([call]));
      const message = stream
        ? await client.messages.stream(body).finalMessage()
        : await client.messages.create({ ...body, stream: false });
      expect(message.content.at(-1)).toMatchObject({ type: 'tool_use', name: 'mcp__db__query' });
      const up = lastUpstream(stack);
      const names = up.tools!.map((t) => t.function.name);
      expect(names).toContain('WebFetch');
      expect(names).toContain('mcp__db__query');
      const raw = stack.sim.requests.at(-1)!.rawBody;
      expect(raw).toContain('MCP server db connected.');
      expect(raw).toContain('[tool WebFetch can be called from here on]');
      expect(raw).toContain('[tool mcp__db__query can be called from here on]');
      expect(raw).toContain('[tool NotebookEdit can no longer be called from here on]');
    }
  });

  it('server tools are left out and said so (header, streamed too); count_tokens takes the same request', async () => {
    stack = await startStack();
    const rec = recorded<Anthropic.MessageCreateParamsStreaming>('claude-code-2.1.332-turn1.json');
    const body = {
      ...rec.body,
      tools: [...rec.body.tools!, { type: 'web_search_20250305', name: 'web_search', max_uses: 5 }],
    } as Anthropic.MessageCreateParamsStreaming;
    const client = anthropic(stack, scenario([{ say: 'ok' }]));
    const { data, response } = await client.messages.create(body).withResponse();
    for await (const _ of data) {
      // drain
    }
    expect(response.headers.get('x-toolproof-dropped-tools')).toBe('web_search_20250305');
    const metrics = await (await fetch(`${stack.origin}/metrics`)).text();
    expect(metrics).toMatch(
      /toolproof_dropped_tools_total\{[^}]*api="messages"[^}]*tool="web_search"[^}]*\} 1/,
    );

    const { stream: _s, max_tokens: _m, ...countable } = body;
    const counted = await client.messages.countTokens(countable as Anthropic.MessageCountTokensParams);
    expect(counted.input_tokens).toBeGreaterThan(5000);
  });

  it('hostedTools: reject turns a server tool back into a 400', async () => {
    stack = await startStack({ file: { defaults: { hostedTools: 'reject' } } });
    const client = anthropic(stack, {});
    await expect(
      client.messages.create({
        model: 'm',
        max_tokens: 10,
        messages: [{ role: 'user', content: 'hi' }],
        tools: [{ type: 'web_search_20250305', name: 'web_search' }],
      }),
    ).rejects.toMatchObject({ status: 400, error: { error: { type: 'invalid_request_error' } } });
  });
});

describe('Codex 0.171.0 on /v1/responses', () => {
  const openai = (s: Stack, headers: Record<string, string>) =>
    new OpenAI({
      baseURL: s.url,
      apiKey: 'sk-local',
      maxRetries: 0,
      timeout: 15_000,
      defaultHeaders: headers,
    });
  type Events = Array<{ type: string; item?: Record<string, unknown>; response?: { output: unknown[] } }>;
  async function run(client: OpenAI, body: Record<string, unknown>) {
    const { data, response } = await client.responses
      .create({ ...body, stream: true } as OpenAI.Responses.ResponseCreateParamsStreaming)
      .withResponse();
    const events: Events = [];
    for await (const e of data) events.push(e as unknown as Events[number]);
    return { events, response };
  }

  it('its default config (namespace tools, web_search): accepted; a namespaced call comes back with its namespace', async () => {
    stack = await startStack();
    const rec = recorded<Record<string, unknown>>('codex-0.171.0-turn1.json');
    const client = openai(
      stack,
      scenario([{ call: [{ name: 'wait_agent', arguments: { targets: ['a'] } }] }]),
    );
    const { events, response } = await run(client, rec.body);
    expect(response.headers.get('x-toolproof-dropped-tools')).toBe('web_search');
    const done = events.filter((e) => e.type === 'response.output_item.done').map((e) => e.item!);
    expect(done).toEqual([
      expect.objectContaining({ type: 'function_call', name: 'wait_agent', namespace: 'multi_agent_v1' }),
    ]);
    const up = lastUpstream(stack);
    expect(up.tools!.map((t) => t.function.name)).toContain('spawn_agent');
    expect(up.messages[0]!.role).toBe('system');
    expect(up.messages.filter((m) => m.role === 'system')).toHaveLength(1);
  });

  it('its second request (function_call and its output) continues the conversation', async () => {
    stack = await startStack({ sim: { strictHistory: true } });
    const rec = recorded<Record<string, unknown>>('codex-0.171.0-turn2.json');
    const { events } = await run(openai(stack, scenario([{ say: 'x' }, { say: 'done' }])), rec.body);
    expect(events.at(-1)!.type).toBe('response.completed');
    expect(lastUpstream(stack).messages.map((m) => m.role)).toEqual([
      'system',
      'user',
      'user',
      'assistant',
      'tool',
    ]);
  });

  it('freeform apply_patch: an input off the grammar is re-asked once; the call comes back as custom_tool_call', async () => {
    stack = await startStack();
    const rec = recorded<{ tools: unknown[] }>('codex-0.171.0-turn1.json');
    const patch = '*** Begin Patch\n*** Add File: proof.txt\n+7391\n*** End Patch\n';
    const client = openai(
      stack,
      scenario([
        { call: [{ name: 'apply_patch', arguments: { input: '{"patch": "add proof.txt"}' } }] },
        { call: [{ name: 'apply_patch', arguments: { input: patch } }] },
      ]),
    );
    const { events, response } = await run(client, {
      ...rec.body,
      tools: [...rec.body.tools, applyPatchTool],
    });
    expect(response.headers.get('x-toolproof-dropped-tools')).toBe('web_search');
    const done = events.filter((e) => e.type === 'response.output_item.done').map((e) => e.item!);
    expect(done).toEqual([
      expect.objectContaining({
        type: 'custom_tool_call',
        name: 'apply_patch',
        input: patch,
        status: 'completed',
      }),
    ]);
    const inputDone = events.find((e) => e.type === 'response.custom_tool_call_input.done') as {
      input?: string;
    };
    expect(inputDone?.input).toBe(patch);
    // Two upstream attempts: the corrective retry re-asked once.
    expect(stack.sim.requests.filter((r) => r.path.endsWith('/chat/completions'))).toHaveLength(2);
    // The tool went upstream as a one-string function whose pattern carries the grammar's markers.
    const fn = lastUpstream(stack).tools!.find((t) => t.function.name === 'apply_patch')!;
    expect(JSON.stringify(fn.function.parameters)).toContain('Begin Patch');
  });

  it('custom_tool_call and custom_tool_call_output sent back are accepted', async () => {
    stack = await startStack({ sim: { strictHistory: true } });
    const rec = recorded<{ tools: unknown[]; input: unknown[] }>('codex-0.171.0-turn1.json');
    const body = {
      ...rec.body,
      tools: [...rec.body.tools, applyPatchTool],
      input: [
        ...rec.body.input,
        {
          type: 'custom_tool_call',
          call_id: 'call_1',
          name: 'apply_patch',
          input: '*** Begin Patch\n*** End Patch\n',
        },
        { type: 'custom_tool_call_output', call_id: 'call_1', output: 'Success.' },
      ],
    };
    const { events } = await run(openai(stack, scenario([{ say: 'x' }, { say: 'done' }])), body);
    expect(events.at(-1)!.type).toBe('response.completed');
    const up = lastUpstream(stack);
    expect(up.messages.at(-1)).toMatchObject({ role: 'tool', content: 'Success.' });
    expect(up.messages.at(-2)!.tool_calls![0]!.function.name).toBe('apply_patch');
  });
});

describe('side requests', () => {
  it("Claude Code's HEAD /api/hello probe is answered by toolproof, not sent to the model server", async () => {
    stack = await startStack();
    const head = await fetch(`${stack.origin}/api/hello`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(stack.sim.requests.some((r) => r.path.includes('hello'))).toBe(false);
  });

  it('model listing: an Anthropic client gets its page shape, an OpenAI client its own', async () => {
    stack = await startStack();
    const anthropic = new Anthropic({ baseURL: stack.origin, apiKey: 'k', maxRetries: 0 });
    const page = await anthropic.models.list();
    expect(page.data.length).toBeGreaterThan(0);
    expect(page.data[0]).toMatchObject({
      type: 'model',
      id: expect.any(String),
      display_name: expect.any(String),
    });
    expect(Number.isNaN(Date.parse(page.data[0]!.created_at))).toBe(false);
    const openai = await stack.client.models.list();
    expect(openai.data[0]).toMatchObject({ object: 'model', id: page.data[0]!.id });
    expect(openai.data[0]).not.toHaveProperty('display_name');
    // models.retrieve: the same model in each client's shape.
    const one = await anthropic.models.retrieve(page.data[0]!.id);
    expect(one).toMatchObject({ type: 'model', id: page.data[0]!.id, display_name: expect.any(String) });
    expect((await stack.client.models.retrieve(one.id)).object).toBe('model');
  });
});
