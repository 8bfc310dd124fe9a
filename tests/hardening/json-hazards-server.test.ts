/**
 * JSON that JSON.parse pays seconds for, from every side, through the server: nesting (8M
 * nested arrays, 16 MB) and distinct keys. Each was parsed on the event loop before anything
 * refused it: a client body on every front door (11-15 s of loop; the depth check ran after the
 * parse), the pass-through's body (read for its `model`: 1M keys 5 s, and 10k levels renamed a
 * 500), an upstream's whole body, one streamed event, an error body (14 MB nested 11-13 s, 700k
 * keys 8 s). Now each is refused from its bytes (protocol/json-keys.ts) with the API's own error,
 * and /health answers meanwhile (loop-probe.ts): the loop's longest stall, in its CPU time
 * (cpuMs: a loaded box stretches the wall time of a refusal past the bound), is held far below
 * the seconds each parse took.
 */
import type { ServerResponse } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { cpuBound, healthLatencyDuring, threadCpuMs } from './loop-probe.js';
import { streamedMessages } from '../../server/tracing/genai.js';
import { proxyInFrontOf, type Recorded, textCompletion } from '../support/harness.js';

type Handler = (req: Recorded, res: ServerResponse) => void;
const answerText: Handler = (_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(textCompletion('done'));
};
let handler: Handler = answerText;
const pair = proxyInFrontOf((req, res) => handler(req, res), {
  file: (url) => ({ models: { renamed: { upstream: url, upstreamModel: 'real-name' } } }),
});

const post = (path: string, body: string) =>
  fetch(`${pair.proxy.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body,
  }).then(async (r) => ({ status: r.status, text: await r.text() }));

/** A stall of this much of the loop's CPU means the text was parsed on it (each stalled seconds). */
/** The stall bound for a loop thread's CPU time `ms`: 1 s (times `times`) at a small box's speed. */
const STALL_MS = (ms: number, times = 1) => cpuBound(ms, (f) => times * 1000 * f);

// Built once (16 MB each), dropped after: a worker runs the next files in this heap.
let nested: string | undefined = `${'['.repeat(8_000_000)}${']'.repeat(8_000_000)}`;
let keys: string | undefined = Array.from({ length: 1_000_000 }, (_, i) => `"k${i}":1`).join(',');
afterAll(() => {
  nested = keys = undefined;
});

const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }];
const chat = (stream: boolean) =>
  JSON.stringify({ model: 'm1', stream, messages: [{ role: 'user', content: 'hi' }], tools });

describe('a client body nested 8M levels deep', () => {
  const doors = [
    ['/v1/chat/completions', `{"model":"m1","messages":[{"role":"user","content":"hi"}],"extra":`],
    ['/v1/responses', `{"model":"m1","input":"hi","extra":`],
    ['/v1/messages', `{"model":"m1","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"extra":`],
    // the pass-through reads a JSON body for its model
    ['/tokenize', `{"model":"m1","extra":`],
  ] as const;
  for (const [path, head] of doors)
    it(`${path}: the 400 naming the field, in the door's shape, the loop free, nothing sent upstream`, async () => {
      const before = pair.upstream.requests.length;
      const m = await healthLatencyDuring(pair.proxy.origin, post(path, `${head}${nested}}`));
      expect(m.value.status).toBe(400);
      expect(m.value.text).toContain('Invalid field \\"extra.0.0.0\\": nested deeper than 128 levels.');
      expect(JSON.parse(m.value.text)[path === '/v1/messages' ? 'type' : 'error']).toBeDefined();
      expect(pair.upstream.requests.length).toBe(before);
      expect(m.cpuMs).toBeLessThan(STALL_MS(m.cpuMs));
    }, 60_000);
});

describe('the pass-through', () => {
  it('a body of 1M top-level fields: the 400 the front doors give, the loop free', async () => {
    const before = pair.upstream.requests.length;
    const m = await healthLatencyDuring(pair.proxy.origin, post('/tokenize', `{"model":"m1",${keys}}`));
    expect(m.value.status).toBe(400);
    expect(m.value.text).toContain('more than 1024 top-level fields');
    expect(pair.upstream.requests.length).toBe(before);
    expect(m.cpuMs).toBeLessThan(STALL_MS(m.cpuMs));
  }, 60_000);

  it('a renamed model in a body nested 10k levels: a 400 naming the field, not a 500', async () => {
    handler = answerText;
    const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    const res = await post('/tokenize', `{"model":"renamed","x":${deep}}`);
    expect(res.status).toBe(400);
    expect(res.text).toContain('Invalid field \\"x.0.0.0\\": nested deeper than 128 levels.');
    // within the bound, renamed as before
    const ok = await post('/tokenize', '{"model":"renamed","x":[[1.0]]}');
    expect(ok.status).toBe(200);
    expect(pair.upstream.requests.at(-1)?.body.toString()).toBe('{"model":"real-name","x":[[1.0]]}');
  }, 30_000);
});

describe('an upstream answer JSON.parse pays seconds for', () => {
  it('a whole body nested 8M levels: a 502 naming the depth, the loop free', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        `{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":"hi","extra":${nested}},"finish_reason":"stop"}]}`,
      );
    };
    const m = await healthLatencyDuring(pair.proxy.origin, post('/v1/chat/completions', chat(false)));
    expect(m.value.status).toBe(502);
    expect(m.value.text).toContain('sent a value nested deeper than 512 levels');
    expect(m.cpuMs).toBeLessThan(STALL_MS(m.cpuMs));
  }, 60_000);

  for (const [what, extra, message] of [
    ['nested 7M levels', () => nested!.slice(1_000_000, -1_000_000), 'nested deeper than 512 levels'],
    ['naming 1M distinct keys', () => `{${keys}}`, 'more than 50000 distinct object keys'],
  ] as const)
    it(`one streamed event ${what}: the request's 502 (nothing went out before it), the loop free`, async () => {
      handler = (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(
          `data: {"id":"x","choices":[{"index":0,"delta":{"content":"x"}}],"extra":${extra()}}\n\ndata: [DONE]\n\n`,
        );
      };
      const m = await healthLatencyDuring(pair.proxy.origin, post('/v1/chat/completions', chat(true)));
      expect(m.value.status).toBe(502);
      expect(m.value.text).toContain(message);
      expect(m.value.text).toContain('TP_ERR_UPSTREAM_BAD_RESPONSE');
      expect(m.cpuMs).toBeLessThan(STALL_MS(m.cpuMs));
    }, 60_000);

  it('an error body nested 500k levels (under the 1 MB error cap) is read as text, not parsed', async () => {
    handler = (_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(`{"error":{"message":"x","extra":${'['.repeat(500_000)}${']'.repeat(500_000)}}}`);
    };
    const m = await healthLatencyDuring(pair.proxy.origin, post('/v1/chat/completions', chat(false)));
    expect(m.value.status).toBe(500);
    expect(JSON.parse(m.value.text).error.code).toBe('TP_ERR_UPSTREAM_ERROR');
    expect(m.cpuMs).toBeLessThan(STALL_MS(m.cpuMs));
    handler = answerText;
  }, 60_000);
});

describe('tool-call arguments the model wrote 1.5M levels deep (3 MB)', () => {
  // Read as JSON where a call's arguments are read (normalize-tool-calls, each door's
  // translation): 3-6 s of the loop at each, and the Messages door's writer then overflowed the
  // stack (a 500). Past the upstream bounds they are not parsed: text, kept whole.
  const args = () => `{"a":${nested!.slice(6_500_000, -6_500_000)}}`;
  const answer: Handler = (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        id: 'c',
        object: 'chat.completion',
        created: 1,
        model: 'm1',
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: null,
              tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: args() } }],
            },
            finish_reason: 'tool_calls',
          },
        ],
      }),
    );
  };
  it('/v1/messages: the tool_use keeps the text under _raw, the loop free', async () => {
    handler = answer;
    const body = JSON.stringify({
      model: 'm1',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'hi' }],
      tools: [{ name: 'f', input_schema: { type: 'object' } }],
    });
    const m = await healthLatencyDuring(pair.proxy.origin, post('/v1/messages', body));
    expect(m.value.status).toBe(200);
    const block = (
      JSON.parse(m.value.text) as { content: Array<{ type: string; input?: { _raw?: string } }> }
    ).content[0];
    expect(block?.type).toBe('tool_use');
    expect(block?.input?._raw).toBe(args());
    expect(m.cpuMs).toBeLessThan(STALL_MS(m.cpuMs, 2));
    handler = answerText;
  }, 60_000);
});

describe("an upstream's model list with an entry nested 400k levels (under the 1 MB read)", () => {
  // Listed to the client as it was: the writer overflowed its stack, so GET /v1/models was
  // toolproof's own 500 for every client; /ready parsed it on every probe (1.4 s of loop).
  it('GET /v1/models lists without it, /v1/models/{id} says the list is unknown, /ready is not held', async () => {
    const deep = nested!.slice(7_600_000, -7_600_000);
    handler = (req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        req.url.endsWith('/models')
          ? `{"object":"list","data":[{"id":"m1","object":"model","x":${deep}}]}`
          : textCompletion('done'),
      );
    };
    const get = (path: string) =>
      fetch(`${pair.proxy.origin}${path}`).then(async (r) => ({ status: r.status, text: await r.text() }));
    const list = await get('/v1/models');
    expect(list.status).toBe(200);
    expect(list.text).not.toContain('TP_ERR_INTERNAL');
    const one = await get('/v1/models/m1');
    expect(one.status).toBe(502);
    expect(one.text).toContain('did not list its models');
    const ready = await healthLatencyDuring(pair.proxy.origin, get('/ready'));
    expect(ready.value.status).toBe(200);
    expect(ready.cpuMs).toBeLessThan(STALL_MS(ready.cpuMs, 0.5));
    handler = answerText;
  }, 60_000);
});

describe('tracing with content capture', () => {
  it("reassembling an attempt's events leaves the refused one unparsed", () => {
    const event = `{"id":"x","choices":[{"index":0,"delta":{"content":"x"}}],"extra":${nested!.slice(1_000_000, -1_000_000)}}`;
    const ok = '{"id":"x","choices":[{"index":0,"delta":{"content":"hi"}}]}';
    const start = threadCpuMs();
    const out = streamedMessages([ok, event, '[DONE]']);
    const spent = threadCpuMs() - start;
    expect(spent).toBeLessThan(STALL_MS(spent));
    expect(out).toBe(streamedMessages([ok, '[DONE]']));
  });
});
