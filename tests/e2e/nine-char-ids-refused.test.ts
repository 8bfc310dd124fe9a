/**
 * A Mistral-family model toolproof was not told about (`historyRepair.nineCharIds` off): its
 * template takes only 9-alphanumeric tool call ids, and llama-server refuses a history holding
 * any other (its own 32-character ids included) with a 400 carrying the Jinja exception "Tool call
 * IDs should be alphanumeric strings with length 9!". The agent sends those ids again every turn:
 * from its first call on, every turn was refused. Now the request goes again once with the ids
 * mapped as `nineCharIds` maps them, the refusal is remembered, and later turns go mapped from
 * the start, each turn's messages extending the previous turn's byte for byte. Through the real
 * server and the openai SDK, streamed and not.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectStream, startStack, type Stack } from '../server/stack.js';
import { prefixBreak } from './raw-json.js';

type Obj = Record<string, unknown>;
let stack: Stack;
beforeAll(async () => {
  stack = await startStack({
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
    expect(metrics).toMatch(/toolproof_upstream_refusals_total\{[^}]*decision="nine-char-ids-refused"\} 1$/m);
  });
});
