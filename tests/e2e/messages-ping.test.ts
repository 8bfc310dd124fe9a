/**
 * Pings on a quiet /v1/messages stream: one right after message_start, then one per interval
 * in which nothing else went out (held chunks, a corrective retry, a long prefill), so idle
 * proxies do not cut a stream that is still working. Over a real socket.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyReply } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import type { ChatCompletionChunk } from '../../protocol/openai.js';
import { MessagesSseOutput } from '../../server/front-doors/messages/output.js';
import { waitFor } from '../server/stack.js';

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

/** A server whose one response is driven by the test through a MessagesSseOutput. */
async function serve(
  pingMs: number,
): Promise<{ out: Promise<MessagesSseOutput>; body: () => string; done: Promise<void> }> {
  let resolveOut: (o: MessagesSseOutput) => void = () => {};
  const out = new Promise<MessagesSseOutput>((r) => (resolveOut = r));
  const server = createServer((_req, res: ServerResponse) => {
    const reply = { raw: res, hijack() {} } as unknown as FastifyReply;
    resolveOut(new MessagesSseOutput(reply, {}, { id: 'msg_t', model: 'm' }, pingMs));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  close = () => new Promise<void>((r) => server.close(() => r()));
  const port = (server.address() as AddressInfo).port;
  let text = '';
  const done = fetch(`http://127.0.0.1:${port}/`).then(async (res) => {
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    for (;;) {
      const { value, done: end } = await reader.read();
      if (end) return;
      text += decoder.decode(value, { stream: true });
    }
  });
  return { out, body: () => text, done };
}

const pings = (text: string) => text.split('\n\n').filter((e) => e.startsWith('event: ping')).length;

const chunk: ChatCompletionChunk = {
  id: 'c',
  object: 'chat.completion.chunk',
  created: 0,
  model: 'm',
  choices: [{ index: 0, delta: { content: 'hi' }, finish_reason: null }],
};

describe('pings on a quiet messages stream', () => {
  it('a ping only for an interval in which nothing was written', async () => {
    const s = await serve(3_600_000); // the timer never fires: ticks are driven by hand
    const out = await s.out;
    out.open(); // message_start + ping
    out.tick(); // message_start went out in this interval: no ping
    out.tick(); // quiet: ping
    await out.chunks([chunk]);
    out.tick(); // text went out: no ping
    out.tick(); // quiet: ping
    await out.end({ id: 'c', model: 'm', created: 0 });
    out.tick(); // ended: nothing
    await s.done;
    expect(pings(s.body())).toBe(3);
    expect(s.body().trimEnd().endsWith('event: message_stop\ndata: {"type":"message_stop"}')).toBe(true);
  });

  it('the interval timer sends them on its own and stops at the end', async () => {
    const s = await serve(20);
    const out = await s.out;
    out.open();
    await waitFor(() => pings(s.body()) >= 3);
    await out.end({ id: 'c', model: 'm', created: 0 });
    await s.done;
    const after = pings(s.body());
    await new Promise((r) => setTimeout(r, 100));
    expect(pings(s.body())).toBe(after);
  });
});
