/**
 * Issue 18 item 7: a held stream was silent until it was judged. Chat sent no headers at all
 * (writeHead only queues them), Responses went quiet after response.created, and every front
 * door waited for the upstream's headers. Now the headers go out at the first keep-alive
 * interval at the latest, and each quiet interval gets the API's own keep-alive: an SSE comment
 * (chat), a `keepalive` event (Responses), a `ping` event (Messages). Real SDK clients still
 * assemble the same answer. A short interval (40 ms) and a slow upstream, over real sockets.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeUpstream, fakeUpstream, type RunningProxy, startProxy } from '../support/harness.js';

const INTERVAL_MS = 40;
const WORDS = ['Hello', ' there,', ' slow', ' world.'];

let upstream: FakeUpstream;
let proxy: RunningProxy;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The upstream's next answer waits for this gate: the raw tests open it once they have seen
 * enough of the stream (so nothing depends on how fast this machine is), the SDK tests after
 * FALLBACK_MS. A gate opened by its fallback in a raw test means the stream stayed silent.
 */
const FALLBACK_MS = 300;
let gate = { open: () => {}, opened: Promise.resolve(), byFallback: false };
function newGate(fallbackMs = FALLBACK_MS) {
  let open = () => {};
  const opened = new Promise<void>((r) => (open = r));
  const g = { open, opened, byFallback: false };
  setTimeout(() => {
    g.byFallback = true;
    g.open();
  }, fallbackMs).unref();
  gate = g;
  return g;
}

function chunk(delta: unknown, finish: string | null): string {
  return `data: ${JSON.stringify({
    id: 'c1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'm1',
    choices: [{ index: 0, delta, finish_reason: finish }],
  })}\n\n`;
}

beforeAll(async () => {
  upstream = await fakeUpstream((_req, res) => {
    void (async () => {
      await gate.opened;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(chunk({ role: 'assistant', content: '' }, null));
      for (const w of WORDS) {
        await sleep(5);
        res.write(chunk({ content: w }, null));
      }
      res.end(`${chunk({}, 'stop')}data: [DONE]\n\n`);
    })();
  });
  // Tools declared and a retry possible: corrective-retry holds the answer until it is judged.
  proxy = await startProxy(
    { TOOLPROOF_UPSTREAM_URL: upstream.url, TOOLPROOF_STREAM_KEEPALIVE_MS: String(INTERVAL_MS) },
    { defaults: { forceToolUse: false, maxRetries: 1 } },
  );
});

afterAll(async () => {
  await proxy.close();
  await upstream.close();
});

const chatTool = { type: 'function' as const, function: { name: 'f', parameters: { type: 'object' } } };

const count = (text: string, marker: string) => text.split(marker).length - 1;

/**
 * Raw SSE text of a stream whose upstream stays silent until the client has seen `want`
 * keep-alive markers (then the upstream answers). `silent`: the gate opened only by its
 * fallback, i.e. the client saw no headers or not enough keep-alives while the upstream waited.
 */
async function raw(
  path: string,
  body: unknown,
  marker: string,
  want: number,
): Promise<{ text: string; status: number; silent: boolean }> {
  const g = newGate(5_000);
  const res = await fetch(`${proxy.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  });
  const silent = g.byFallback; // headers only once the upstream answered
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    if (count(text, marker) >= want) g.open();
  }
  return { text, status: res.status, silent: silent || g.byFallback };
}

describe('keep-alives on a held stream', () => {
  it('chat: headers before the upstream answers, `: keep-alive` comments while held', async () => {
    const r = await raw(
      '/v1/chat/completions',
      { model: 'm1', stream: true, messages: [{ role: 'user', content: 'hi' }], tools: [chatTool] },
      ': keep-alive\n\n',
      3,
    );
    expect(r.status).toBe(200);
    // before: no headers and no byte until the upstream answered
    expect(r.silent).toBe(false);
    expect(r.text).toContain(WORDS.join('').slice(0, 5));
    expect(r.text.trimEnd().endsWith('data: [DONE]')).toBe(true);
  });

  it('responses: `keepalive` events, numbered in sequence with the rest', async () => {
    const r = await raw(
      '/v1/responses',
      {
        model: 'm1',
        stream: true,
        input: 'hi',
        tools: [{ type: 'function', name: 'f', parameters: { type: 'object' } }],
      },
      'event: keepalive\n',
      3,
    );
    expect(r.silent).toBe(false);
    const events = r.text
      .split('\n\n')
      .filter((e) => e.includes('data: '))
      .map((e) => JSON.parse(e.slice(e.indexOf('data: ') + 6)) as { type: string; sequence_number: number });
    const createdAt = events.findIndex((e) => e.type === 'response.created');
    const keepalives = events.filter((e) => e.type === 'keepalive');
    expect(keepalives.length).toBeGreaterThanOrEqual(3);
    expect(events.findIndex((e) => e.type === 'keepalive')).toBeGreaterThan(createdAt);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    expect(r.text).toContain('event: keepalive\n');
  });

  it('messages: `ping` events between message_start and the held answer', async () => {
    const r = await raw(
      '/v1/messages',
      {
        model: 'm1',
        max_tokens: 64,
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
        tools: [{ name: 'f', input_schema: { type: 'object' } }],
      },
      'event: ping\n',
      4,
    );
    expect(r.silent).toBe(false);
    expect(r.text).toContain('event: message_stop');
  });

  it('the openai SDK assembles the chat stream', async () => {
    const client = new OpenAI({ baseURL: `${proxy.origin}/v1`, apiKey: 'k', maxRetries: 0 });
    newGate();
    const stream = await client.chat.completions.create({
      model: 'm1',
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
      tools: [chatTool],
    });
    let text = '';
    for await (const c of stream) text += c.choices[0]?.delta.content ?? '';
    expect(text).toBe(WORDS.join(''));
  });

  it('the openai SDK assembles the Responses stream (event iterator and stream helper)', async () => {
    const client = new OpenAI({ baseURL: `${proxy.origin}/v1`, apiKey: 'k', maxRetries: 0 });
    const tools = [{ type: 'function' as const, name: 'f', parameters: { type: 'object' }, strict: false }];
    newGate();
    const events = await client.responses.create({ model: 'm1', input: 'hi', stream: true, tools });
    let text = '';
    for await (const e of events) if (e.type === 'response.output_text.delta') text += e.delta;
    expect(text).toBe(WORDS.join(''));
    newGate();
    const helper = client.responses.stream({ model: 'm1', input: 'hi', tools });
    const final = await helper.finalResponse();
    expect(final.output_text).toBe(WORDS.join(''));
  });

  it('the anthropic SDK assembles the Messages stream', async () => {
    const client = new Anthropic({ baseURL: proxy.origin, apiKey: 'k', maxRetries: 0 });
    newGate();
    const stream = client.messages.stream({
      model: 'm1',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'hi' }],
      tools: [{ name: 'f', input_schema: { type: 'object' } }],
    });
    const message = await stream.finalMessage();
    expect(message.content.map((b) => b.type)).toEqual(['text']);
    expect(message.content[0]?.type === 'text' && message.content[0].text).toBe(WORDS.join(''));
  });

  it('the interval is validated, 0 turns keep-alives off', async () => {
    const { loadConfig } = await import('../../server/config.js');
    expect(loadConfig({}, {}).streamKeepAliveMs).toBe(15_000);
    expect(loadConfig({ TOOLPROOF_STREAM_KEEPALIVE_MS: '0' }, {}).streamKeepAliveMs).toBe(0);
    expect(() => loadConfig({}, { server: { streamKeepAliveMs: -1 } })).toThrow(/streamKeepAliveMs/);
  });
});
