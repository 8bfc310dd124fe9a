/**
 * A schema answer whose root is not an object is wrapped under `answer` in the synthetic answer
 * tool's parameters. Pydantic writes `list[Item]` (the OpenAI Agents SDK's output type, a
 * Responses `text.format`) as an array whose items are `{"$ref": "#/$defs/Item"}`, with `$defs` at
 * its root: left under `answer`, the ref named nothing, so toolproof's validator could not compile
 * the parameters (the answer went unchecked: a wrong one reached the client) and the backend's
 * grammar had a dangling ref. The definitions now move up to the wrapper's root. Through the real
 * server against the simulator, with the openai client, streamed and not.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScenarioFn } from '../../simulator/index.js';
import { startStack, type Stack } from '../server/stack.js';

const LIST_OF_ITEMS = {
  type: 'array',
  items: { $ref: '#/$defs/Item' },
  $defs: {
    Item: {
      type: 'object',
      properties: { name: { type: 'string' }, qty: { type: 'integer' } },
      required: ['name', 'qty'],
      additionalProperties: false,
    },
  },
};

/** The first answer breaks the item schema (qty a string); the re-asked one fits it. */
const answers: ScenarioFn = (ctx) => {
  const tries = ctx.messages.filter((m) => m?.role === 'assistant').length;
  const answer = tries === 0 ? [{ name: 'bolt', qty: 'many' }] : [{ name: 'bolt', qty: 12 }];
  const tool = ctx.tools.find((t) => t.function?.name?.startsWith('final_answer'))!.function!.name;
  return { call: [{ name: tool, arguments: { answer } }] };
};

describe('a non-object answer schema with $defs, beside tools', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ sim: { scenario: answers } });
  });
  afterAll(() => stack.close());

  for (const stream of [false, true]) {
    it(`chat${stream ? ' (streamed)' : ''}: the answer is checked against the items' schema and re-asked`, async () => {
      stack.sim.reset();
      const params = {
        model: 'm',
        messages: [{ role: 'user' as const, content: 'List the parts as JSON.' }],
        tools: [
          {
            type: 'function' as const,
            function: { name: 'inventory', parameters: { type: 'object', properties: {} } },
          },
        ],
        response_format: {
          type: 'json_schema' as const,
          json_schema: { name: 'parts', schema: LIST_OF_ITEMS },
        },
      };
      let content = '';
      if (stream) {
        const s = await stack.client.chat.completions.create({ ...params, stream: true });
        for await (const c of s) content += c.choices[0]?.delta.content ?? '';
      } else content = (await stack.client.chat.completions.create(params)).choices[0]?.message.content ?? '';
      expect(JSON.parse(content)).toEqual([{ name: 'bolt', qty: 12 }]);
      expect(stack.sim.requests).toHaveLength(2);
      // The ref resolves in what went upstream: the definitions sit at the parameters' root.
      const sent = stack.sim.requests[0]!.body as {
        tools: Array<{ function: { name: string; parameters: Record<string, unknown> } }>;
      };
      const parameters = sent.tools.find((t) => t.function.name.startsWith('final_answer'))!.function
        .parameters;
      expect(parameters.$defs).toEqual(LIST_OF_ITEMS.$defs);
      expect((parameters.properties as { answer: object }).answer).not.toHaveProperty('$defs');
    });
  }

  it('counts the answers valid, none unchecked', async () => {
    const text = await (await fetch(`${stack.origin}/metrics`)).text();
    expect(text).toMatch(/toolproof_schema_answers_total\{model="m",outcome="valid"\} 2/);
    expect(text).not.toMatch(/toolproof_schema_answers_total\{model="m",outcome="unchecked"\} [1-9]/);
  });
});
