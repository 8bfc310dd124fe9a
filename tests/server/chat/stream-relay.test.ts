/**
 * The streamed pass-through (chat without tools) relays whole events as the upstream's bytes,
 * also when the upstream's reads are cut anywhere (inside an event, a line, a multi-byte
 * character): what a read begins of an event waits for the read that completes it, and the client
 * receives exactly the upstream's stream, its [DONE] once. Over real sockets, with the upstream
 * writing the stream in pieces with pauses between them (one read per piece, or several).
 */
import type { ServerResponse } from 'node:http';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeUpstream, fakeUpstream, type RunningProxy, startProxy } from '../../support/harness.js';
import { seededRng } from '../test-utils.js';

const WORDS = ['Hello', ' wörld', ' €', ' 😀', ' "quoted"', ' back\\slash', '\n', ' done'];

function event(delta: unknown, finish: string | null): string {
  return `data: ${JSON.stringify({
    id: 'chatcmpl-r',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'm1',
    choices: [{ index: 0, delta, finish_reason: finish }],
  })}\n\n`;
}

function stream(next: () => number): Buffer {
  let text = event({ role: 'assistant', content: '' }, null);
  const n = 1 + Math.floor(next() * 30);
  for (let i = 0; i < n; i++) text += event({ content: WORDS[Math.floor(next() * WORDS.length)] }, null);
  text += `${event({}, 'stop')}data: [DONE]\n\n`;
  return Buffer.from(text);
}

/** `bytes` cut at 1-6 random offsets (any byte: inside events, lines and characters). */
function cut(bytes: Buffer, next: () => number): Buffer[] {
  const at = new Set<number>();
  const cuts = 1 + Math.floor(next() * 6);
  for (let i = 0; i < cuts; i++) at.add(1 + Math.floor(next() * (bytes.length - 1)));
  const points = [0, ...[...at].sort((a, b) => a - b), bytes.length];
  const pieces: Buffer[] = [];
  for (let i = 1; i < points.length; i++) pieces.push(bytes.subarray(points[i - 1], points[i]));
  return pieces;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let upstream: FakeUpstream;
let proxy: RunningProxy;
let pieces: Buffer[] = [];

beforeAll(async () => {
  upstream = await fakeUpstream((_req, res: ServerResponse) => {
    void (async () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const p of pieces) {
        res.write(p);
        await sleep(3);
      }
      res.end();
    })();
  });
  proxy = await startProxy(
    { TOOLPROOF_UPSTREAM_URL: upstream.url },
    {
      keys: [
        { name: 'open', key: 'sk-open-000000000001' },
        // Counts tokens: its streams are asked for usage upstream (PolicyContext.streamUsage).
        { name: 'counted', key: 'sk-counted-0000000002', tokensPerMinute: 1_000_000 },
      ],
    },
  );
});

afterAll(async () => {
  await proxy.close();
  await upstream.close();
});

describe('streamed pass-through: reads cut anywhere', () => {
  it("the client gets exactly the upstream's bytes, whatever the cuts", async () => {
    const next = seededRng(19);
    for (let round = 0; round < 25; round++) {
      const bytes = stream(next);
      pieces = cut(bytes, next);
      const res = await request(`${proxy.origin}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-open-000000000001' },
        body: JSON.stringify({ model: 'm1', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(res.statusCode).toBe(200);
      const got = Buffer.from(await res.body.arrayBuffer());
      expect(got.toString('utf8'), `round ${round}, cuts ${pieces.map((p) => p.length).join(',')}`).toBe(
        bytes.toString('utf8'),
      );
      expect(got.equals(bytes)).toBe(true);
    }
  });

  it('a usage chunk toolproof asked for is dropped and its timings go back on the finish chunk, whatever the cuts', async () => {
    // llama-server asked for usage: its finish chunk without the timings, then the usage chunk
    // carrying them. Unasked, it sends the finish chunk with them (the client's stream).
    const TIMINGS =
      '{"cache_n":3,"prompt_n":9,"prompt_ms":0.5,"predicted_n":7,"predicted_ms":1.2000000000000002}';
    const finish = (timings: string) =>
      `data: {"choices":[{"finish_reason":"stop","index":0,"delta":{}}],"created":1,"id":"chatcmpl-r","model":"m1","object":"chat.completion.chunk"${timings}}\n\n`;
    const usage = `data: {"choices":[],"created":1,"id":"chatcmpl-r","model":"m1","object":"chat.completion.chunk","usage":{"completion_tokens":7,"prompt_tokens":12,"total_tokens":19},"timings":${TIMINGS}}\n\n`;
    const next = seededRng(23);
    for (let round = 0; round < 25; round++) {
      const body = stream(next).toString('utf8');
      const head = body.slice(0, body.lastIndexOf('data: {'));
      const sent = Buffer.from(`${head}${finish('')}${usage}data: [DONE]\n\n`);
      const unasked = `${head}${finish(`,"timings":${TIMINGS}`)}data: [DONE]\n\n`;
      pieces = cut(sent, next);
      const res = await request(`${proxy.origin}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-counted-0000000002' },
        body: JSON.stringify({ model: 'm1', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(res.statusCode).toBe(200);
      const got = Buffer.from(await res.body.arrayBuffer()).toString('utf8');
      expect(got, `round ${round}, cuts ${pieces.map((p) => p.length).join(',')}`).toBe(unasked);
    }
  });
});
