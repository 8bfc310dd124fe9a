/**
 * A Mistral-family model toolproof was not told about (`historyRepair.nineCharIds`,
 * `bridgeToolToUser`, `mergeSameRole` off): its template takes only 9-alphanumeric tool call ids
 * and alternating roles, and llama-server refuses a history holding any other id (its own
 * 32-character ones included) or a user turn right after tool results (an agent's compaction
 * request, a turn the client cut mid-call) with a 400 carrying the Jinja exception. The agent
 * sends that history again every turn: every later turn was refused. Now the request goes again
 * once repaired as those settings repair it, the refusal is remembered, and later turns go
 * repaired from the start, each turn's messages extending the previous turn's byte for byte.
 * Through the real server and the openai SDK, streamed and not.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectStream, startStack, type Stack } from '../server/stack.js';
import { prefixBreak } from './raw-json.js';

type Obj = Record<string, unknown>;
let stack: Stack;
const mistral = () =>
  startStack({
    sim: {
      personality: 'llama-server',
      template: 'mistral',
      // A call, then an answer once its result is in.
      scenario: (ctx) =>
        ctx.afterToolResult
          ? { say: 'The file says hello.' }
          : { call: [{ name: 'Read', arguments: { path: 'a' } }] },
    },
  });
beforeAll(async () => {
  stack = await mistral();
});
afterAll(() => stack.close());

const upstream = () => stack.sim.requests.filter((r) => r.path.endsWith('/chat/completions'));
const tools = [
  {
    type: 'function' as const,
    function: { name: 'Read', parameters: { type: 'object', properties: { path: { type: 'string' } } } },
  },
];

describe('a Mistral template refusing tool call ids that are not 9 alphanumerics', () => {
  it('four turns of calls and answers, streamed and not: refused once, then every id mapped', async () => {
    const messages: Obj[] = [{ role: 'user', content: 'Read a, then b.' }];
    const attempts: number[] = [];
    const sent: string[] = [];
    for (let t = 0; t < 4; t++) {
      const before = upstream().length;
      const params = { model: 'sim', messages: messages as never, tools };
      let content = '';
      let calls: Array<{ id?: string; function?: { name?: string; arguments?: string } }> = [];
      if (t % 2 === 1) {
        const r = await collectStream(
          await stack.client.chat.completions.create({ ...params, stream: true }),
        );
        content = r.content;
        calls = r.calls.map((c) => ({ id: c.id, function: { name: c.name, arguments: c.args } }));
      } else {
        const c = await stack.client.chat.completions.create(params);
        content = c.choices[0]?.message.content ?? '';
        calls = c.choices[0]?.message.tool_calls ?? [];
      }
      const mine = upstream().slice(before);
      attempts.push(mine.length);
      sent.push(mine.at(-1)!.rawBody);
      if (calls.length > 0) {
        messages.push({
          role: 'assistant',
          content: null,
          tool_calls: calls.map((c) => ({ ...c, type: 'function' })),
        });
        for (const c of calls) messages.push({ role: 'tool', tool_call_id: c.id, content: 'hello' });
      } else messages.push({ role: 'assistant', content }, { role: 'user', content: `now file ${t}` });
    }
    // Turn 1 has no call in its history; turn 2 carries the backend's own 32-character id.
    expect(attempts).toEqual([1, 2, 1, 1]);
    for (const body of sent.slice(1))
      for (const m of (JSON.parse(body) as { messages: Obj[] }).messages)
        if (m.role === 'tool') expect(m.tool_call_id).toMatch(/^[A-Za-z0-9]{9}$/);
    for (const k of [2, 3]) expect(prefixBreak(sent[k - 1]!, sent[k]!)).toBeNull();
    const metrics = await (await fetch(`${stack.origin}/metrics`)).text();
    expect(metrics).toMatch(
      /toolproof_upstream_refusals_total\{[^}]*decision="template-rules-refused"\} 1$/m,
    );
  });

  it('a compaction request right after a tool result (user after tool): refused once, then answered every turn', async () => {
    const fresh = await mistral();
    try {
      const chats = () => fresh.sim.requests.filter((r) => r.path.endsWith('/chat/completions')).length;
      const messages: Obj[] = [
        { role: 'user', content: 'Read a.' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'Read', arguments: '{"path":"a"}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'hello' },
        { role: 'user', content: 'Summarize the conversation so far. Do not call any tools.' },
      ];
      const attempts: number[] = [];
      for (let t = 0; t < 3; t++) {
        const before = chats();
        const c = await fresh.client.chat.completions.create({
          model: 'sim',
          messages: messages as never,
          tools,
          stream: false,
        });
        attempts.push(chats() - before);
        messages.push(
          { role: 'assistant', content: c.choices[0]?.message.content ?? '' },
          { role: 'user', content: `more ${t}` },
        );
      }
      expect(attempts).toEqual([2, 1, 1]);
    } finally {
      await fresh.close();
    }
  });

  it('a corrective retry replays the failed call with a 9-alphanumeric id: the template takes it', async () => {
    const fresh = await mistral();
    try {
      // A named tool_choice the model does not follow (it calls Read): re-asked once, the failed
      // call replayed upstream. Its id was the backend's own (32 characters): refused, the turn a 400.
      const c = await fresh.client.chat.completions.create({
        model: 'sim',
        messages: [{ role: 'user', content: 'Write a.' }],
        tools: [
          ...tools,
          { type: 'function', function: { name: 'Write', parameters: { type: 'object', properties: {} } } },
        ],
        tool_choice: { type: 'function', function: { name: 'Write' } },
      });
      expect(c.choices[0]).toBeDefined();
      const sent = fresh.sim.requests.filter((r) => r.path.endsWith('/chat/completions'));
      expect(sent).toHaveLength(2);
      const replayed = (JSON.parse(sent[1]!.rawBody) as { messages: Obj[] }).messages.at(-2)!;
      expect((replayed.tool_calls as Obj[])[0]!.id).toMatch(/^[A-Za-z0-9]{9}$/);
    } finally {
      await fresh.close();
    }
  });
});

/**
 * The same repair on vLLM with the Mistral tokenizer, where mistral_common (before it let a user
 * turn follow tool results) says "Unexpected role 'user' after role 'tool'": Claude Code puts a
 * tool result and the user's next words in one user message, which goes upstream as a tool
 * message then a user one, so every turn after the first call was refused. Three turns through
 * the Anthropic SDK, attempts counted.
 */
describe("mistral_common's role order on vLLM", () => {
  it('Messages: a tool result and text in one user turn; refused once, then bridged from the start', async () => {
    const Anthropic = (await import('@anthropic-ai/sdk')).default;
    const vllm = await startStack({
      sim: {
        personality: 'vllm',
        mistralRoleOrder: true,
        scenario: (ctx) =>
          ctx.messages.at(-1)?.role === 'user' && /read/i.test(ctx.lastUserText)
            ? { call: [{ name: 'Read', arguments: { path: 'a' } }] }
            : { say: 'The file says hello.' },
      },
    });
    try {
      const anthropic = new Anthropic({ baseURL: vllm.origin, apiKey: 'x', maxRetries: 0, timeout: 30_000 });
      const requests = () => vllm.sim.requests.filter((r) => r.path.endsWith('/chat/completions'));
      const messages: Obj[] = [{ role: 'user', content: 'Please read a.' }];
      const attempts: number[] = [];
      for (let t = 0; t < 3; t++) {
        const before = requests().length;
        const m = await anthropic.messages.create({
          model: 'sim',
          max_tokens: 200,
          tools: [
            { name: 'Read', input_schema: { type: 'object', properties: { path: { type: 'string' } } } },
          ],
          messages: messages as never,
        });
        attempts.push(requests().length - before);
        messages.push({ role: 'assistant', content: m.content });
        const uses = m.content.filter((b) => b.type === 'tool_use');
        messages.push({
          role: 'user',
          content: [
            ...uses.map((u) => ({ type: 'tool_result', tool_use_id: u.id, content: 'hello' })),
            { type: 'text', text: `Thanks. Now read a again (${t}).` },
          ],
        });
      }
      // Turn 1 has no tool result yet; turn 2 is refused once and bridged; turn 3 bridged from the start.
      expect(attempts).toEqual([1, 2, 1]);
    } finally {
      await vllm.close();
    }
  });
});
