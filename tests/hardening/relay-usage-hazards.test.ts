/**
 * The streamed pass-through (chat without tools) relays the upstream's events as its bytes,
 * unparsed, and reads only the last usage or timings event when the stream ends, for the key's
 * token count and the log line. That read was a bare JSON.parse: one relayed event nested 7M
 * levels under `timings` (llama-server's) or `usage` (14 MB, within the 16 MiB event bound)
 * held the event loop for seconds (~7 s on the test box) after the stream ended, for every
 * client. Past the upstream JSON bounds it is not parsed now (no usage counted from it); the
 * event itself was already relayed as it came. Through the server, over a real socket.
 */
import type { ServerResponse } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { proxyInFrontOf, type Recorded } from '../support/harness.js';
import { cpuBound, healthLatencyDuring } from './loop-probe.js';

type Handler = (req: Recorded, res: ServerResponse) => void;
let handler: Handler = (_req, res) => res.end();
const pair = proxyInFrontOf((req, res) => handler(req, res));

let nested: string | undefined = `${'['.repeat(7_000_000)}${']'.repeat(7_000_000)}`;
afterAll(() => {
  nested = undefined;
});

/** The stall bound for a loop thread's CPU time `ms`: 1 s (times `times`) at a small box's speed. */
const STALL_MS = (ms: number, times = 1) => cpuBound(ms, (f) => times * 1000 * f);
const first =
  'data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n';

const post = (includeUsage: boolean) =>
  fetch(`${pair.proxy.origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'm1',
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
      ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
    }),
  }).then(async (r) => ({ status: r.status, text: await r.text() }));

describe('a relayed stream whose last usage or timings event is nested 7M levels', () => {
  for (const [what, member, includeUsage] of [
    ['timings (llama-server)', 'timings', false],
    ['usage (asked by the client)', 'usage', true],
  ] as const)
    it(`${what}: the stream ends, the last event never parsed whole on the loop`, async () => {
      handler = (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(first);
        res.end(`data: {"id":"x","choices":[],"${member}":${nested},"x":{}}\n\ndata: [DONE]\n\n`);
      };
      const m = await healthLatencyDuring(pair.proxy.origin, post(includeUsage));
      expect(m.value.status).toBe(200);
      expect(m.value.text).toContain('"content":"hi"');
      // Relayed as it came (a usage event read across reads is checked as it passes: the
      // stream's error event naming the depth); either way the stream ends.
      if (member === 'timings') expect(m.value.text.length).toBeGreaterThan(14_000_000);
      expect(m.value.text.trimEnd().endsWith('data: [DONE]')).toBe(true);
      expect(m.cpuMs).toBeLessThan(STALL_MS(m.cpuMs));
    }, 60_000);
});
