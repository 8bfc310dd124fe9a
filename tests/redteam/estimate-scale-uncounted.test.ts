/**
 * The window estimate's calibration (policies/kit/overflow.ts calibrationScale, server/chat/
 * attempt.ts fitLearntWindow): when a backend refuses a prompt for its length, the tokens it
 * reported over the estimate of that prompt give a scale, remembered per upstream, model and key
 * (without keys or with the flat keys: one memory for every client), and every later request's
 * window is divided by it (tool results cut to what the divided window keeps). The estimate counts
 * text and images; an audio or video part it cannot count (0 bytes), and an upstream's count can
 * be any number. Before: one refused voice note (60,000 tokens against a ~20-token estimate) or
 * one refusal reporting 999,999,999 prompt tokens set the largest scale, 64, and every later
 * request of the model, whoever sent it, had its window taken as 8192 / 64 = 128 tokens: a 4k tool
 * result that fits the window whole went upstream cut to a few hundred characters, for as long
 * as the model stays in use (each use keeps the scale another TTL). Now the scale is learnt only
 * from a count of what the estimate counts, and one no tokenizer gives for it (more than two
 * tokens a byte of the prompt) is none.
 */
import { describe, expect, it } from 'vitest';
import { refusalScale } from '../../policies/kit/overflow.js';
import { proxyInFrontOf, type Recorded, sendCompletion } from '../support/harness.js';

const WINDOW = 8192;

function refuse(res: Parameters<typeof sendCompletion>[0], prompt: number): void {
  res.writeHead(400, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({
      object: 'error',
      message: `This model's maximum context length is ${WINDOW} tokens. However, you requested ${prompt + 1000} tokens (${prompt} in the messages, 1000 in the completion). Please reduce the length of the messages or completion.`,
      type: 'BadRequestError',
      param: null,
      code: 400,
    }),
  );
}

/**
 * vLLM with an 8k window, counting a token for every 4 bytes of the messages' JSON: an audio part
 * costs 60,000 more; 'overflow, bogus count' is refused as 999,999,999 tokens.
 */
function answer(req: Recorded, res: Parameters<typeof sendCompletion>[0]): void {
  if (!req.url.endsWith('/chat/completions')) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"object":"list","data":[]}');
    return;
  }
  const body = JSON.parse(req.body.toString('utf8')) as { messages: Array<{ content: unknown }> };
  const parts = body.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : []));
  const audio = parts.some((p: { type?: string }) => p.type === 'input_audio') ? 60_000 : 0;
  const tokens = Math.ceil(JSON.stringify(body.messages).length / 4) + audio;
  if (body.messages.some((m) => m.content === 'overflow, bogus count')) refuse(res, 999_999_999);
  else if (tokens > WINDOW) refuse(res, tokens);
  else sendCompletion(res, { role: 'assistant', content: 'ok' }, 'stop');
}

const pair = proxyInFrontOf(answer);

/** A tool result of ~1,000 tokens. */
const result = (turn: number) => Array.from({ length: 300 }, (_, i) => `t${turn} line ${i} ok`).join('\n');

async function chat(model: string, messages: unknown[]): Promise<number> {
  const res = await fetch(`${pair.proxy.origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages }),
  });
  await res.text();
  return res.status;
}

/**
 * Another client's session of 12 reads (~13k tokens, over the window): refused, then sent again
 * with the older results cut. How many results went upstream whole.
 */
async function wholeResults(model: string): Promise<number> {
  const messages: unknown[] = [{ role: 'user', content: 'read the logs' }];
  for (let t = 0; t < 12; t++)
    messages.push(
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: `call_${t}`, type: 'function', function: { name: 'read', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: `call_${t}`, content: result(t) },
    );
  expect(await chat(model, messages)).toBe(200);
  const last = pair.upstream.requests.at(-1)!;
  const sent = JSON.parse(last.body.toString('utf8')) as {
    messages: Array<{ role: string; content: string; tool_call_id?: string }>;
  };
  return sent.messages.filter(
    (m) => m.role === 'tool' && m.content === result(Number(m.tool_call_id?.slice(5))),
  ).length;
}

describe('the estimate scale learnt from a refusal', () => {
  it('with nothing learnt, the newer reads of a session over the window stay whole', async () => {
    expect(await wholeResults('m-clean')).toBeGreaterThanOrEqual(3);
  });

  it('a refused voice note (audio the estimate cannot count) does not shrink the window for every later request', async () => {
    const status = await chat('m-audio', [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'transcribe this' },
          { type: 'input_audio', input_audio: { data: 'UklGRiQAAABXQVZFZm10IBAAAAABAAEA', format: 'wav' } },
        ],
      },
    ]);
    expect(status).toBe(400);
    expect(await wholeResults('m-audio')).toBe(await wholeResults('m-clean'));
  });

  it('a refusal reporting 999,999,999 prompt tokens for a few words is no count of them', async () => {
    expect(await chat('m-bogus', [{ role: 'user', content: 'overflow, bogus count' }])).toBe(400);
    expect(await wholeResults('m-bogus')).toBe(await wholeResults('m-clean'));
  });
});

describe('refusalScale', () => {
  const text = (n: number) => [{ role: 'user' as const, content: 'x'.repeat(n) }];
  it('calibrates by a count of the text, and by nothing else', () => {
    // 3,000 bytes: ~1,000 estimated tokens (and 4 for the message)
    expect(refusalScale(1500, undefined, text(3000))).toBe(2);
    expect(refusalScale(5000, undefined, text(3000))).toBe(8);
    expect(refusalScale(999_999_999, undefined, text(3000))).toBe(1);
    expect(refusalScale(Number.MAX_SAFE_INTEGER, undefined, text(3000))).toBe(1);
    const audio = [
      {
        role: 'user' as const,
        content: [
          { type: 'text' as const, text: 'x'.repeat(3000) },
          { type: 'input_audio' as const, input_audio: { data: '', format: 'wav' } },
        ],
      },
    ];
    expect(refusalScale(1500, undefined, audio as never)).toBe(1);
  });
});
