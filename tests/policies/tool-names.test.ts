import { describe, expect, it } from 'vitest';
import { toolNameAlias } from '../../policies/kit/tool-name-alias.js';
import { refusesToolNames, toolNamesPolicy } from '../../policies/tool-names/index.js';
import type { ChatCompletion, ChatCompletionRequest } from '../../protocol/openai.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';
import { ctxWith } from './helpers.js';

/** Claude Code's MCP tool name as a Mistral backend refused it in the field (75 characters). */
const MCP = 'mcp__plugin_aws-startup-advisor_awsknowledge__aws___get_regional_availability';
const fn = (name: string) => ({
  type: 'function' as const,
  function: { name, parameters: { type: 'object' } },
});
const req = (names: string[] = [MCP, 'Read', 'a.b']): ChatCompletionRequest => ({
  model: 'm',
  messages: [
    { role: 'user', content: 'hi' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'c1', type: 'function', function: { name: MCP, arguments: '{}' } }],
    },
    { role: 'tool', tool_call_id: 'c1', name: MCP, content: 'ok' },
    { role: 'user', content: 'again' },
  ],
  tools: names.map(fn),
  tool_choice: { type: 'function', function: { name: MCP } },
});
const refused = (fact = 'tool-names') => ({
  ...ctxWith({}, {}),
  refused: { now: new Set<string>(), remembered: new Set([fact]) },
});
/** mistral_common's words (mistral_common/protocol/instruct/validator.py). */
const refusal = (name: string) => ({
  object: 'error',
  message: `Function name was ${name} but must be a-z, A-Z, 0-9, or contain underscores and dashes, with a maximum length of 64.`,
  type: 'BadRequestError',
  code: 400,
});

describe('tool-names', () => {
  it('an alias is portable, at most 64 characters, the same every time, and distinct per name', () => {
    for (const n of [MCP, 'a.b', 'a:b', '', 'x'.repeat(5000), 'naïve']) {
      const a = toolNameAlias(n);
      expect(a).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
      expect(toolNameAlias(n)).toBe(a);
    }
    expect(toolNameAlias('Read')).toBe('Read');
    expect(toolNameAlias('a.b')).not.toBe(toolNameAlias('a:b'));
  });

  it('once refused, every unportable name goes under its alias: tools, history calls, tool names, tool_choice', () => {
    const r = req();
    const plain = toolNamesPolicy.onRequest!(r, ctxWith({}, {}), r);
    expect(plain.action === 'continue' && plain.request).toBe(r);
    const d = toolNamesPolicy.onRequest!(r, refused() as never, r);
    if (d.action !== 'continue') throw new Error('continue expected');
    const alias = toolNameAlias(MCP);
    const sent = d.request;
    expect(sent.tools!.map((t) => t.function.name)).toEqual([alias, 'Read', toolNameAlias('a.b')]);
    expect(sent.messages[1]!.tool_calls![0]!.function.name).toBe(alias);
    expect(sent.messages[2]!.name).toBe(alias);
    expect(sent.tool_choice).toEqual({ type: 'function', function: { name: alias } });
    // messages without a name to change are the client's objects
    expect(sent.messages[0]).toBe(r.messages[0]);
    expect(sent.messages[3]).toBe(r.messages[3]);
    expect(d.effects).toEqual([{ policy: 'tool-names', kind: 'tool-names-aliased', count: 2 }]);
    // only portable names: untouched
    const ok = req(['Read']);
    ok.messages = [{ role: 'user', content: 'hi' }];
    delete ok.tool_choice;
    const out = toolNamesPolicy.onRequest!(ok, refused() as never, ok);
    expect(out.action === 'continue' && out.request).toBe(ok);

    // the answer's calls come back under the client's names
    const answer: ChatCompletion = {
      id: 'x',
      object: 'chat.completion',
      created: 0,
      model: 'm',
      choices: [
        {
          index: 0,
          finish_reason: 'tool_calls',
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'a', type: 'function', function: { name: alias, arguments: '{}' } },
              { id: 'b', type: 'function', function: { name: 'Read', arguments: '{}' } },
            ],
          },
        },
      ],
    };
    const back = toolNamesPolicy.onResponse!(answer, refused() as never, d.memo, sent, r);
    if (back.action !== 'continue') throw new Error('continue expected');
    expect(back.response.choices[0]!.message.tool_calls!.map((c) => c.function.name)).toEqual([MCP, 'Read']);
  });

  it("reads mistral_common's refusal, only of a request that carries an unportable name", () => {
    const ctx = ctxWith({}, {});
    const p = toolNamesPolicy.refusal!;
    expect(p.refused(400, refusal(MCP), req(), ctx)).toBe(true);
    expect(p.refused(500, refusal(MCP), req(), ctx)).toBe(true);
    const portable = req(['Read']);
    portable.messages = [{ role: 'user', content: 'hi' }];
    delete portable.tool_choice;
    expect(p.refused(400, refusal('Read'), portable, ctx)).toBe(false);
    expect(p.refused(400, { message: 'Invalid tool schema' }, req(), ctx)).toBe(false);
    expect(p.refused(429, refusal(MCP), req(), ctx)).toBe(false);
  });

  it('costs in proportion to the request and the error, x1 vs x4', () => {
    const make = (size: number) => {
      const names = Array.from({ length: size / 256 }, (_, i) => `mcp__${i}__${'n'.repeat(240)}`);
      const r = req(names);
      return { request: r, body: refusal('y'.repeat(size)) };
    };
    const run = ({ request, body }: ReturnType<typeof make>) => [
      toolNamesPolicy.onRequest!(request, refused() as never, request),
      refusesToolNames(400, body, request),
    ];
    const s = measureScaling(make, run, { from: 4096, max: 1 << 22 });
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});
