/**
 * nearmiss19: a Llama near miss inside Qwen3-Coder's wrapper,
 * `<tool_call>\n<function=t {"p": 7}</function>\n</tool_call>` (the `>` after the name missing,
 * JSON arguments), gets one reading on every path: the call t({"p":7}), the wrapper with it, no
 * content left, no re-ask. Before, the broken wrapper was judged an unrecovered leak (corrective
 * retry re-asked), the bare call inside it was read all the same, and the client got the
 * wrapper's opening tag as content beside the call. Through the real server on loopback, on all
 * three front doors, streamed (one character a chunk) and not.
 * Source of the text: the lead's repro for this task (tests/zz/nearmiss.test.ts, removed).
 */
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf, textCharByChar } from '../support/harness.js';

const TEXT = '<tool_call>\n<function=t {"p": 7}</function>\n</tool_call>';
const pair = proxyInFrontOf(textCharByChar(TEXT));
const schema = { type: 'object', properties: { p: { type: 'number' } } };

async function post(path: string, body: object): Promise<Response> {
  const r = await fetch(`${pair.proxy.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  });
  expect(r.status).toBe(200);
  return r;
}

/** The data lines of an SSE body, parsed. */
async function events(r: Response): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  for (const line of (await r.text()).split('\n'))
    if (line.startsWith('data: ') && line !== 'data: [DONE]') out.push(JSON.parse(line.slice(6)));
  return out;
}

const upstreamCalls = () => pair.upstream.requests.length;

describe('a near miss inside <tool_call>: one reading on every path', () => {
  const chat = (stream: boolean) => ({
    model: 'm1',
    stream,
    messages: [{ role: 'user', content: 'hi' }],
    tool_choice: 'auto',
    tools: [{ type: 'function', function: { name: 't', parameters: schema } }],
  });

  it('chat, not streamed: the call, no content, no re-ask', async () => {
    const before = upstreamCalls();
    const j = (await (await post('/v1/chat/completions', chat(false))).json()) as {
      choices: {
        message: { content: string | null; tool_calls?: { function: { name: string; arguments: string } }[] };
      }[];
    };
    const m = j.choices[0]!.message;
    expect(m.content ?? '').toBe('');
    expect(m.tool_calls?.map((c) => [c.function.name, JSON.parse(c.function.arguments)])).toEqual([
      ['t', { p: 7 }],
    ]);
    expect(upstreamCalls() - before).toBe(1);
  });

  it('chat, streamed a character a chunk: the same', async () => {
    const before = upstreamCalls();
    const evs = await events(await post('/v1/chat/completions', chat(true)));
    let content = '';
    const calls: Record<number, { name: string; args: string }> = {};
    for (const e of evs) {
      const d = (e as { choices?: { delta?: Record<string, unknown> }[] }).choices?.[0]?.delta;
      if (!d) continue;
      if (typeof d['content'] === 'string') content += d['content'];
      for (const c of (d['tool_calls'] as {
        index: number;
        function?: { name?: string; arguments?: string };
      }[]) ?? []) {
        const x = (calls[c.index] ??= { name: '', args: '' });
        x.name += c.function?.name ?? '';
        x.args += c.function?.arguments ?? '';
      }
    }
    expect(content).toBe('');
    expect(Object.values(calls).map((c) => [c.name, JSON.parse(c.args)])).toEqual([['t', { p: 7 }]]);
    expect(upstreamCalls() - before).toBe(1);
  });

  it('Responses: one function_call item, no message text', async () => {
    const before = upstreamCalls();
    const j = (await (
      await post('/v1/responses', {
        model: 'm1',
        input: 'hi',
        tools: [{ type: 'function', name: 't', parameters: schema }],
      })
    ).json()) as {
      output: { type: string; name?: string; arguments?: string; content?: { text?: string }[] }[];
    };
    expect(
      j.output.filter((o) => o.type === 'function_call').map((o) => [o.name, JSON.parse(o.arguments!)]),
    ).toEqual([['t', { p: 7 }]]);
    const text = j.output.flatMap((o) =>
      o.type === 'message' ? (o.content ?? []).map((c) => c.text ?? '') : [],
    );
    expect(text.join('')).toBe('');
    expect(upstreamCalls() - before).toBe(1);
  });

  it('Responses, streamed: the completed response holds the one call, no text', async () => {
    const before = upstreamCalls();
    const evs = await events(
      await post('/v1/responses', {
        model: 'm1',
        input: 'hi',
        stream: true,
        tools: [{ type: 'function', name: 't', parameters: schema }],
      }),
    );
    const done = evs.find((e) => e['type'] === 'response.completed') as {
      response: {
        output: { type: string; name?: string; arguments?: string; content?: { text?: string }[] }[];
      };
    };
    const out = done.response.output;
    expect(
      out.filter((o) => o.type === 'function_call').map((o) => [o.name, JSON.parse(o.arguments!)]),
    ).toEqual([['t', { p: 7 }]]);
    expect(
      out.flatMap((o) => (o.type === 'message' ? (o.content ?? []).map((c) => c.text ?? '') : [])).join(''),
    ).toBe('');
    const deltas = evs.filter((e) => e['type'] === 'response.output_text.delta').map((e) => e['delta']);
    expect(deltas.join('')).toBe('');
    expect(upstreamCalls() - before).toBe(1);
  });

  it('Anthropic Messages, streamed: one tool_use block, no text', async () => {
    const before = upstreamCalls();
    const evs = await events(
      await post('/v1/messages', {
        model: 'm1',
        max_tokens: 100,
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
        tools: [{ name: 't', input_schema: schema }],
      }),
    );
    const blocks = evs
      .filter((e) => e['type'] === 'content_block_start')
      .map((e) => (e['content_block'] as { type: string; name?: string }).type);
    expect(blocks).toEqual(['tool_use']);
    let text = '';
    let json = '';
    for (const e of evs) {
      const d = e['delta'] as { type?: string; text?: string; partial_json?: string } | undefined;
      if (e['type'] !== 'content_block_delta' || !d) continue;
      text += d.text ?? '';
      json += d.partial_json ?? '';
    }
    expect(text).toBe('');
    expect(JSON.parse(json)).toEqual({ p: 7 });
    expect(upstreamCalls() - before).toBe(1);
  });

  it('Anthropic Messages: one tool_use block, no text block', async () => {
    const before = upstreamCalls();
    const j = (await (
      await post('/v1/messages', {
        model: 'm1',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'hi' }],
        tools: [{ name: 't', input_schema: schema }],
      })
    ).json()) as { content: { type: string; name?: string; input?: unknown; text?: string }[] };
    expect(j.content.filter((b) => b.type === 'tool_use').map((b) => [b.name, b.input])).toEqual([
      ['t', { p: 7 }],
    ]);
    expect(
      j.content
        .filter((b) => b.type === 'text')
        .map((b) => b.text)
        .join(''),
    ).toBe('');
    expect(upstreamCalls() - before).toBe(1);
  });
});
