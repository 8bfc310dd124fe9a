/**
 * An attempt's body as sent, kept as the client's bytes it begins with and its own rest
 * (server/capture/ring.ts attemptOf), read back through the inspector's API over real HTTP:
 * byte for byte what the upstream received, for the forced first attempt and the corrective
 * retry after it, streamed and not.
 */
import { describe, expect, it } from 'vitest';
import { fakeUpstream, proxyInFrontOfUpstream } from '../support/harness.js';
import { toolCallCompletion, toolCallStream } from '../support/fake-upstream.js';

// The first attempt calls with arguments its schema refuses (re-asked once); the second is valid.
let calls = 0;
const pair = proxyInFrontOfUpstream(
  () =>
    fakeUpstream((req, res) => {
      if (!req.url.endsWith('/chat/completions')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"object":"list","data":[]}');
        return;
      }
      const stream = (JSON.parse(req.body.toString('utf8')) as { stream?: boolean }).stream === true;
      const args = calls++ % 2 === 0 ? '{"city": 5}' : '{"city": "Paris"}';
      res.writeHead(200, { 'content-type': stream ? 'text/event-stream' : 'application/json' });
      res.end(
        stream ? toolCallStream('m1', 'get_weather', args) : toolCallCompletion('m1', 'get_weather', args),
      );
    }),
  { env: { TOOLPROOF_CAPTURE_MB: '10' } },
);

const tools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  },
];
// An agent's history: ~40 KB, non-ASCII included.
const history = Array.from({ length: 60 }, (_, i) => ({
  role: i % 2 === 0 ? 'user' : 'assistant',
  content: `turn ${i}: le café, 日本語, 🙂 ${'context '.repeat(80)}`,
}));

describe("an attempt's body as sent, read back from the capture", () => {
  for (const stream of [false, true]) {
    it(`is what the upstream received, byte for byte, on a forced attempt and its retry (${stream ? 'streamed' : 'not streamed'})`, async () => {
      const { proxy, upstream } = pair;
      const seen = upstream.requests.length;
      const res = await fetch(`${proxy.origin}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm1', messages: history, tools, stream }),
      });
      await res.text();
      expect(res.status).toBe(200);
      const id = res.headers.get('x-request-id')!;
      const view = (await (await fetch(`${proxy.origin}/inspect/api/requests/${id}`)).json()) as {
        record: { upstreamAttempts: Array<{ request: { text: string; cut: number } }> };
      };
      const sent = upstream.requests.slice(seen).filter((r) => r.url.endsWith('/chat/completions'));
      expect(sent).toHaveLength(2);
      expect(view.record.upstreamAttempts.map((a) => a.request)).toEqual(
        sent.map((r) => ({ text: r.body.toString('utf8'), cut: 0 })),
      );
      // The retry carries the feedback after the client's messages; the first, final_answer.
      expect(JSON.parse(sent[0]!.body.toString('utf8')).tool_choice).toBe('required');
    });
  }
});
