/**
 * Issue 30, a bare `</think>` before a call, end to end: with `startsInReasoning: 'maybe'` in
 * the config, the real server in front of the simulator returns the text before the close as
 * reasoning, the call as a tool call and no content, streamed and not; without it the reasoning
 * stays in content (as before), and an answer with no close is content either way.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type Stack, startStack, weatherTool } from './stack.js';

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

const tools = [weatherTool];
const user = [{ role: 'user' as const, content: 'Weather in Paris?' }];
const RAW =
  'The user wants the weather.\n</think>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
const scenario = (raw: string) => ({ headers: { 'x-sim-scenario': JSON.stringify({ raw }) } });

type Msg = {
  content?: string | null;
  reasoning_content?: string | null;
  tool_calls?: Array<{ function: { name: string } }>;
};

async function ask(s: Stack, raw: string) {
  const res = await s.client.chat.completions.create({ model: 'sim', messages: user, tools }, scenario(raw));
  const msg = res.choices[0]!.message as unknown as Msg;
  const stream = await s.client.chat.completions.create(
    { model: 'sim', messages: user, tools, stream: true },
    scenario(raw),
  );
  let content = '';
  let reasoning = '';
  const names: string[] = [];
  for await (const chunk of stream) {
    for (const ch of chunk.choices) {
      const d = ch.delta as typeof ch.delta & { reasoning_content?: string | null };
      content += d.content ?? '';
      reasoning += d.reasoning_content ?? '';
      for (const t of d.tool_calls ?? []) if (t.function?.name) names.push(t.function.name);
    }
  }
  return {
    whole: {
      content: msg.content ?? '',
      reasoning: msg.reasoning_content ?? '',
      names: (msg.tool_calls ?? []).map((t) => t.function.name),
    },
    streamed: { content, reasoning, names },
  };
}

describe("startsInReasoning 'maybe' through the server", () => {
  it('a bare </think> before a call: reasoning, the call, no content; streamed equals whole', async () => {
    stack = await startStack({
      sim: { personality: 'llama-server' },
      file: { defaults: { startsInReasoning: 'maybe' } },
    });
    const r = await ask(stack, RAW);
    expect(r.whole).toEqual({
      content: '',
      reasoning: 'The user wants the weather.\n',
      names: ['get_weather'],
    });
    expect(r.streamed).toEqual(r.whole);
    const plain = await ask(stack, 'Paris is sunny today.');
    expect(plain.whole).toEqual({ content: 'Paris is sunny today.', reasoning: '', names: [] });
    expect(plain.streamed).toEqual(plain.whole);
  });

  it('without it the reasoning stays in content, as before', async () => {
    stack = await startStack({ sim: { personality: 'llama-server' } });
    const r = await ask(stack, RAW);
    expect(r.whole).toEqual({
      content: 'The user wants the weather.\n</think>',
      reasoning: '',
      names: ['get_weather'],
    });
  });
});

describe('startsInReasoning config values', () => {
  it("true, false, 'maybe' or 'auto'; anything else is a config error", async () => {
    const { loadConfig } = await import('../../server/config.js');
    const url = { TOOLPROOF_UPSTREAM_URL: 'http://127.0.0.1:9/v1' };
    const at = (v: unknown) =>
      loadConfig(url, { defaults: { startsInReasoning: v } } as Parameters<typeof loadConfig>[1]).defaults
        .startsInReasoning;
    expect(at('maybe')).toBe('maybe');
    expect(at(true)).toBe(true);
    expect(at('auto')).toBe('auto');
    expect(() => at('perhaps')).toThrow(/startsInReasoning/);
  });
});

describe("startsInReasoning 'auto': llama-server's /props template, once at start-up", () => {
  // the generation-prompt branches of these models' chat templates, abridged to that branch
  const QWQ = {
    chat_template:
      "{%- for message in messages %}{{ message.content }}{%- endfor %}\n{%- if add_generation_prompt %}\n    {{- '<|im_start|>assistant\\n<think>\\n' }}\n{%- endif %}\n",
  };
  const DEEPSEEK_V31 = {
    chat_template:
      "{% if add_generation_prompt and not ns.is_tool %}{{'<｜Assistant｜>'}}{%- if not thinking %}{{'</think>'}}{%- else %}{{'<think>'}}{%- endif %}{% endif %}",
  };
  const QWEN3 = {
    chat_template:
      "{%- if message.reasoning_content %}{{ '<think>\\n' + message.reasoning_content + '\\n</think>' }}{%- endif %}\n{%- if add_generation_prompt %}\n    {{- '<|im_start|>assistant\\n' }}\n    {%- if enable_thinking is defined and enable_thinking is false %}\n        {{- '<think>\\n\\n</think>\\n\\n' }}\n    {%- endif %}\n{%- endif %}",
  };
  const PLAIN = {
    chat_template:
      "{% for m in messages %}{{ m.content }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
  };

  it('templateOpensReasoning: unconditional open true, a switch of its own maybe, closed or none false', async () => {
    const { templateOpensReasoning } = await import('../../protocol/template-kwargs.js');
    expect(templateOpensReasoning(QWQ)).toBe(true);
    expect(templateOpensReasoning(DEEPSEEK_V31)).toBe('maybe');
    expect(templateOpensReasoning(QWEN3)).toBe(false);
    expect(templateOpensReasoning(PLAIN)).toBe(false);
    expect(templateOpensReasoning(undefined)).toBe(false);
    expect(templateOpensReasoning({ chat_template: '<think>' })).toBe(false);
  });

  it('resolves auto per upstream; false when the upstream does not answer; reads it once per origin', async () => {
    const { loadConfig } = await import('../../server/config.js');
    const { resolvePreserveThinking } = await import('../../server/template-probe.js');
    const config = loadConfig(
      { TOOLPROOF_UPSTREAM_URL: 'http://qwq:8080/v1' },
      {
        defaults: { startsInReasoning: 'auto', preserveThinking: 'auto' },
        models: {
          v31: { upstream: 'http://v31:8080/v1' },
          qwen3: { upstream: 'http://qwen3:8080/v1' },
          down: { upstream: 'http://down:8080/v1' },
          fixed: { upstream: 'http://qwq:8080/v1', startsInReasoning: false },
        },
      },
    );
    const asked: string[] = [];
    const byOrigin: Record<string, unknown> = {
      'http://qwq:8080': QWQ,
      'http://v31:8080': DEEPSEEK_V31,
      'http://qwen3:8080': QWEN3,
    };
    const resolved = await resolvePreserveThinking(config, async (url) => {
      const origin = url.replace(/\/props$/, '');
      asked.push(origin);
      return byOrigin[origin];
    });
    expect(resolved.defaults.startsInReasoning).toBe(true);
    expect(resolved.models.v31!.settings.startsInReasoning).toBe('maybe');
    expect(resolved.models.qwen3!.settings.startsInReasoning).toBe(false);
    expect(resolved.models.down!.settings.startsInReasoning).toBe(false);
    expect(resolved.models.fixed!.settings.startsInReasoning).toBe(false);
    expect(resolved.defaults.preserveThinking).toBe(false);
    expect(asked.sort()).toEqual([
      'http://down:8080',
      'http://qwen3:8080',
      'http://qwq:8080',
      'http://v31:8080',
    ]);
  });

  it("an 'auto' left unresolved reads as false: the bare close stays content", async () => {
    stack = await startStack({
      sim: { personality: 'llama-server' },
      file: { defaults: { startsInReasoning: 'auto' } },
    });
    const r = await ask(stack, RAW);
    expect(r.whole.content).toBe('The user wants the weather.\n</think>');
  });
});
