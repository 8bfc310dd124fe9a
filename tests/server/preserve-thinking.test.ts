import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../server/config.js';
import { templateHasThinkingSwitch, withPreserveThinking } from '../../protocol/template-kwargs.js';
import { resolvePreserveThinking } from '../../server/template-probe.js';
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

describe("preserveThinking 'auto': llama-server's /props, once at start-up", () => {
  const withSwitch = {
    chat_template: '{%- if clear_thinking is defined and not clear_thinking %}{{ reasoning }}{% endif %}',
  };
  const without = { chat_template: '{% for m in messages %}{{ m.content }}{% endfor %}' };

  it('templateHasThinkingSwitch reads the template text', () => {
    expect(templateHasThinkingSwitch(withSwitch)).toBe(true);
    expect(templateHasThinkingSwitch({ chat_template: '{% if preserve_thinking %}x{% endif %}' })).toBe(true);
    expect(templateHasThinkingSwitch(without)).toBe(false);
    expect(templateHasThinkingSwitch(undefined)).toBe(false);
  });

  it('resolves auto per upstream (asked once per origin); false when the upstream does not answer', async () => {
    const config = loadConfig(
      { TOOLPROOF_UPSTREAM_URL: 'http://glm:8080/v1' },
      {
        defaults: { preserveThinking: 'auto' },
        models: {
          plain: { upstream: 'http://plain:8080/v1' },
          down: { upstream: 'http://down:8080/v1' },
          fixed: { upstream: 'http://glm:8080/v1', preserveThinking: false },
        },
      },
    );
    const asked: string[] = [];
    const resolved = await resolvePreserveThinking(config, async (url) => {
      asked.push(url);
      if (url === 'http://glm:8080/props') return withSwitch;
      if (url === 'http://plain:8080/props') return without;
      return undefined;
    });
    expect(resolved.defaults.preserveThinking).toBe(true);
    expect(resolved.models.plain!.settings.preserveThinking).toBe(false);
    expect(resolved.models.down!.settings.preserveThinking).toBe(false);
    expect(resolved.models.fixed!.settings.preserveThinking).toBe(false);
    expect(asked.sort()).toEqual([
      'http://down:8080/props',
      'http://glm:8080/props',
      'http://plain:8080/props',
    ]);
    expect(Object.isFrozen(resolved)).toBe(true);
    // Nothing set to auto: the same config object.
    const plainConfig = loadConfig({ TOOLPROOF_UPSTREAM_URL: 'http://x:1/v1' });
    expect(await resolvePreserveThinking(plainConfig, async () => withSwitch)).toBe(plainConfig);
  });
});
