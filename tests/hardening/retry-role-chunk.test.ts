/**
 * Found by the prefix-contract property (tests/e2e/prefix-contract.test.ts): a streamed retry
 * left out its opening role chunk even when the failed attempt's had been held back with the
 * rest of it, so the client's stream never said `role: "assistant"` (the openai SDK's stream
 * helper throws "missing role for choice 0").
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startStack, type Stack } from '../server/stack.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({
    sim: {
      personality: 'llama-server',
      scenario: [
        { call: [{ name: 'undeclared', arguments: { x: 1 } }] },
        { call: [{ name: 'f', arguments: { a: 1 } }] },
      ],
    },
  });
});
afterAll(() => stack.close());

it('the stream of a retried turn opens with the role chunk, once', async () => {
  const res = await fetch(`${stack.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'sim',
      stream: true,
      messages: [{ role: 'user', content: 'x' }],
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
    }),
  });
  const events = (await res.text())
    .split('\n')
    .filter((l) => l.startsWith('data: {'))
    .map((l) => JSON.parse(l.slice(6)) as { choices: Array<{ delta?: { role?: string } }> });
  expect(stack.sim.requests).toHaveLength(2);
  const roles = events.flatMap((e) => e.choices.map((c) => c.delta?.role).filter((r) => r !== undefined));
  expect(roles).toEqual(['assistant']);
  expect(events[0]!.choices[0]!.delta?.role).toBe('assistant');
  const completion = await stack.client.chat.completions
    .stream({
      model: 'sim',
      messages: [{ role: 'user', content: 'x' }],
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
    })
    .finalChatCompletion();
  expect(completion.choices[0]!.message.tool_calls?.[0]).toMatchObject({ function: { name: 'f' } });
});
