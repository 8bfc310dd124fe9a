/**
 * The Anthropic SDK's tool runner (`client.beta.messages.toolRunner`) keeps its conversation in a
 * server-held thread: the first turn sends `thread: {type: "create"}`, each later one only its
 * new messages with `thread: {type: "continue", previous_message_id}`. toolproof is stateless and
 * read a `continue` as the whole conversation: the model saw an orphan tool result and no question
 * ("matches no earlier tool call"). It now answers `thread_not_found`, on which the SDK replays the
 * whole conversation with `create`, and the loop ends with the answer from the tool's result.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../server/stack.js';

describe('Anthropic SDK tool runner (server-held threads) through a stateless toolproof', () => {
  let stack: Stack;
  let anthropic: Anthropic;
  beforeAll(async () => {
    stack = await startStack({ sim: { scenario: 'demo' } });
    anthropic = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0, timeout: 30_000 });
  });
  afterAll(() => stack.close());

  const tools = [
    {
      name: 'get_weather',
      description: 'The weather in a city',
      input_schema: {
        type: 'object' as const,
        properties: { city: { type: 'string' } },
        required: ['city'],
      },
      run: async ({ city }: { city: string }) => `Sunny and 23 degrees in ${city}`,
    },
  ];

  for (const stream of [false, true]) {
    it(`the loop ends with the tool's result${stream ? ' (streamed)' : ''}; every upstream request holds the whole conversation`, async () => {
      const before = stack.sim.requests.length;
      const final = await anthropic.beta.messages.toolRunner({
        model: 'sim',
        max_tokens: 500,
        messages: [{ role: 'user', content: 'What is the weather in Rome?' }],
        tools,
        ...(stream ? { stream: true as const } : {}),
      });
      const text = final.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
      expect(text).toContain('Sunny and 23 degrees in Rome');
      const sent = stack.sim.requests
        .slice(before)
        .map((r) => JSON.parse(r.rawBody) as { messages: Array<{ role: string; content: unknown }> });
      for (const body of sent)
        expect(body.messages[0]).toMatchObject({ content: 'What is the weather in Rome?' });
      expect(JSON.stringify(sent.at(-1))).not.toContain('matches no earlier tool call');
    });
  }

  it('a continue is thread_not_found in Anthropic shape (the SDK raises NotFoundError with the code)', async () => {
    const err = await anthropic.beta.messages
      .create({
        model: 'sim',
        max_tokens: 50,
        messages: [{ role: 'user', content: 'hi' }],
        thread: { type: 'continue', previous_message_id: 'msg_1' },
      } as never)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.NotFoundError);
    expect((err as { error: unknown }).error).toMatchObject({
      type: 'error',
      error: { type: 'not_found_error', details: { error_code: 'thread_not_found' } },
    });
  });
});
