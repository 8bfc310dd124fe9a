/**
 * vLLM's `best_of` (/v1/completions, and its extension on chat): the backend generates best_of
 * sequences on the GPU for each request and returns the best n. vLLM checks only best_of >= n
 * (SamplingParams._verify_args), no upper bound, so one request's `best_of: 100000` asked a
 * hundred thousand sequences of a shared slot. Past 128 (MAX_CHOICES, the bound `n` already has;
 * a best_of under n is refused by vLLM anyway) it is a 400 naming best_of in the OpenAI shape,
 * never sent upstream; 128 and under go as sent.
 */
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf } from '../support/harness.js';

let reached: Array<Record<string, unknown>> = [];
const pair = proxyInFrontOf((req, res) => {
  reached.push(JSON.parse(req.body.toString()) as Record<string, unknown>);
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(
    req.url.endsWith('/chat/completions')
      ? JSON.stringify({
          id: 'c',
          object: 'chat.completion',
          created: 0,
          model: 'm1',
          choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
        })
      : JSON.stringify({
          id: 'c',
          object: 'text_completion',
          created: 0,
          model: 'm1',
          choices: [{ index: 0, text: 'ok', finish_reason: 'stop', logprobs: null }],
        }),
  );
});
const client = () => new OpenAI({ baseURL: `${pair.proxy.origin}/v1`, apiKey: 'none', maxRetries: 0 });
const tools = [{ type: 'function' as const, function: { name: 'f', parameters: { type: 'object' } } }];

const doors = {
  '/v1/completions': (best_of: number) =>
    client().completions.create({ model: 'm1', prompt: 'hi', max_tokens: 4, best_of }),
  'chat without tools': (best_of: number) =>
    client().chat.completions.create({
      model: 'm1',
      messages: [{ role: 'user', content: 'hi' }],
      // @ts-expect-error vLLM's extension
      best_of,
    }),
  'chat with tools': (best_of: number) =>
    client().chat.completions.create({
      model: 'm1',
      messages: [{ role: 'user', content: 'hi' }],
      tools,
      // @ts-expect-error vLLM's extension
      best_of,
    }),
};

describe.each(Object.keys(doors) as Array<keyof typeof doors>)('%s', (door) => {
  it('best_of past 128 is a 400 naming best_of, never sent upstream', async () => {
    reached = [];
    const err = await doors[door](100_000).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    const e = err as InstanceType<typeof OpenAI.BadRequestError>;
    expect(e.message).toMatch(/best_of/);
    expect((e.error as { type?: string }).type).toBe('invalid_request_error');
    expect(reached).toHaveLength(0);
  });

  it('best_of of 128 goes as sent', async () => {
    reached = [];
    await doors[door](128);
    expect(reached.length).toBeGreaterThan(0);
    expect(reached[0]?.best_of).toBe(128);
  });
});
