/**
 * A JSON schema answer beside tools on an upstream that rejects tool_choice "required"
 * (llama-server's "Failed to initialize samplers" on some templates: the simulator's
 * rejectRequired). force-tool-use moves the client's schema onto the answer tool and sends no
 * response_format; once "required" was refused the turn goes with "auto", and a model that
 * answers in prose bypassed both the answer tool and the schema: every turn after the first came
 * back as text that is no JSON for the schema, streamed or not. Now such prose is judged against
 * the schema and re-asked once, asking for the answer tool; the client's answer holds to the
 * schema. Three turns through the real SDKs: Responses `text.format` (streamed and not), chat
 * `response_format`, Messages `output_config.format`; upstream attempts counted per turn.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../server/stack.js';

type Obj = Record<string, unknown>;
const ANSWER = { city: 'Paris', celsius: 21 };
const schema = {
  type: 'object',
  properties: { city: { type: 'string' }, celsius: { type: 'number' } },
  required: ['city', 'celsius'],
  additionalProperties: false,
};

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({
    sim: {
      personality: 'llama-server',
      template: 'llama3',
      rejectRequired: true,
      // Left to "auto", the model answers in prose; told to call the answer tool, it does.
      scenario: (ctx) =>
        /final_answer/.test(ctx.lastUserText)
          ? { call: [{ name: 'final_answer', arguments: ANSWER }] }
          : /as JSON/.test(ctx.lastUserText)
            ? { say: JSON.stringify(ANSWER) }
            : { say: 'It is sunny in Paris, 21 degrees.' },
    },
  });
});
afterAll(() => stack.close());

const upstream = () => stack.sim.requests.filter((r) => r.path.endsWith('/chat/completions'));

/** Three turns; each turn's answer (parsed) and upstream attempts. */
async function session(
  turn: (t: number) => Promise<string>,
): Promise<{ answers: unknown[]; attempts: number[] }> {
  const answers: unknown[] = [];
  const attempts: number[] = [];
  for (let t = 0; t < 3; t++) {
    const before = upstream().length;
    const text = await turn(t);
    attempts.push(upstream().length - before);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
    answers.push(parsed);
  }
  return { answers, attempts };
}

const weather = {
  type: 'function' as const,
  name: 'get_weather',
  strict: false,
  parameters: { type: 'object', properties: { city: { type: 'string' } } },
};

describe('a JSON schema answer beside tools, "required" rejected upstream', () => {
  for (const stream of [false, true])
    it(`Responses text.format${stream ? ' (streamed)' : ''}: three turns, each answer in the schema`, async () => {
      const input: Obj[] = [];
      const { answers, attempts } = await session(async (t) => {
        input.push({ role: 'user', content: `Weather in Paris? (${stream} ${t})` });
        const params = {
          model: 'sim',
          tools: [weather],
          text: { format: { type: 'json_schema', name: 'weather', schema, strict: true } },
          input: input as never,
        } as const;
        let text: string;
        if (stream) {
          const s = await stack.client.responses.create({ ...params, stream: true } as never);
          let done: { output_text?: string } | undefined;
          for await (const e of s as unknown as AsyncIterable<{
            type: string;
            response?: { output_text?: string };
          }>)
            if (e.type === 'response.completed') done = e.response;
          text = done?.output_text ?? '';
          // The SDK's output_text is built on the final response; read the items as well.
        } else text = (await stack.client.responses.create(params as never)).output_text;
        input.push({ role: 'assistant', content: text });
        return text;
      });
      expect(answers).toEqual([ANSWER, ANSWER, ANSWER]);
      // The prose turn re-asked once; the file's first turn also met the refused "required".
      expect(attempts).toEqual(stream ? [2, 2, 2] : [3, 2, 2]);
    });

  it('chat response_format (streamed and not) and Messages output_config.format: each answer in the schema', async () => {
    const rf = { type: 'json_schema', json_schema: { name: 'weather', schema, strict: true } };
    const tool = {
      type: 'function' as const,
      function: { name: 'get_weather', parameters: weather.parameters },
    };
    for (const stream of [false, true]) {
      const messages: Obj[] = [];
      const { answers, attempts } = await session(async (t) => {
        // The last turn's prose is the schema's JSON itself: an answer, not re-asked.
        const ask = t === 2 ? 'Weather in Paris, as JSON?' : 'Weather in Paris?';
        messages.push({ role: 'user', content: `${ask} chat ${stream} ${t}` });
        const params = { model: 'sim', messages, tools: [tool], response_format: rf } as never;
        let text = '';
        if (stream) {
          const s = await stack.client.chat.completions.create({ ...(params as Obj), stream: true } as never);
          for await (const ch of s as unknown as AsyncIterable<{
            choices: Array<{ delta: { content?: string } }>;
          }>)
            text += ch.choices[0]?.delta.content ?? '';
        } else text = (await stack.client.chat.completions.create(params)).choices[0]?.message.content ?? '';
        messages.push({ role: 'assistant', content: text });
        return text;
      });
      expect(answers).toEqual([ANSWER, ANSWER, ANSWER]);
      expect(attempts).toEqual([2, 2, 1]);
    }
    const anthropic = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0, timeout: 30_000 });
    const messages: Obj[] = [];
    const { answers, attempts } = await session(async (t) => {
      messages.push({ role: 'user', content: `Weather in Paris? messages ${t}` });
      const m = await anthropic.messages.create({
        model: 'sim',
        max_tokens: 500,
        tools: [
          { name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } },
        ],
        output_config: { format: { type: 'json_schema', schema } },
        messages: messages as never,
      } as never);
      const text = (m as { content: Array<{ type: string; text?: string }> }).content
        .map((b) => (b.type === 'text' ? b.text : ''))
        .join('');
      messages.push({ role: 'assistant', content: text });
      return text;
    });
    expect(answers).toEqual([ANSWER, ANSWER, ANSWER]);
    expect(attempts).toEqual([2, 2, 2]);
  });
});
