/**
 * recall19: reasoning that is all one whole-output call, with no content, comes back as the call
 * through the real server on loopback. GLM-4.7 in OpenCode (anomalyco/opencode#6883) put its
 * whole turn in reasoning_content as `<invoke name="bash">` with child elements and sent no
 * content; the client got reasoning and no tool call. Chat, whole and streamed one character a
 * chunk; the reasoning stays reasoning, byte for byte. With bash undeclared: no call.
 */
import { describe, expect, it } from 'vitest';
import { chunkEvent, proxyInFrontOf } from '../support/harness.js';

const INVOKE =
  '<invoke name="bash">\n  <command>bun test</command>\n  <description>Run tests</description>\n</invoke>';
const pair = proxyInFrontOf((req, res) => {
  const streamed = (JSON.parse(req.body.toString()) as { stream?: boolean }).stream === true;
  res.writeHead(200, { 'content-type': streamed ? 'text/event-stream' : 'application/json' });
  if (!streamed) {
    const message = { role: 'assistant', content: null, reasoning_content: INVOKE };
    const choices = [{ index: 0, message, finish_reason: 'stop' }];
    return void res.end(
      JSON.stringify({ id: 'c1', object: 'chat.completion', created: 1, model: 'm1', choices }),
    );
  }
  const events = [...INVOKE].map((ch, i) =>
    chunkEvent(i === 0 ? { role: 'assistant', reasoning_content: ch } : { reasoning_content: ch }),
  );
  res.end(`${events.join('')}${chunkEvent({}, 'stop')}data: [DONE]\n\n`);
});

const tool = (name: string) => ({
  type: 'function',
  function: {
    name,
    parameters: {
      type: 'object',
      properties: {
        command: { type: 'string' },
        description: { type: 'string' },
        timeout: { type: 'number' },
      },
      required: ['command', 'description'],
    },
  },
});

async function ask(stream: boolean, name: string) {
  const r = await fetch(`${pair.proxy.origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'm1',
      stream,
      messages: [{ role: 'user', content: 'run the tests' }],
      tools: [tool(name)],
    }),
  });
  expect(r.status).toBe(200);
  if (!stream) {
    const j = (await r.json()) as {
      choices: {
        message: {
          content: string | null;
          reasoning_content?: string;
          tool_calls?: { function: { name: string; arguments: string } }[];
        };
      }[];
    };
    const m = j.choices[0]!.message;
    return {
      content: m.content ?? '',
      reasoning: m.reasoning_content ?? '',
      calls: (m.tool_calls ?? []).map((t) => [t.function.name, JSON.parse(t.function.arguments)]),
    };
  }
  let content = '';
  let reasoning = '';
  const calls: [string, string][] = [];
  for (const line of (await r.text()).split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    const c = JSON.parse(line.slice(6)) as {
      choices: {
        delta: {
          content?: string | null;
          reasoning_content?: string;
          tool_calls?: { index: number; function?: { name?: string; arguments?: string } }[];
        };
      }[];
    };
    for (const ch of c.choices) {
      content += ch.delta.content ?? '';
      reasoning += ch.delta.reasoning_content ?? '';
      for (const t of ch.delta.tool_calls ?? []) {
        calls[t.index] ??= ['', ''];
        calls[t.index]![0] += t.function?.name ?? '';
        calls[t.index]![1] += t.function?.arguments ?? '';
      }
    }
  }
  return { content, reasoning, calls: calls.map(([n, a]) => [n, JSON.parse(a)]) };
}

describe('reasoning that is all one whole-output call, no content', () => {
  for (const stream of [false, true])
    it(`comes back as the call, the reasoning kept (${stream ? 'streamed' : 'whole'})`, async () => {
      expect(await ask(stream, 'bash')).toEqual({
        content: '',
        reasoning: INVOKE,
        calls: [['bash', { command: 'bun test', description: 'Run tests' }]],
      });
    });

  it('with bash undeclared: reasoning, no call', async () => {
    for (const stream of [false, true])
      expect(await ask(stream, 'shell')).toEqual({ content: '', reasoning: INVOKE, calls: [] });
  });
});
