/**
 * Issue 18 item 6, through the server: an answer held for a possible corrective retry is
 * released at `maxHeldBytes` and not judged, the same way streamed and not (the hook's side:
 * tests/policies/held-answer-cap.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatCompletionChunk } from '../../protocol/openai.js';
import { type FakeUpstream, fakeUpstream, type RunningProxy, startProxy } from '../support/harness.js';

describe('through the server: streamed and non-streamed agree past the cap', () => {
  let upstream: FakeUpstream;
  let proxy: RunningProxy;
  const prose = 'lorem ipsum '.repeat(1000); // 12,000 characters: past a 4 KiB cap
  beforeAll(async () => {
    upstream = await fakeUpstream((req, res) => {
      const body = JSON.parse(req.body.toString()) as { stream?: boolean };
      if (!body.stream) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id: 'c1',
            object: 'chat.completion',
            created: 1,
            model: 'm1',
            choices: [{ index: 0, message: { role: 'assistant', content: prose }, finish_reason: 'stop' }],
          }),
        );
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const ev = (delta: unknown, finish: string | null) =>
        `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm1', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      let text = ev({ role: 'assistant', content: '' }, null);
      for (let i = 0; i < prose.length; i += 12) text += ev({ content: prose.slice(i, i + 12) }, null);
      res.end(`${text}${ev({}, 'stop')}data: [DONE]\n\n`);
    });
    proxy = await startProxy(
      { TOOLPROOF_UPSTREAM_URL: upstream.url },
      { defaults: { forceToolUse: false, maxRetries: 1, maxHeldBytes: 4096 } },
    );
  });
  afterAll(async () => {
    await proxy.close();
    await upstream.close();
  });

  const ask = (stream: boolean) =>
    fetch(`${proxy.origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'm1',
        stream,
        // "required" and a prose answer: under the cap this is retried.
        tool_choice: 'required',
        messages: [{ role: 'user', content: 'hi' }],
        tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
      }),
    });

  it('a prose answer past the cap is delivered as it is, once, by both', async () => {
    const before = upstream.requests.length;
    const whole = (await (await ask(false)).json()) as { choices: Array<{ message: { content: string } }> };
    expect(whole.choices[0]?.message.content).toBe(prose);
    expect(upstream.requests.length - before).toBe(1);
    const text = await (await ask(true)).text();
    let content = '';
    for (const line of text.split('\n')) {
      if (!line.startsWith('data: {')) continue;
      const c = JSON.parse(line.slice(6)) as ChatCompletionChunk;
      content += c.choices[0]?.delta.content ?? '';
    }
    expect(content).toBe(prose);
    expect(upstream.requests.length - before).toBe(2);
  });
});
