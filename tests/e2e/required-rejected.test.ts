/**
 * The client's own tool_choice "required" on an upstream that rejects it. llama-server answers
 * "required" with a 400 "Failed to initialize samplers: std::exception" on some templates (the
 * simulator's rejectRequired, as recorded), and the agent sends the same tool_choice on every
 * turn: toolproof fell back to "auto" only for a "required" it had forced itself, so an agent
 * that asks for "required" (Messages `any`, a Responses "required") got the 400 on every turn.
 * Now the request goes again once with "auto", the fact is remembered (later turns go with
 * "auto" from the start), and the client's "required" still holds on what it gets: corrective-
 * retry judges it and re-asks a prose turn. Three turns on chat (streamed and not), Messages and
 * Responses, through the real SDKs.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../server/stack.js';

type Obj = Record<string, unknown>;
let stack: Stack;
beforeAll(async () => {
  stack = await startStack({
    sim: {
      personality: 'llama-server',
      template: 'llama3',
      rejectRequired: true,
      // A model left to "auto" answers in prose; re-asked for a call, it calls.
      scenario: (ctx) =>
        /must call one of the tools/i.test(ctx.lastUserText)
          ? { call: [{ name: 'Read', arguments: { path: 'a' } }] }
          : { say: 'I would rather just answer.' },
    },
  });
});
afterAll(() => stack.close());

const upstream = () => stack.sim.requests.filter((r) => r.path.endsWith('/chat/completions'));
const choiceOf = (raw: string) => (JSON.parse(raw) as Obj).tool_choice;
const readTool = {
  type: 'function' as const,
  function: { name: 'Read', parameters: { type: 'object', properties: { path: { type: 'string' } } } },
};

/** Three turns; each turn's upstream tool_choices, attempt by attempt. */
async function session(turn: (t: number) => Promise<number>): Promise<unknown[][]> {
  const sent: unknown[][] = [];
  for (let t = 0; t < 3; t++) {
    const before = upstream().length;
    expect(await turn(t)).toBeGreaterThan(0); // the client's "required": a call every turn
    sent.push(
      upstream()
        .slice(before)
        .map((r) => choiceOf(r.rawBody)),
    );
  }
  return sent;
}

describe('the client\'s tool_choice "required", rejected by the upstream', () => {
  for (const stream of [false, true])
    it(`chat${stream ? ' (streamed)' : ''}: three turns answered with a call; refused once, then "auto"`, async () => {
      const messages: Obj[] = [{ role: 'user', content: `Read a. ${stream}` }];
      const sent = await session(async () => {
        const params = { model: 'sim', messages, tools: [readTool], tool_choice: 'required' } as never;
        let calls: Array<{ id?: string; function?: { name?: string; arguments?: string } }> = [];
        if (stream) {
          const s = await stack.client.chat.completions.create({ ...(params as Obj), stream: true } as never);
          for await (const ch of s as unknown as AsyncIterable<{
            choices: Array<{ delta: { tool_calls?: never[] } }>;
          }>)
            calls.push(...(ch.choices[0]?.delta.tool_calls ?? []));
          calls = calls.filter((c) => c.id);
        } else
          calls = (await stack.client.chat.completions.create(params)).choices[0]?.message.tool_calls ?? [];
        messages.push({
          role: 'assistant',
          content: null,
          tool_calls: calls.map((c) => ({ ...c, type: 'function' })),
        });
        for (const c of calls) messages.push({ role: 'tool', tool_call_id: c.id, content: 'done' });
        return calls.length;
      });
      // Rejected once (the first test of the file), then "auto" from the start: the prose answer
      // re-asked, the call delivered.
      expect(sent[0]).toEqual(stream ? ['auto', 'auto'] : ['required', 'auto', 'auto']);
      expect(sent.slice(1)).toEqual([
        ['auto', 'auto'],
        ['auto', 'auto'],
      ]);
    });

  it('Messages tool_choice any and Responses "required": every turn answered with a call, "auto" sent', async () => {
    const anthropic = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0, timeout: 30_000 });
    const messages: Obj[] = [{ role: 'user', content: 'Read a.' }];
    const viaMessages = await session(async () => {
      const m = await anthropic.messages.create({
        model: 'sim',
        max_tokens: 500,
        tools: [{ name: 'Read', input_schema: { type: 'object', properties: { path: { type: 'string' } } } }],
        tool_choice: { type: 'any' },
        messages: messages as never,
      });
      const uses = m.content.filter((b) => b.type === 'tool_use');
      messages.push(
        { role: 'assistant', content: m.content },
        {
          role: 'user',
          content: uses.map((b) => ({ type: 'tool_result', tool_use_id: b.id, content: 'done' })),
        },
      );
      return uses.length;
    });
    const input: Obj[] = [{ role: 'user', content: 'Read b.' }];
    const viaResponses = await session(async () => {
      const r = await stack.client.responses.create({
        model: 'sim',
        tools: [
          { type: 'function', name: 'Read', strict: false, parameters: { type: 'object', properties: {} } },
        ],
        tool_choice: 'required',
        input: input as never,
      });
      const calls = r.output.filter((o) => o.type === 'function_call');
      for (const c of calls)
        input.push(c as never, { type: 'function_call_output', call_id: c.call_id, output: 'done' });
      return calls.length;
    });
    for (const sent of [viaMessages, viaResponses])
      for (const turn of sent) expect(turn).toEqual(['auto', 'auto']);
  });
});
