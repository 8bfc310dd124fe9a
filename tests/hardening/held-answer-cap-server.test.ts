/**
 * Issue 18 item 6, through the server: an answer held for a possible corrective retry is
 * released at `maxHeldBytes` and not judged, the same way streamed and not (the hook's side:
 * tests/policies/held-answer-cap.test.ts).
 */
import { describe, expect, it } from 'vitest';
import type { ChatCompletionChunk } from '../../protocol/openai.js';
import { chunkEvent, proxyInFrontOf, streamOrJson, textCompletion } from '../support/harness.js';

describe('through the server: streamed and non-streamed agree past the cap', () => {
  const prose = 'lorem ipsum '.repeat(1000); // 12,000 characters: past a 4 KiB cap
  // Streamed: the prose in 12-character deltas.
  let events = chunkEvent({ role: 'assistant', content: '' });
  for (let i = 0; i < prose.length; i += 12) events += chunkEvent({ content: prose.slice(i, i + 12) });
  events += `${chunkEvent({}, 'stop')}data: [DONE]\n\n`;
  const pair = proxyInFrontOf(
    streamOrJson(
      () => events,
      () => textCompletion(prose),
    ),
    { file: { defaults: { forceToolUse: false, maxRetries: 1, maxHeldBytes: 4096 } } },
  );

  const ask = (stream: boolean) =>
    fetch(`${pair.proxy.origin}/v1/chat/completions`, {
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
    const before = pair.upstream.requests.length;
    const whole = (await (await ask(false)).json()) as { choices: Array<{ message: { content: string } }> };
    expect(whole.choices[0]?.message.content).toBe(prose);
    expect(pair.upstream.requests.length - before).toBe(1);
    const text = await (await ask(true)).text();
    let content = '';
    for (const line of text.split('\n')) {
      if (!line.startsWith('data: {')) continue;
      const c = JSON.parse(line.slice(6)) as ChatCompletionChunk;
      content += c.choices[0]?.delta.content ?? '';
    }
    expect(content).toBe(prose);
    expect(pair.upstream.requests.length - before).toBe(2);
  });
});
