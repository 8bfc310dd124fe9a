/**
 * vLLM with its structured-output backend named xgrammar refuses a schema it must enforce (tool
 * choice "required" or named, a json_schema answer) when the schema holds a keyword xgrammar
 * cannot compile: Pydantic's `set[str]` (uniqueItems), `constr(pattern=..., max_length=...)`.
 * Before: a forced request fell back to tool_choice "auto" (remembered for the model: forced tool
 * use gone for every client for an hour), and a client's own "required", Anthropic `any` or
 * schema answer got the 400, again on every turn. Now the request goes again with those keywords
 * left out (toolproof still checks the arguments against the whole schema), the model is
 * remembered so later turns send the stripped schemas from the start, and "required" holds.
 * Through the real server against the simulator, with the real SDKs, streamed and not.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../server/stack.js';

const TAG_PARAMS = {
  type: 'object',
  properties: {
    path: { type: 'string', pattern: '^[a-z/.]+$', maxLength: 200 },
    tags: { type: 'array', items: { type: 'string' }, uniqueItems: true },
  },
  required: ['path'],
};
const tool = { type: 'function' as const, function: { name: 'tag_file', parameters: TAG_PARAMS } };

interface Sent {
  tool_choice?: unknown;
  tools?: Array<{ function: { name: string; parameters: unknown } }>;
  response_format?: { json_schema: { schema: unknown } };
}
function upstreamBodies(stack: Stack): Sent[] {
  return stack.sim.requests.filter((r) => r.path.endsWith('/chat/completions')).map((r) => r.body as Sent);
}

describe('guided decoding (xgrammar) refuses a schema keyword', () => {
  let stack: Stack;
  let anthropic: Anthropic;
  beforeAll(async () => {
    stack = await startStack({
      sim: { personality: 'vllm', scenario: 'tools', guidedBackend: 'xgrammar' },
      served: ['sim', 'forced', 'required', 'answer', 'any', 'chat-format'],
    });
    anthropic = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0, timeout: 30_000 });
  });
  afterAll(() => stack.close());

  for (const stream of [false, true]) {
    const tag = stream ? ' (streamed)' : '';
    const model = (name: string) => `${name}${stream ? '-s' : ''}`;

    it(`chat${tag}: a forced turn keeps tool_choice "required"; the next turn goes straight`, async () => {
      const ask = async () => {
        stack.sim.reset();
        const params = {
          model: model('forced'),
          messages: [{ role: 'user' as const, content: 'Tag src/a.ts as reviewed.' }],
          tools: [tool],
        };
        const scenario = {
          'x-sim-scenario': JSON.stringify({ call: [{ name: 'tag_file', arguments: { path: 'src/a.ts' } }] }),
        };
        if (stream) {
          const s = await stack.client.chat.completions.create(
            { ...params, stream: true },
            { headers: scenario },
          );
          let called = false;
          for await (const c of s) called ||= (c.choices[0]?.delta.tool_calls?.length ?? 0) > 0;
          expect(called).toBe(true);
        } else {
          const c = await stack.client.chat.completions.create(params, { headers: scenario });
          expect(c.choices[0]?.message.tool_calls?.[0]?.type).toBe('function');
        }
        return upstreamBodies(stack);
      };
      const first = await ask();
      expect(first).toHaveLength(2);
      const last = first.at(-1)!;
      expect(last.tool_choice).toBe('required');
      const sentParams = JSON.stringify(
        last.tools!.find((t) => t.function.name === 'tag_file')!.function.parameters,
      );
      expect(sentParams).not.toContain('uniqueItems');
      expect(sentParams).not.toContain('maxLength');
      expect(sentParams).toContain('"pattern"');
      const next = await ask();
      expect(next).toHaveLength(1);
      expect(JSON.stringify(next[0]!.tools)).toBe(JSON.stringify(last.tools));
    });

    it(`chat${tag}: the client's own tool_choice "required" is answered, not a 400`, async () => {
      const params = {
        model: model('required'),
        messages: [{ role: 'user' as const, content: 'Tag src/a.ts.' }],
        tools: [tool],
        tool_choice: 'required' as const,
      };
      if (stream) {
        const s = await stack.client.chat.completions.create({ ...params, stream: true });
        for await (const _ of s) {
          // drained
        }
      } else {
        const c = await stack.client.chat.completions.create(params);
        expect(c.choices[0]?.message.tool_calls).toHaveLength(1);
      }
    });

    it(`chat${tag}: a json_schema answer without tools is answered, not a 400`, async () => {
      const params = {
        model: model('chat-format'),
        messages: [{ role: 'user' as const, content: 'Tag it.' }],
        response_format: {
          type: 'json_schema' as const,
          json_schema: { name: 'tagging', schema: TAG_PARAMS },
        },
      };
      let text = '';
      if (stream) {
        const s = await stack.client.chat.completions.create({ ...params, stream: true });
        for await (const c of s) text += c.choices[0]?.delta.content ?? '';
      } else text = (await stack.client.chat.completions.create(params)).choices[0]?.message.content ?? '';
      expect(typeof JSON.parse(text)).toBe('object');
      expect(JSON.stringify(upstreamBodies(stack).at(-1)!.response_format)).not.toContain('uniqueItems');
    });

    it(`responses${tag}: a schema answer beside tools keeps forced tool use`, async () => {
      stack.sim.reset();
      const params = {
        model: model('answer'),
        input: 'Tag src/a.ts, then give the tagging.',
        tools: [
          {
            type: 'function' as const,
            name: 'lookup',
            strict: false,
            parameters: { type: 'object', properties: {} },
          },
        ],
        text: {
          format: { type: 'json_schema' as const, name: 'tagging', schema: TAG_PARAMS, strict: false },
        },
      };
      const res = stream
        ? await stack.client.responses.stream(params).finalResponse()
        : await stack.client.responses.create(params);
      expect(res.status).toBe('completed');
      const last = upstreamBodies(stack).at(-1)!;
      expect(last.tool_choice).toBe('required');
      expect(JSON.stringify(last.tools)).not.toContain('uniqueItems');
    });

    it(`messages${tag}: tool_choice any is answered, not a 400`, async () => {
      const params = {
        model: model('any'),
        max_tokens: 200,
        messages: [{ role: 'user' as const, content: 'Tag src/a.ts.' }],
        tools: [{ name: 'tag_file', input_schema: TAG_PARAMS as Anthropic.Tool.InputSchema }],
        tool_choice: { type: 'any' as const },
      };
      const msg = stream
        ? await anthropic.messages.stream(params).finalMessage()
        : await anthropic.messages.create(params);
      expect(msg.content.some((b) => b.type === 'tool_use')).toBe(true);
    });
  }

  it('a refusal no keyword of the request explains is relayed as it is', async () => {
    stack.sim.reset();
    const scenario = JSON.stringify({
      error: {
        status: 400,
        message: 'The provided JSON schema contains features not supported by xgrammar.',
      },
    });
    const err = await stack.client.chat.completions
      .create(
        {
          model: 'sim',
          messages: [{ role: 'user', content: 'hi' }],
          tools: [
            { type: 'function', function: { name: 'plain', parameters: { type: 'object', properties: {} } } },
          ],
          tool_choice: 'required',
        },
        { headers: { 'x-sim-scenario': scenario } },
      )
      .catch((e: unknown) => e);
    expect((err as { status?: number }).status).toBe(400);
    // No keyword left out: guided-schema sends nothing again. The message is one of a grammar
    // refusing "required" (policies/tool-choice-fallback.ts): tried once more with "auto", as
    // for a forced "required", and the second refusal relayed.
    const bodies = upstreamBodies(stack);
    expect(bodies).toHaveLength(2);
    expect((bodies[1] as { tool_choice?: unknown }).tool_choice).toBe('auto');
  });
});
