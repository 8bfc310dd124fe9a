/**
 * A request the upstream answered without reporting its usage says so: its tokens are unknown,
 * not 0. vLLM's stream carries no usage unless asked (stream_options.include_usage), and toolproof
 * passes a chat stream without tools through as the client sent it (a key without a token limit
 * asks nothing: tests/server/chat/relay-usage.test.ts); a completions stream alike. Before, such a
 * request counted nothing in the token counters, exactly as a request of 0 tokens would, and the
 * log line, the inspector and the span said nothing either. Now: toolproof_usage_unreported_total
 * {model,api}, the log line's usageUnreported, the inspector's null tokens and the server span's
 * toolproof.usage_unreported. llama-server reports its tokens unasked (the finish chunk's timings,
 * as its recordings show): those still count, and its requests are not unreported. Real sockets,
 * the simulator's two personalities, an OTLP receiver on loopback.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type ToolproofApp } from '../../server/app.js';
import { type Config, loadConfig } from '../../server/config.js';
import { createSimulator, type Simulator } from '../../simulator/index.js';
import { otlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';
import { closeApp, TEST_MODELS } from './stack.js';
import { logCapture } from './test-utils.js';

interface Running {
  sim: Simulator;
  app: ToolproofApp;
  origin: string;
  receiver: OtlpReceiver;
  log: ReturnType<typeof logCapture>;
}

async function start(personality: 'vllm' | 'llama-server'): Promise<Running> {
  const sim = await createSimulator({ personality, scenario: 'echo' });
  const receiver = await otlpReceiver();
  const log = logCapture();
  const base = loadConfig({
    TOOLPROOF_UPSTREAM_URL: sim.url,
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.origin,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  });
  const config: Config = Object.freeze({ ...base, simulator: true });
  const app = await buildApp(config, { logger: { level: 'info', stream: log.stream } });
  app.toolproof.modelLabels.serve(TEST_MODELS);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  return { sim, app, origin, receiver, log };
}

/** Sends `body` to `path`, reads the answer whole; its request id. */
async function send(r: Running, path: string, body: Record<string, unknown>, id: string): Promise<void> {
  const res = await fetch(`${r.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': id },
    body: JSON.stringify({ model: 'm', ...body }),
  });
  expect(res.status).toBe(200);
  await res.text();
}

const chat = (stream: boolean, includeUsage?: boolean) => ({
  stream,
  messages: [{ role: 'user', content: `count me: ${'word '.repeat(20)}` }],
  ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
});
const completion = (includeUsage?: boolean) => ({
  stream: true,
  prompt: `count me: ${'word '.repeat(20)}`,
  ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
});

function metric(text: string, name: string, labels: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

async function metrics(r: Running): Promise<string> {
  return (await fetch(`${r.origin}/metrics`)).text();
}

/** Every token toolproof_key_tokens_total counted for model m (no keys: the open key's). */
function tokens(text: string): number {
  let sum = 0;
  for (const line of text.split('\n'))
    if (
      line.startsWith('toolproof_key_tokens_total{') &&
      line.includes('model="m"') &&
      !line.includes('"cached"')
    )
      sum += Number(line.split(' ').at(-1));
  return sum;
}

/** Flushes the app's spans until the request's server span has arrived. */
async function serverSpan(r: Running, id: string): Promise<ReceivedSpan> {
  const find = () =>
    r.receiver.spans.find((s) => s.kind === 2 && s.attributes['toolproof.request_id'] === id);
  for (let i = 0; i < 100 && !find(); i++) {
    await r.app.toolproof.tracing!.flush();
    if (!find()) await new Promise((ok) => setTimeout(ok, 20));
  }
  const span = find();
  if (!span) throw new Error(`no server span for ${id}`);
  return span;
}

/** What every sink says of one request's usage. */
async function told(r: Running, id: string) {
  const line = await r.log.requestLine(id);
  const span = await serverSpan(r, id);
  return {
    line: { usage: line.usage, usageUnreported: line.usageUnreported },
    span: {
      // A chat call's total under toolproof's names (its attempts carry gen_ai.usage.*), a
      // relayed request's under the conventions' (it has no attempt span).
      input: span.attributes['toolproof.usage.input_tokens'] ?? span.attributes['gen_ai.usage.input_tokens'],
      output:
        span.attributes['toolproof.usage.output_tokens'] ?? span.attributes['gen_ai.usage.output_tokens'],
      unreported: span.attributes['toolproof.usage_unreported'],
    },
  };
}

async function recordTokens(r: Running, id: string): Promise<unknown> {
  const res = await fetch(`${r.origin}/inspect/api/requests/${id}`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { record: { tokens: unknown } }).record.tokens;
}

describe.each(['vllm', 'llama-server'] as const)('%s', (personality) => {
  let r: Running;
  beforeAll(async () => {
    r = await start(personality);
  });
  afterAll(async () => {
    await closeApp(r.app);
    await r.sim.close();
    await r.receiver.close();
  });

  it('a chat stream passed through without include_usage: unknown tokens said so, or counted when reported', async () => {
    const before = await metrics(r);
    await send(r, '/v1/chat/completions', chat(true), `${personality}-stream`);
    // Passed through: nothing asked of the upstream on the client's behalf.
    expect(JSON.parse(r.sim.requests.at(-1)!.rawBody).stream_options).toBeUndefined();
    const got = await told(r, `${personality}-stream`);
    const after = await metrics(r);
    const unreported = (t: string) => metric(t, 'toolproof_usage_unreported_total', 'model="m",api="chat"');
    if (personality === 'vllm') {
      expect(unreported(after) - unreported(before)).toBe(1);
      expect(tokens(after)).toBe(tokens(before));
      expect(got.line).toEqual({ usage: undefined, usageUnreported: true });
      expect(got.span).toEqual({ input: undefined, output: undefined, unreported: true });
      expect(await recordTokens(r, `${personality}-stream`)).toEqual({
        cached: null,
        prompt: null,
        completion: null,
      });
    } else {
      // llama-server's finish chunk carries its timings unasked: the tokens are known.
      expect(unreported(after)).toBe(unreported(before));
      expect(tokens(after)).toBeGreaterThan(tokens(before));
      expect(got.line.usageUnreported).toBeUndefined();
      expect(got.line.usage).toMatchObject({ prompt_tokens: expect.any(Number) });
      expect(got.span.unreported).toBeUndefined();
      expect(got.span.input).toBeGreaterThan(0);
      expect(await recordTokens(r, `${personality}-stream`)).toMatchObject({
        prompt: expect.any(Number),
        completion: expect.any(Number),
      });
    }
  });

  it('the same request not streamed, or streamed with include_usage: counted, never unreported', async () => {
    for (const [id, body] of [
      [`${personality}-json`, chat(false)],
      [`${personality}-usage`, chat(true, true)],
    ] as const) {
      const before = await metrics(r);
      await send(r, '/v1/chat/completions', body, id);
      const got = await told(r, id);
      const after = await metrics(r);
      expect(metric(after, 'toolproof_usage_unreported_total', 'model="m",api="chat"')).toBe(
        metric(before, 'toolproof_usage_unreported_total', 'model="m",api="chat"'),
      );
      expect(tokens(after)).toBeGreaterThan(tokens(before));
      expect(got.line.usageUnreported).toBeUndefined();
      expect(got.span.unreported).toBeUndefined();
      expect(got.span.input).toBeGreaterThan(0);
    }
  });

  it('a completions stream: unreported without include_usage, counted with it (the span has its usage)', async () => {
    const unreported = (t: string) =>
      metric(t, 'toolproof_usage_unreported_total', 'model="m",api="passthrough"');
    const before = await metrics(r);
    await send(r, '/v1/completions', completion(), `${personality}-completion`);
    const bare = await told(r, `${personality}-completion`);
    const middle = await metrics(r);
    expect(unreported(middle) - unreported(before)).toBe(1);
    expect(tokens(middle)).toBe(tokens(before));
    expect(bare.line).toEqual({ usage: undefined, usageUnreported: true });
    expect(bare.span).toEqual({ input: undefined, output: undefined, unreported: true });

    await send(r, '/v1/completions', completion(true), `${personality}-completion-usage`);
    const asked = await told(r, `${personality}-completion-usage`);
    const after = await metrics(r);
    expect(unreported(after)).toBe(unreported(middle));
    expect(tokens(after)).toBeGreaterThan(tokens(middle));
    expect(asked.line.usageUnreported).toBeUndefined();
    expect(asked.span.unreported).toBeUndefined();
    expect(asked.span.input).toBeGreaterThan(0);
  });
});
