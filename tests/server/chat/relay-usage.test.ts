/**
 * The tokens of a streamed pass-through (chat without tools) count against a key's
 * tokensPerMinute though the client did not ask for usage, and the client still gets exactly the
 * stream the upstream sends it when not asked: vLLM and llama-server (the simulator's
 * personalities, as their recordings frame them), over real sockets. Before, no usage came back
 * for such a stream, and a key limited to 30 tokens a minute streamed on without limit. And a
 * client that asked for usage gets the upstream's usage chunk once, before [DONE] (it got a
 * second one, written by toolproof after the upstream's [DONE]).
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type ToolproofApp } from '../../../server/app.js';
import { type Config, loadConfig } from '../../../server/config.js';
import { createSimulator, type Simulator } from '../../../simulator/index.js';
import { closeApp } from '../stack.js';

const LIMITED = 'sk-limited-000000001';
const OPEN = 'sk-open-0000000000002';
const ROOMY = 'sk-roomy-000000000003';

interface Running {
  sim: Simulator;
  app: ToolproofApp;
  origin: string;
}

async function start(personality: 'vllm' | 'llama-server'): Promise<Running> {
  const sim = await createSimulator({ personality, scenario: 'echo' });
  const base = loadConfig(
    { TOOLPROOF_UPSTREAM_URL: sim.url },
    {
      defaults: { forceToolUse: false },
      keys: [
        { name: 'limited', key: LIMITED, tokensPerMinute: 30 },
        { name: 'open', key: OPEN },
        { name: 'roomy', key: ROOMY, tokensPerMinute: 1_000_000 },
      ],
    },
  );
  const config: Config = Object.freeze({ ...base, simulator: true });
  const app = await buildApp(config, { logger: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { sim, app, origin: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}` };
}

const body = (text: string, usage?: boolean) =>
  JSON.stringify({
    model: 'm',
    stream: true,
    messages: [{ role: 'user', content: text }],
    ...(usage ? { stream_options: { include_usage: true } } : {}),
  });

/** The streamed answer through toolproof, as bytes. */
async function viaToolproof(r: Running, key: string, text: string, usage?: boolean): Promise<Response> {
  return fetch(`${r.origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: body(text, usage),
  });
}

/** The same request sent to the simulator itself: what the backend sends a client. */
async function direct(r: Running, text: string, usage?: boolean): Promise<string> {
  const res = await fetch(`${r.sim.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: body(text, usage),
  });
  return res.text();
}

/**
 * A stream's bytes less what differs between two answers of the same request: its id, its time,
 * and llama-server's timings' figures (the second finds the first's prefix in the cache).
 */
const same = (sse: string) =>
  sse
    .replace(/"id":"chatcmpl-[^"]*"/g, '"id":"X"')
    .replace(/"created":\d+/g, '"created":0')
    .replace(/"timings":\{[^}]*\}/g, (t) => t.replace(/:[-\d.e+]+/g, ':0'));

async function tokens(r: Running, key: string): Promise<number> {
  const text = await (await fetch(`${r.origin}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n'))
    if (line.startsWith(`toolproof_key_tokens_total{key="${key}",`) && !line.includes('kind="cached"'))
      sum += Number(line.split(' ').at(-1));
  return sum;
}

const settle = () => new Promise((r) => setTimeout(r, 30));

describe.each(['vllm', 'llama-server'] as const)('%s: a streamed pass-through', (personality) => {
  let r: Running;
  beforeAll(async () => {
    r = await start(personality);
  });
  afterAll(async () => {
    await closeApp(r.app);
    await r.sim.close();
  });

  it("counts against its key's tokensPerMinute, the client's bytes those of the stream it did not ask usage of", async () => {
    const question = `a long question: ${'word '.repeat(40)}`;
    const res = await viaToolproof(r, LIMITED, question);
    expect(res.status).toBe(200);
    const got = await res.text();
    // toolproof asked the upstream for the usage (the key counts tokens)...
    const sent = JSON.parse(r.sim.requests.at(-1)!.rawBody) as { stream_options?: unknown };
    expect(sent.stream_options).toEqual({ include_usage: true });
    // ...and the client got what it would have got unasked: no usage chunk, llama-server's
    // timings on its finish chunk where they were.
    expect(same(got)).toBe(same(await direct(r, question)));
    expect(got).not.toContain('"usage"');
    await settle();
    expect(await tokens(r, 'limited')).toBeGreaterThan(30);
    // Over its 30 tokens a minute: the next one is refused.
    expect((await viaToolproof(r, LIMITED, 'again')).status).toBe(429);
  });

  it('a client that asks for usage gets the upstream usage chunk once, before [DONE], as it came', async () => {
    const res = await viaToolproof(r, OPEN, 'tell me', true);
    const got = await res.text();
    expect(same(got)).toBe(same(await direct(r, 'tell me', true)));
    expect(got.match(/"usage"/g)).toHaveLength(1);
    expect(got.endsWith('data: [DONE]\n\n')).toBe(true);
  });

  it("streamed or not, the same answer counts the same tokens against its key's limit", async () => {
    const question = `count me: ${'word '.repeat(20)}`;
    const counted = async (stream: boolean): Promise<number> => {
      const before = await tokens(r, 'roomy');
      const res = await fetch(`${r.origin}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${ROOMY}` },
        body: JSON.stringify({ model: 'm', stream, messages: [{ role: 'user', content: question }] }),
      });
      expect(res.status).toBe(200);
      await res.text();
      await settle();
      return (await tokens(r, 'roomy')) - before;
    };
    const whole = await counted(false);
    expect(whole).toBeGreaterThan(0);
    expect(await counted(true)).toBe(whole);
  });

  it('a key without a token limit leaves the request as the client sent it', async () => {
    const before = await tokens(r, 'open');
    const got = await (await viaToolproof(r, OPEN, 'just this')).text();
    expect(JSON.parse(r.sim.requests.at(-1)!.rawBody).stream_options).toBeUndefined();
    expect(same(got)).toBe(same(await direct(r, 'just this')));
    await settle();
    // llama-server reports the tokens unasked (its finish chunk's timings); vLLM does not.
    if (personality === 'llama-server') expect(await tokens(r, 'open')).toBeGreaterThan(before);
    else expect(await tokens(r, 'open')).toBe(before);
  });
});
