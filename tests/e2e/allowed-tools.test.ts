/**
 * tool_choice `allowed_tools` (chat completions and Responses, with the openai client): toolproof
 * refused it itself on every turn (chat: `Missing required field "tool_choice.function"`;
 * Responses: `tool_choice "allowed_tools" is not supported`), and no backend it fronts takes it.
 * Now it goes upstream as the request it means (protocol/allowed-tools.ts): only the allowed tools,
 * the mode as tool_choice. A model that prefers a declared tool it may not use still gives the
 * client only the allowed one, streamed as not; three turns of one session keep their prefix.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../server/stack.js';
import { prefixBreak } from './raw-json.js';

type Obj = Record<string, unknown>;
const params = { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] };
const chatTools = [
  { type: 'function', function: { name: 'Read', parameters: params } },
  { type: 'function', function: { name: 'Write', parameters: params } },
];
const respTools = [
  { type: 'function', name: 'Read', parameters: params },
  { type: 'function', name: 'Write', parameters: params },
  { type: 'web_search' },
];

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({
    sim: { personality: 'llama-server', nCtx: 32768, strictHistory: true },
    file: { defaults: { vision: false, audio: false, contextWindow: 32768 } },
  });
  // A model that writes whenever it is offered Write, and reads otherwise.
  stack.sim.setScenario((ctx) => {
    const names = ctx.tools.map((t) => t.function?.name);
    return { call: [{ name: names.includes('Write') ? 'Write' : 'Read', arguments: { path: 'a.ts' } }] };
  });
});
afterAll(() => stack.close());

/** Three turns; what the client got each turn (tool names), and what went upstream. */
async function threeTurns(
  turn: (history: Obj[], stream: boolean) => Promise<{ items: Obj[]; calls: string[] }>,
  first: Obj,
  stream: boolean,
): Promise<{ calls: string[][]; upstream: Obj[]; raw: string[] }> {
  const history: Obj[] = [first];
  const calls: string[][] = [];
  const upstream: Obj[] = [];
  const raw: string[] = [];
  for (let k = 0; k < 3; k++) {
    const before = stack.sim.requests.length;
    const got = await turn(history, stream);
    calls.push(got.calls);
    history.push(...got.items);
    const sent = stack.sim.requests.slice(before).filter((r) => r.path.endsWith('/chat/completions'));
    upstream.push(sent[0]!.body as Obj);
    raw.push(sent[0]!.rawBody);
  }
  return { calls, upstream, raw };
}

const upstreamTools = (body: Obj) =>
  (body.tools as Array<{ function: { name: string } }>).map((t) => t.function.name);

describe('tool_choice allowed_tools: answered as the request it means, every turn', () => {
  for (const stream of [false, true]) {
    it(`chat completions${stream ? ', streamed' : ''}`, async () => {
      const toolChoice = {
        type: 'allowed_tools',
        allowed_tools: { mode: 'required', tools: [{ type: 'function', function: { name: 'Read' } }] },
      };
      const r = await threeTurns(
        async (history, s) => {
          const body = { model: 'sim', messages: history, tools: chatTools, tool_choice: toolChoice };
          const c = s
            ? await stack.client.chat.completions.stream(body as never).finalChatCompletion()
            : await stack.client.chat.completions.create(body as never);
          const msg = c.choices[0]!.message;
          const calls = (msg.tool_calls ?? []).map(
            (t) => (t as { function: { name: string } }).function.name,
          );
          const { parsed: _p, ...plain } = msg as unknown as Obj;
          const items: Obj[] = [plain];
          for (const t of msg.tool_calls ?? [])
            items.push({ role: 'tool', tool_call_id: t.id, content: 'x' });
          return { items, calls };
        },
        { role: 'user', content: 'Read a.ts.' },
        stream,
      );
      expect(r.calls).toEqual([['Read'], ['Read'], ['Read']]);
      for (const body of r.upstream) {
        expect(upstreamTools(body)).toEqual(['Read']);
        expect(body.tool_choice).toBe('required');
      }
      expect(prefixBreak(r.raw[0]!, r.raw[1]!)).toBeFalsy();
      expect(prefixBreak(r.raw[1]!, r.raw[2]!)).toBeFalsy();
    });

    it(`Responses${stream ? ', streamed' : ''}: mode auto, a hosted tool listed beside a function`, async () => {
      const toolChoice = {
        type: 'allowed_tools',
        mode: 'auto',
        tools: [{ type: 'function', name: 'Read' }, { type: 'web_search' }],
      };
      const r = await threeTurns(
        async (history, s) => {
          const body = {
            model: 'sim',
            input: history,
            tools: respTools,
            tool_choice: toolChoice,
            store: false,
          };
          const res = s
            ? await stack.client.responses.stream(body as never).finalResponse()
            : await stack.client.responses.create(body as never);
          const items = res.output.map((item) => {
            const { parsed_arguments: _p, ...rest } = item as unknown as Obj;
            return rest;
          });
          const calls: string[] = [];
          for (const item of res.output)
            if (item.type === 'function_call') {
              calls.push(item.name);
              items.push({ type: 'function_call_output', call_id: item.call_id, output: 'x' });
            }
          return { items, calls };
        },
        { role: 'user', content: 'Read a.ts.' },
        stream,
      );
      expect(r.calls).toEqual([['Read'], ['Read'], ['Read']]);
      for (const body of r.upstream) {
        // Read, and the synthetic answer tool of forced tool use (mode auto is forced as auto is)
        expect(upstreamTools(body)[0]).toBe('Read');
        expect(upstreamTools(body)).not.toContain('Write');
      }
      expect(prefixBreak(r.raw[0]!, r.raw[1]!)).toBeFalsy();
      expect(prefixBreak(r.raw[1]!, r.raw[2]!)).toBeFalsy();
    });
  }

  it('a "required" choice allowing no declared tool is the client\'s to fix: a 400 naming the field', async () => {
    const err = await stack.client.chat.completions
      .create({
        model: 'sim',
        messages: [{ role: 'user', content: 'hi' }],
        tools: chatTools,
        tool_choice: {
          type: 'allowed_tools',
          allowed_tools: { mode: 'required', tools: [{ type: 'function', function: { name: 'Nope' } }] },
        },
      } as never)
      .catch((e: unknown) => e as { status: number; param?: string });
    expect(err).toMatchObject({ status: 400, param: 'tool_choice.allowed_tools.tools' });
  });
});
