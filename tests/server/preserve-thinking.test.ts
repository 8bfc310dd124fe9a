import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../server/config.js';
import { withPreserveThinking } from '../../protocol/template-kwargs.js';
import { startStack, type Stack } from './stack.js';

describe('preserveThinking: chat_template_kwargs that keep past reasoning', () => {
  let stack: Stack | undefined;
  afterEach(async () => {
    await stack?.close();
    stack = undefined;
  });

  const kwargsSent = (s: Stack) =>
    s.sim.requests.map((r) => (r.body as { chat_template_kwargs?: unknown }).chat_template_kwargs);

  it('on: every front door sends both switches; a key the client set itself wins', async () => {
    stack = await startStack({ sim: { scenario: 'prose' }, file: { defaults: { preserveThinking: true } } });
    await stack.client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    await stack.client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      chat_template_kwargs: { clear_thinking: true, enable_thinking: false },
    } as never);
    const res = await fetch(`${stack.origin}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({
        model: 'm',
        max_tokens: 100,
        thinking: { type: 'enabled', budget_tokens: 1024 },
        messages: [{ role: 'user', content: 'hi' }],
      }),
    });
    expect(res.status).toBe(200);
    expect(kwargsSent(stack)).toEqual([
      { preserve_thinking: true, clear_thinking: false },
      { clear_thinking: true, enable_thinking: false, preserve_thinking: true },
      { enable_thinking: true, preserve_thinking: true, clear_thinking: false },
    ]);
  });

  it('off by default: nothing added, the client bytes go upstream as they are', async () => {
    stack = await startStack({ sim: { scenario: 'prose' } });
    await stack.client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    expect(kwargsSent(stack)).toEqual([undefined]);
    expect(loadConfig({}, {}).defaults.preserveThinking).toBe(false);
    expect(() => loadConfig({}, { defaults: { preserveThinking: 'yes' } })).toThrow(/preserveThinking/);
  });

  it('withPreserveThinking returns the same request when the client set both keys', () => {
    const req = {
      model: 'm',
      messages: [],
      chat_template_kwargs: { preserve_thinking: false, clear_thinking: true },
    };
    expect(withPreserveThinking(req)).toBe(req);
  });
});
