/**
 * Hardening (issue 18, item 8): numbers and key order survive a rewritten request. Before, every
 * request toolproof rewrote (a forced tool added, a history repaired, a translated front door,
 * a renamed model) went upstream as JSON.stringify of JSON.parse: `seed: 12345678901234567890`
 * arrived as 12345678901234567000, a schema's `maximum: 1e400` as null, big-integer const/enum
 * values rounded, `{"2":..,"1":..}` sorted; history repair re-serialized every historical
 * `arguments` string; and the non-streamed Messages answer rounded the model's numbers in a
 * tool_use `input`. The fake upstream records the exact bytes it received.
 */
import type { ServerResponse } from 'node:http';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { numberText, print, src } from '../protocol/lossless-json.js';
import { answerWithCall, proxyInFrontOf, type Recorded } from '../support/harness.js';

/** Numbers JSON.stringify would spell otherwise, and keys JavaScript would reorder. */
const SCHEMA =
  '{"type":"object","properties":{"2":{"type":"integer","maximum":1e400},' +
  '"1":{"const":12345678901234567891,"enum":[98765432109876543210,-0,1.0,2.50]}}}';
/** Arguments the model wrote, with the same hazards and its own spacing. */
const ARGS = '{"id": 12345678901234567890, "big": 1e400, "z": -0, "2": "b", "1": "a"}';

let upstreamArgs = '{}';

function answer(req: Recorded, res: ServerResponse): void {
  if (!req.url.endsWith('/chat/completions')) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"object":"list","data":[{"embedding":[0.5],"index":0}]}');
    return;
  }
  const call = { id: 'call_1', type: 'function', function: { name: 'get', arguments: upstreamArgs } };
  answerWithCall(req, res, call);
}

const pair = proxyInFrontOf(answer, {
  file: (url) => ({ models: { renamed: { upstream: url, upstreamModel: 'real-name' } } }),
});

/** POSTs `text` as it is; the bytes the upstream got for it (the first request it caused). */
async function send(path: string, text: string): Promise<{ status: number; body: string; sent: string[] }> {
  const before = pair.upstream.requests.length;
  const res = await fetch(`${pair.proxy.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: text,
  });
  const body = await res.text();
  return {
    status: res.status,
    body,
    sent: pair.upstream.requests.slice(before).map((r) => r.body.toString()),
  };
}

describe.each([false, true])('stream %s', (stream) => {
  it('chat, forced (final_answer added): seed and the tool schema arrive as written', async () => {
    upstreamArgs = '{"1": 1}';
    const text =
      `{"model":"m1","stream":${stream},"seed":12345678901234567890,"temperature":1.0,` +
      `"messages":[{"role":"user","content":"x"}],` +
      `"tools":[{"type":"function","function":{"name":"get","parameters":${SCHEMA}}}]}`;
    const { status, sent } = await send('/v1/chat/completions', text);
    expect(status).toBe(200);
    const first = sent[0]!;
    expect(first).toContain('"tool_choice":"required"'); // it was rewritten
    expect(first).toContain('"seed":12345678901234567890');
    expect(first).toContain('"temperature":1.0');
    expect(first).toContain(`"parameters":${SCHEMA}`);
  });

  it('chat, history repaired: every historical arguments string goes upstream verbatim', async () => {
    upstreamArgs = '{"1": 1}';
    // The object form (a client bug) is written from the client's bytes too.
    const objectArgs = '{"n":12345678901234567890,"2":true,"1":false}';
    const text =
      `{"model":"m1","stream":${stream},"messages":[{"role":"user","content":"x"},` +
      `{"role":"assistant","content":null,"tool_calls":[` +
      `{"id":"a","type":"function","function":{"name":"get","arguments":${JSON.stringify(ARGS)}}},` +
      `{"id":"b","type":"function","function":{"name":"get","arguments":${objectArgs}}}]},` +
      // No result for "b": repair synthesizes one, so the request is rewritten.
      `{"role":"tool","tool_call_id":"a","content":"ok"},{"role":"user","content":"y"}]}`;
    const { status, sent } = await send('/v1/chat/completions', text);
    expect(status).toBe(200);
    const got = JSON.parse(sent[0]!) as {
      messages: Array<{ tool_calls?: Array<{ function: { arguments: string } }> }>;
    };
    expect(got.messages.length).toBeGreaterThan(4); // repaired
    expect(got.messages[1]!.tool_calls!.map((c) => c.function.arguments)).toEqual([ARGS, objectArgs]);
  });

  it('responses: the translated tool schema arrives as written', async () => {
    upstreamArgs = '{"1": 1}';
    const text =
      `{"model":"m1","stream":${stream},"input":[{"type":"message","role":"user","content":"x"},` +
      `{"type":"function_call","call_id":"a","name":"get","arguments":${JSON.stringify(ARGS)}},` +
      `{"type":"function_call_output","call_id":"a","output":"ok"}],` +
      `"tools":[{"type":"function","name":"get","parameters":${SCHEMA}}]}`;
    const { status, sent, body } = await send('/v1/responses', text);
    expect(status).toBe(200);
    expect(sent[0]).toContain(`"parameters":${SCHEMA}`);
    // The response echoes the client's tools: as it sent them.
    expect(body).toContain(`"parameters":${SCHEMA}`);
    const got = JSON.parse(sent[0]!) as {
      messages: Array<{ tool_calls?: Array<{ function: { arguments: string } }> }>;
    };
    expect(got.messages.find((m) => m.tool_calls)!.tool_calls![0]!.function.arguments).toBe(ARGS);
  });

  it('messages: the input_schema and a tool_use input arrive as written', async () => {
    upstreamArgs = '{"1": 1}';
    const input = '{"id":12345678901234567890,"big":1e400,"z":-0,"2":"b","1":"a"}';
    const text =
      `{"model":"m1","max_tokens":10,"stream":${stream},"messages":[{"role":"user","content":"x"},` +
      `{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"get","input":${input}}]},` +
      `{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"ok"}]}],` +
      `"tools":[{"name":"get","input_schema":${SCHEMA}}]}`;
    const { status, sent } = await send('/v1/messages', text);
    expect(status).toBe(200);
    expect(sent[0]).toContain(`"parameters":${SCHEMA}`);
    const got = JSON.parse(sent[0]!) as {
      messages: Array<{ tool_calls?: Array<{ function: { arguments: string } }> }>;
    };
    expect(got.messages.find((m) => m.tool_calls)!.tool_calls![0]!.function.arguments).toBe(input);
  });

  it('messages: the tool_use input holds the numbers and key order the model wrote', async () => {
    upstreamArgs = ARGS;
    const schema = '{"type":"object"}';
    const text =
      `{"model":"m1","max_tokens":10,"stream":${stream},"messages":[{"role":"user","content":"x"}],` +
      `"tools":[{"name":"get","input_schema":${schema}}]}`;
    const { status, body } = await send('/v1/messages', text);
    expect(status).toBe(200);
    if (stream) {
      // The stream sends the model's text as it is: the non-streamed answer must match it.
      expect(body).toContain(`"partial_json":${JSON.stringify(ARGS)}`);
    } else {
      expect(body).toContain(`"input":${ARGS}`);
    }
  });
});

describe('relays', () => {
  it('a renamed model on the pass-through: only the model changes', async () => {
    const text = '{"model":"renamed","query":"x","top_n":12345678901234567890,"w":{"2":1e400,"1":-0}}';
    const { status, sent } = await send('/v1/rerank', text);
    expect(status).toBe(200);
    expect(sent[0]).toBe(text.replace('"renamed"', '"real-name"'));
  });

  it('a renamed model on the embeddings relay: only the model changes', async () => {
    const text =
      '{"model":"renamed","input":"x","dimensions":12345678901234567890,"extra":{"2":1e400,"1":-0}}';
    const { status, sent } = await send('/v1/embeddings', text);
    expect(status).toBe(200);
    expect(sent[0]).toBe(text.replace('"renamed"', '"real-name"'));
  });
});

describe('property: random client values through rewritten requests arrive byte-identical', () => {
  const object = src.filter((s) => s.kind === 'obj');
  it('chat (forced) and messages (translated): the schema and the seed as sent', async () => {
    upstreamArgs = '{}';
    await fc.assert(
      fc.asyncProperty(object, numberText, fc.boolean(), async (tree, seed, stream) => {
        const schema = print(tree);
        const chat =
          `{"model":"m1","stream":${stream},"seed":${seed},"messages":[{"role":"user","content":"x"}],` +
          `"tools":[{"type":"function","function":{"name":"get","parameters":${schema}}}]}`;
        const a = await send('/v1/chat/completions', chat);
        expect(a.status).toBe(200);
        expect(a.sent[0]).toContain('"tool_choice":"required"');
        expect(a.sent[0]).toContain(`"seed":${seed},`);
        expect(a.sent[0]).toContain(`"parameters":${schema}}`);
        const messages =
          `{"model":"m1","max_tokens":10,"stream":${stream},"messages":[{"role":"user","content":"x"}],` +
          `"tools":[{"name":"get","input_schema":${schema}}]}`;
        const b = await send('/v1/messages', messages);
        expect(b.status).toBe(200);
        expect(b.sent[0]).toContain(`"parameters":${schema}}`);
      }),
      { numRuns: 25 },
    );
  });
});
