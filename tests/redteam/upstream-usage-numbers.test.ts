/**
 * Token counts are the upstream's word, and an upstream can say anything: `1e400` (which JSON
 * reads as Infinity), -5, "x", or llama-server `timings` of the same kind. Counting them once
 * threw from the response's close handler (prom-client refuses Infinity and a decrease), outside
 * any request: an uncaught exception that ended the process and every other stream on it. Now
 * they count as nothing, every door answers, and /metrics stays a valid exposition.
 */
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf } from '../support/harness.js';

type DoorName = 'chat' | 'responses' | 'messages';
const KEY = 'sk-usage-test-0123';

/** One request with the user text `text` on a front door, with a tool so chat runs the pipeline. */
async function doorRequest(origin: string, door: DoorName, text: string, stream: boolean) {
  const params = { type: 'object', properties: { city: { type: 'string' } } };
  const body =
    door === 'chat'
      ? {
          model: 'm1',
          stream,
          messages: [{ role: 'user', content: text }],
          tools: [{ type: 'function', function: { name: 'f', parameters: params } }],
          tool_choice: 'auto',
        }
      : door === 'responses'
        ? { model: 'm1', stream, input: text, tools: [{ type: 'function', name: 'f', parameters: params }] }
        : {
            model: 'm1',
            stream,
            max_tokens: 50,
            messages: [{ role: 'user', content: text }],
            tools: [{ name: 'f', input_schema: params }],
          };
  const path = { chat: '/v1/chat/completions', responses: '/v1/responses', messages: '/v1/messages' }[door];
  const res = await fetch(`${origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

const CASES: Record<string, string> = {
  infinite: '"usage":{"prompt_tokens":1e400,"completion_tokens":1e400,"total_tokens":1e400}',
  'infinite cached':
    '"usage":{"prompt_tokens":10,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":1e400}}',
  negative:
    '"usage":{"prompt_tokens":-5,"completion_tokens":-3,"total_tokens":-8,"prompt_tokens_details":{"cached_tokens":0}}',
  strings: '"usage":{"prompt_tokens":"10","completion_tokens":"x","total_tokens":null}',
  'llama-server timings': '"timings":{"cache_n":1e400,"prompt_n":-7}',
};

/** The case's fields after `choices`, streamed as the last chunk or set on the completion. */
const pair = proxyInFrontOf(
  (req, res) => {
    const body = JSON.parse(req.body.toString()) as {
      stream?: boolean;
      messages: Array<{ content: unknown }>;
    };
    const text = JSON.stringify(body.messages);
    const name = Object.keys(CASES).find((k) => text.includes(`case:${k}`)) ?? 'negative';
    const extra = CASES[name];
    if (body.stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const delta = (d: object, finish: string | null) =>
        `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m1","choices":[{"index":0,"delta":${JSON.stringify(d)},"finish_reason":${JSON.stringify(finish)}}]}\n\n`;
      res.end(
        `${delta({ role: 'assistant', content: 'hello' }, null)}${delta({}, 'stop')}` +
          `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m1","choices":[],${extra}}\n\ndata: [DONE]\n\n`,
      );
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      `{"id":"c1","object":"chat.completion","created":1,"model":"m1","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],${extra}}`,
    );
  },
  { env: { TOOLPROOF_API_KEYS: KEY } },
);

const DOORS: DoorName[] = ['chat', 'responses', 'messages'];

describe('token counts an upstream reports as Infinity, negative or text', () => {
  for (const name of Object.keys(CASES))
    for (const door of DOORS)
      for (const stream of [false, true])
        it(`${name}, ${door}, ${stream ? 'streamed' : 'not streamed'}: answered, and the process lives on`, async () => {
          const { origin } = pair.proxy;
          const res = await doorRequest(origin, door, `case:${name}`, stream);
          expect(res.status).toBe(200);
          expect(res.text).toContain('hello');
          // The close handler ran (the log line and the counters are written there).
          await new Promise((r) => setTimeout(r, 20));
          const metrics = await fetch(`${origin}/metrics`);
          expect(metrics.status).toBe(200);
          const text = await metrics.text();
          expect(text).not.toMatch(/^toolproof_\w*tokens\w*\{[^}]*\} (-|NaN|\+?Inf)/m);
          // Counted as nothing rather than failing the request's bookkeeping.
          expect(text).not.toMatch(/^toolproof_internal_errors_total\{[^}]*\} [1-9]/m);
        });
});
