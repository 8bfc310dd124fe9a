/**
 * Issue 18 item 4: `out.push(...list)` passes every element as an argument and throws a
 * RangeError past ~120k. A chat history turn with 130k tool calls, and a Messages turn with
 * 170k tool_result blocks, got a 500 (TP_ERR_INTERNAL). Now both are answered.
 */
import { describe, expect, it } from 'vitest';
import { answerJson, proxyInFrontOf, textCompletion } from '../support/harness.js';

const pair = proxyInFrontOf(answerJson(textCompletion('done')));

const post = (path: string, body: unknown) =>
  fetch(`${pair.proxy.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  });

describe('lists past the argument limit of push(...spread)', () => {
  it('a chat history turn with 130k tool calls is answered, not a 500', async () => {
    const n = 130_000;
    const calls = Array.from({ length: n }, (_, i) => ({
      id: `c${i}`,
      type: 'function',
      function: { name: 'f', arguments: '{}' },
    }));
    const results = calls.map((c) => ({ role: 'tool', tool_call_id: c.id, content: 'ok' }));
    const res = await post('/v1/chat/completions', {
      model: 'm1',
      messages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: null, tool_calls: calls },
        ...results,
      ],
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
    });
    expect(res.status).toBe(200);
    const sent = JSON.parse(pair.upstream.requests.at(-1)!.body.toString()) as { messages: unknown[] };
    expect(sent.messages.length).toBeGreaterThanOrEqual(n + 2);
  }, 60_000);

  it('a Messages turn with 170k tool_result blocks is answered, not a 500', async () => {
    const n = 170_000;
    const uses = Array.from({ length: n }, (_, i) => ({
      type: 'tool_use',
      id: `t${i}`,
      name: 'f',
      input: {},
    }));
    const results = uses.map((u) => ({ type: 'tool_result', tool_use_id: u.id, content: 'ok' }));
    const res = await post('/v1/messages', {
      model: 'm1',
      max_tokens: 16,
      messages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: uses },
        { role: 'user', content: results },
      ],
      tools: [{ name: 'f', input_schema: { type: 'object' } }],
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { content: Array<{ text?: string }> }).content[0]?.text).toBe('done');
  }, 60_000);
});
