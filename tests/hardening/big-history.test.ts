/**
 * A big chat history through the real server: its body is parsed in pieces
 * (protocol/json-body.ts), and that must not show: an untouched history goes upstream as the
 * client's bytes, one that needs repair is repaired as before, and a big body that is not JSON
 * gets JSON.parse's own message.
 */
import OpenAI from 'openai';
import { beforeAll, describe, expect, it } from 'vitest';
import { answerJson, proxyInFrontOf, textCompletion } from '../support/harness.js';

let client: OpenAI;

const pair = proxyInFrontOf(answerJson(textCompletion('summary')));
beforeAll(() => {
  client = new OpenAI({ baseURL: `${pair.proxy.origin}/v1`, apiKey: 'k', maxRetries: 0 });
});

type Message = OpenAI.Chat.Completions.ChatCompletionMessageParam;

/** ~`bytes` of alternating user / assistant turns (with non-ASCII text). */
function history(bytes: number): Message[] {
  const messages: Message[] = [{ role: 'system', content: 'You are helpful.' }];
  for (let i = 0, size = 0; size < bytes; i++) {
    const content = `(${i}) we discussed caching, retries and timeouts — naïve über-cache 缓存 ${'x'.repeat(300)}`;
    messages.push({ role: i % 2 === 0 ? 'user' : 'assistant', content });
    size += content.length + 40;
  }
  messages.push({ role: 'user', content: 'Summarize.' });
  return messages;
}

describe('a 300 KB history', () => {
  it('reaches the upstream unchanged', async () => {
    const messages = history(300 * 1024);
    const answer = await client.chat.completions.create({ model: 'm1', messages });
    expect(answer.choices[0]?.message.content).toBe('summary');
    const sent = pair.upstream.requests.at(-1)!;
    expect(sent.body.length).toBeGreaterThan(250 * 1024);
    expect(JSON.parse(sent.body.toString())).toEqual({ model: 'm1', messages });
  });

  it('is still repaired when it needs it (an orphan tool result in the middle)', async () => {
    const messages = history(300 * 1024);
    messages.splice(400, 0, { role: 'tool', tool_call_id: 'call_lost', content: 'result text' });
    await client.chat.completions.create({ model: 'm1', messages });
    const sent = JSON.parse(pair.upstream.requests.at(-1)!.body.toString()) as { messages: Message[] };
    expect(sent.messages).toHaveLength(messages.length);
    expect(sent.messages.slice(0, 400)).toEqual(messages.slice(0, 400));
    expect(sent.messages[400]).toEqual({
      role: 'user',
      content: '[Result of tool call call_lost, which matches no earlier tool call]\nresult text',
    });
    expect(sent.messages.slice(401)).toEqual(messages.slice(401));
  });

  it("that is not JSON gets JSON.parse's message", async () => {
    const text = JSON.stringify({ model: 'm1', messages: history(300 * 1024) });
    const at = text.indexOf('},{"role"', 150_000) + 1;
    const broken = `${text.slice(0, at)},${text.slice(at)}`;
    let expected = '';
    try {
      JSON.parse(broken);
    } catch (err) {
      expected = (err as Error).message;
    }
    expect(expected).not.toBe('');
    const res = await fetch(`${pair.proxy.origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: broken,
    });
    expect(res.status).toBe(400);
    const json = (await res.json()) as { error: { code: string; message: string } };
    expect(json.error.code).toBe('TP_ERR_INVALID_JSON');
    expect(json.error.message).toBe(`The request body is not valid JSON: ${expected}`);
  });
});
