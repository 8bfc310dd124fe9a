/**
 * Hardening (issue 18, item 10): an upstream whose tool call carries `arguments` that is not a
 * string (`42`, `false`), on every front door, streamed and not, still bad after the corrective
 * retry. Before: the non-streamed Messages answer was a 500 (`args.trim is not a function`), chat
 * relayed the bare number non-streamed but dropped it (`""`) streamed, and only the non-streamed
 * doors retried. Now the value is spelled out as its JSON text on both sides of
 * normalize-tool-calls, judged and retried like any other bad arguments, and answered the same way
 * streamed and not: the documented recovery for arguments still invalid after the retries.
 */
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { answerWithCall, proxyInFrontOf, type Recorded } from '../support/harness.js';

let value: unknown = 42;

function answer(req: Recorded, res: ServerResponse): void {
  const call = { id: 'call_1', type: 'function', function: { name: 'get', arguments: value } };
  answerWithCall(req, res, call);
}

const pair = proxyInFrontOf(answer);

const schema = { type: 'object', properties: { a: { type: 'number' } } };
const doors = {
  chat: {
    path: '/v1/chat/completions',
    body: {
      model: 'm1',
      messages: [{ role: 'user', content: 'x' }],
      tools: [{ type: 'function', function: { name: 'get', parameters: schema } }],
    },
  },
  responses: {
    path: '/v1/responses',
    body: { model: 'm1', input: 'x', tools: [{ type: 'function', name: 'get', parameters: schema }] },
  },
  messages: {
    path: '/v1/messages',
    body: {
      model: 'm1',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'x' }],
      tools: [{ name: 'get', input_schema: schema }],
    },
  },
} as const;
type Door = keyof typeof doors;

function events(text: string): Array<Record<string, unknown>> {
  return text
    .split('\n\n')
    .map((e) => /^data: (.*)$/m.exec(e)?.[1])
    .filter((d): d is string => d !== undefined && d !== '[DONE]')
    .map((d) => JSON.parse(d) as Record<string, unknown>);
}

/** The one tool call the client got, as that API spells its arguments. */
function callOf(door: Door, stream: boolean, text: string): unknown {
  if (!stream) {
    const body = JSON.parse(text) as {
      choices: Array<{ message: { tool_calls: Array<{ function: { arguments: unknown } }> } }>;
      output: Array<{ arguments: unknown }>;
      content: Array<{ input: unknown }>;
    };
    if (door === 'chat') return body.choices[0]!.message.tool_calls[0]!.function.arguments;
    if (door === 'responses') return body.output[0]!.arguments;
    return body.content[0]!.input;
  }
  const evs = events(text);
  if (door === 'chat') {
    let args = '';
    for (const e of evs)
      for (const c of (e.choices as Array<{
        delta?: { tool_calls?: Array<{ function?: { arguments?: unknown } }> };
      }>) ?? [])
        for (const tc of c.delta?.tool_calls ?? []) {
          expect(typeof tc.function?.arguments === 'string' || tc.function?.arguments === undefined).toBe(
            true,
          );
          args += (tc.function?.arguments as string | undefined) ?? '';
        }
    return args;
  }
  if (door === 'responses') {
    const done = evs.find((e) => e.type === 'response.completed') as {
      response: { output: Array<{ arguments: string }> };
    };
    return done.response.output[0]!.arguments;
  }
  let json = '';
  for (const e of evs)
    if (e.type === 'content_block_delta') json += (e.delta as { partial_json: string }).partial_json;
  // No delta: the input is content_block_start's `{}` (as the SDKs read it).
  return json === '' ? {} : JSON.parse(json);
}

/** `door`'s request, streamed or not, answered 200: the call's arguments as callOf reads them. */
async function ask(door: Door, stream: boolean): Promise<unknown> {
  const { path, body } = doors[door];
  const res = await fetch(`${pair.proxy.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...body, stream }),
  });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return callOf(door, stream, text);
}

describe.each([42, false])('upstream arguments %s (not a string), still bad after the retry', (v) => {
  it.each(Object.keys(doors).flatMap((d) => [[d, false] as const, [d, true] as const]))(
    '%s, stream %s: the JSON text is judged, retried once and answered as invalid arguments',
    async (door, stream) => {
      value = v;
      const before = pair.upstream.requests.length;
      const got = await ask(door as Door, stream);
      // The corrective retry ran, streamed as well as not.
      expect(pair.upstream.requests.length - before).toBe(2);
      expect(got).toEqual(door === 'messages' ? { _raw: JSON.stringify(v) } : JSON.stringify(v));
    },
  );
});

describe.each([null, { a: 1 }])('upstream arguments %j', (v) => {
  it.each(Object.keys(doors))('%s: answered the same streamed and not', async (door) => {
    value = v;
    const got: unknown[] = [];
    for (const stream of [false, true]) got.push(await ask(door as Door, stream));
    expect(got[1]).toEqual(got[0]);
    if (v !== null) expect(got[0]).toEqual(door === 'messages' ? v : JSON.stringify(v));
  });
});
