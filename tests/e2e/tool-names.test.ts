/**
 * Tool names a backend built on mistral_common refuses: vLLM with the Mistral tokenizer takes only
 * `^[a-zA-Z0-9_-]{1,64}$`, in the tools and the history's calls (400 "Function name was <name> but
 * must be a-z, A-Z, 0-9, or contain underscores and dashes, with a maximum length of 64."; seen
 * in the field with Claude Code's MCP tool `mcp__plugin_aws-startup-advisor_awsknowledge__aws___
 * get_regional_availability`, 75 characters). The agent sends its tools every turn, so every turn
 * was that 400. Now the refusal is read and remembered (policies/tool-names): such names go under
 * aliases, the same every turn, and the calls come back under the client's names, streamed or
 * not. Three turns on Messages (the Anthropic SDK) and chat (the openai SDK), attempts counted.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../server/stack.js';

type Obj = Record<string, unknown>;
const MCP = 'mcp__plugin_aws-startup-advisor_awsknowledge__aws___get_regional_availability';
const DOTTED = 'github.create_issue';
const schema = { type: 'object', properties: { region: { type: 'string' } }, required: ['region'] };

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({
    sim: {
      personality: 'vllm',
      mistralToolNames: true,
      // Calls the tool it was offered whose name begins like the MCP one; after a result, answers.
      scenario: (ctx) => {
        const results = ctx.messages.filter((m) => m?.role === 'tool').length;
        const last = ctx.messages[ctx.messages.length - 1];
        if (last?.role === 'tool') return { say: `done ${results}` };
        const offered = ctx.tools.map((t) => t.function?.name ?? '');
        const name = offered.find((n) => n.startsWith(results === 0 ? 'mcp__plugin' : 'github'));
        return name ? { call: [{ name, arguments: { region: 'eu' } }] } : { say: 'no tool' };
      },
    },
  });
});
afterAll(() => stack.close());

const upstream = () => stack.sim.requests.filter((r) => r.path.endsWith('/chat/completions'));

describe('tool names mistral_common refuses', () => {
  for (const stream of [false, true])
    it(`Messages${stream ? ' (streamed)' : ''}: three turns, the calls under the client's names`, async () => {
      const anthropic = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0, timeout: 30_000 });
      const messages: Obj[] = [{ role: 'user', content: `Regions? ${stream}` }];
      const attempts: number[] = [];
      const called: string[] = [];
      for (let t = 0; t < 3; t++) {
        const before = upstream().length;
        const params = {
          model: 'sim',
          max_tokens: 300,
          tools: [
            { name: MCP, input_schema: schema },
            { name: DOTTED, input_schema: schema },
          ],
          messages,
        } as never;
        const m = stream
          ? await anthropic.messages.stream(params).finalMessage()
          : await anthropic.messages.create(params);
        attempts.push(upstream().length - before);
        const uses = m.content.filter((b) => b.type === 'tool_use');
        called.push(...uses.map((u) => u.name));
        messages.push({ role: 'assistant', content: m.content });
        messages.push({
          role: 'user',
          content: uses.length
            ? uses.map((u) => ({ type: 'tool_result', tool_use_id: u.id, content: 'eu-west-1' }))
            : 'And the other one?',
        });
      }
      expect(called).toEqual([MCP, DOTTED]);
      // The file's first turn meets the refusal; the fact is remembered for every later one.
      expect(attempts).toEqual(stream ? [1, 1, 1] : [2, 1, 1]);
      // Later turns: no unportable name upstream, the same alias every turn.
      const last = upstream().at(-1)!.body as { tools: Array<{ function: { name: string } }> };
      const names = last.tools.map((x) => x.function.name);
      for (const n of names) expect(n).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
      expect(
        new Set(
          upstream()
            .slice(-3)
            .flatMap((r) => (r.body as typeof last).tools.map((x) => x.function.name)),
        ),
      ).toEqual(new Set(names));
    });

  it('chat, streamed: the call delta under the client name; a bad call re-asked under the alias', async () => {
    const tools = [{ type: 'function' as const, function: { name: MCP, parameters: schema } }];
    stack.sim.setScenario((ctx) => {
      const name = ctx.tools.map((t) => t.function?.name ?? '').find((n) => n.startsWith('mcp__plugin'))!;
      // First a call without its required argument (re-asked), then a good one.
      return ctx.messages.at(-1)?.role === 'tool'
        ? { call: [{ name, arguments: { region: 'eu' } }] }
        : { call: [{ name, arguments: {} }] };
    });
    const before = upstream().length;
    const s = await stack.client.chat.completions.create({
      model: 'sim',
      stream: true,
      messages: [{ role: 'user', content: 'Regions, chat?' }],
      tools,
    });
    const names: string[] = [];
    let args = '';
    for await (const ch of s) {
      for (const t of ch.choices[0]?.delta.tool_calls ?? []) {
        if (t.function?.name) names.push(t.function.name);
        args += t.function?.arguments ?? '';
      }
    }
    expect(names).toEqual([MCP]);
    expect(JSON.parse(args)).toEqual({ region: 'eu' });
    // The retry went, and was taken: its replayed call carries the alias.
    expect(upstream().length - before).toBe(2);
    const retry = upstream().at(-1)!.body as {
      tools: Array<{ function: { name: string } }>;
      messages: Array<{ tool_calls?: Array<{ function: { name: string } }> }>;
    };
    const replayed = retry.messages.flatMap((m) => m.tool_calls ?? []).map((c) => c.function.name);
    expect(replayed).toHaveLength(1);
    expect(replayed[0]).toMatch(/^mcp__plugin_aws-startup-advisor_awsknowledge__aws_[\w-]*_[0-9A-Za-z]{8}$/);
    expect(replayed[0]).toHaveLength(64);
    expect(retry.tools.map((t) => t.function.name)).toContain(replayed[0]);
  });
});

describe('a call leaked as text under an alias (forced tool use off: the model may answer in text)', () => {
  let leaky: Stack;
  beforeAll(async () => {
    leaky = await startStack({
      sim: { personality: 'vllm', mistralToolNames: true },
      file: { defaults: { forceToolUse: false } },
    });
  });
  afterAll(() => leaky.close());

  for (const stream of [false, true])
    it(`a call the model leaks as text under the alias comes back as a call to the client's tool (chat and Messages${stream ? ', streamed' : ''})`, async () => {
      // The model knows the tool by its alias only (tools and history carry it): a call it
      // writes as text (Hermes <tool_call> JSON, no --tool-call-parser match) names the alias.
      leaky.sim.setScenario((ctx) => {
        const name = ctx.tools.map((t) => t.function?.name ?? '').find((n) => n.startsWith('mcp__plugin'))!;
        return ctx.messages.at(-1)?.role === 'tool'
          ? { say: 'done' }
          : { leak: { format: 'hermes', calls: [{ name, arguments: { region: 'eu' } }] } };
      });
      const tools = [{ type: 'function' as const, function: { name: MCP, parameters: schema } }];
      const messages = [{ role: 'user' as const, content: `Regions, leaked? ${stream}` }];
      let chatCalls: Array<{ name: string; args: string }>;
      if (stream) {
        const s = await leaky.client.chat.completions.create({ model: 'sim', stream: true, messages, tools });
        const byIndex: Array<{ name: string; args: string }> = [];
        for await (const ch of s)
          for (const t of ch.choices[0]?.delta.tool_calls ?? []) {
            byIndex[t.index] ??= { name: '', args: '' };
            byIndex[t.index]!.name += t.function?.name ?? '';
            byIndex[t.index]!.args += t.function?.arguments ?? '';
          }
        chatCalls = byIndex;
      } else {
        const r = await leaky.client.chat.completions.create({ model: 'sim', messages, tools });
        chatCalls = (r.choices[0]!.message.tool_calls ?? []).map((c) =>
          c.type === 'function'
            ? { name: c.function.name, args: c.function.arguments }
            : { name: '', args: '' },
        );
      }
      expect(chatCalls.map((c) => c.name)).toEqual([MCP]);
      expect(JSON.parse(chatCalls[0]!.args)).toEqual({ region: 'eu' });

      const anthropic = new Anthropic({ baseURL: leaky.origin, apiKey: 'x', maxRetries: 0, timeout: 30_000 });
      const params = {
        model: 'sim',
        max_tokens: 300,
        tools: [{ name: MCP, input_schema: schema }],
        messages: [{ role: 'user', content: `Regions, leaked on Messages? ${stream}` }],
      } as never;
      const m = stream
        ? await anthropic.messages.stream(params).finalMessage()
        : await anthropic.messages.create(params);
      const uses = m.content.filter((b) => b.type === 'tool_use');
      expect(uses.map((u) => u.name)).toEqual([MCP]);
      expect(uses[0]!.input).toEqual({ region: 'eu' });
      expect(
        m.content
          .filter((b) => b.type === 'text')
          .map((b) => b.text)
          .join(''),
      ).not.toContain('tool_call');
    });
});
