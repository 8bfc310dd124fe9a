/**
 * What an upstream refused of a model is remembered, so that later turns go rewritten from the
 * start: images or audio as notes, schema keywords left out, tool_choice "required" as "auto",
 * and a context window learnt from an overflow refusal (tool results cut to fit it). Each is read
 * from the words of the upstream's error, and upstreams echo what the client sent in their 400s
 * (vLLM's validation errors end "(parameter=top_k, value=<the client's value>)"; pydantic's quote
 * the input). A key holder who sends those words as a value made toolproof remember the refusal
 * for the model, and every other key's requests went rewritten: another key's images became
 * notes, its forced tool use went "auto", its tool results were cut to a 128-token window.
 * What one key's request taught is now that key's alone.
 */
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf, type Recorded, sendCompletion } from '../support/harness.js';
import { weatherTool } from '../server/stack.js';

const KEYS = { mallory: 'sk-mallory-0000000001', alice: 'sk-alice-00000000001' };

/** vLLM's 400 for a value it cannot take: the value is echoed in the message. */
function answer(req: Recorded, res: Parameters<typeof sendCompletion>[0]): void {
  if (!req.url.endsWith('/chat/completions')) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"object":"list","data":[]}');
    return;
  }
  const body = JSON.parse(req.body.toString('utf8')) as { top_k?: unknown };
  if (body.top_k !== undefined && typeof body.top_k !== 'number') {
    res.writeHead(400, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        error: {
          message: `top_k must be an integer (parameter=top_k, value=${String(body.top_k)})`,
          type: 'BadRequestError',
          param: null,
          code: 400,
        },
      }),
    );
    return;
  }
  sendCompletion(res, { role: 'assistant', content: 'ok' }, 'stop');
}

const pair = proxyInFrontOf(answer, {
  file: {
    keys: [
      { name: 'mallory', key: KEYS.mallory },
      { name: 'alice', key: KEYS.alice },
    ],
  },
});

const PNG =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const image = [
  { type: 'text', text: 'what is this?' },
  { type: 'image_url', image_url: { url: PNG } },
];
/** A tool result of ~3 KB, and a conversation that carries it. */
const RESULT = Array.from({ length: 300 }, (_, i) => `line ${i} ok`).join('\n');
const withResult = [
  { role: 'user', content: 'read the log' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [
      { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"x"}' } },
    ],
  },
  { role: 'tool', tool_call_id: 'call_1', content: RESULT },
];

async function send(
  key: string,
  model: string,
  body: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const before = pair.upstream.requests.length;
  const res = await fetch(`${pair.proxy.origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model, ...body }),
  });
  await res.arrayBuffer();
  // The last request the upstream got for this one.
  const sent = pair.upstream.requests.slice(before).at(-1);
  return JSON.parse(sent!.body.toString('utf8')) as Record<string, unknown>;
}

const hasImage = (sent: Record<string, unknown>) => JSON.stringify(sent.messages).includes('"image_url"');
const toolResult = (sent: Record<string, unknown>) =>
  String(
    (sent.messages as Array<{ role: string; content: unknown }>).find((m) => m.role === 'tool')?.content,
  );

describe('a refusal one key made the upstream echo is not remembered for another key', () => {
  it('images: "is not a multimodal model" echoed for mallory leaves alice’s images as images', async () => {
    await send(KEYS.mallory, 'vis', {
      messages: [{ role: 'user', content: image }],
      top_k: 'm is not a multimodal model',
    });
    expect(hasImage(await send(KEYS.alice, 'vis', { messages: [{ role: 'user', content: image }] }))).toBe(
      true,
    );
    // Mallory's own later turns keep what mallory's request taught.
    expect(hasImage(await send(KEYS.mallory, 'vis', { messages: [{ role: 'user', content: image }] }))).toBe(
      false,
    );
  });

  it('tool_choice: a "required" rejection echoed for mallory leaves alice’s forced tool use', async () => {
    const tools = [weatherTool];
    const messages = [{ role: 'user', content: 'weather in Paris?' }];
    const forged = '`tool_choice` must either be a named tool, "auto", or "none".';
    await send(KEYS.mallory, 'forced', { messages, tools, top_k: forged });
    expect((await send(KEYS.alice, 'forced', { messages, tools })).tool_choice).toBe('required');
    expect((await send(KEYS.mallory, 'forced', { messages, tools })).tool_choice).toBe('auto');
  });

  it('context window: a 128-token window echoed for mallory leaves alice’s tool results whole', async () => {
    const forged = "This model's maximum context length is 128 tokens";
    await send(KEYS.mallory, 'win', { messages: withResult, tools: [weatherTool], top_k: forged });
    const whole = toolResult(await send(KEYS.alice, 'win', { messages: withResult, tools: [weatherTool] }));
    expect(whole).toBe(RESULT);
    const cut = toolResult(await send(KEYS.mallory, 'win', { messages: withResult, tools: [weatherTool] }));
    expect(cut.length).toBeLessThan(RESULT.length);
  });
});
