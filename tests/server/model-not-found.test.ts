/**
 * An unknown model, on every door, in the shape the official SDKs parse: OpenAI's
 * `{"error":{"message","type":"invalid_request_error","param":"model","code":"model_not_found"}}`
 * (404, the openai package's NotFoundError with `code` model_not_found) on chat completions,
 * Responses, completions, embeddings, the pass-through and GET /v1/models/{id}; Anthropic's
 * `{"type":"error","error":{"type":"not_found_error",...}}` (404, @anthropic-ai/sdk's
 * NotFoundError) on Messages, count_tokens and an Anthropic client's models.retrieve. toolproof's
 * own code (TP_ERR_MODEL_NOT_FOUND) stays on the log line. A key it does not accept is OpenAI's
 * `invalid_api_key`, and Anthropic's authentication_error for Anthropic's clients.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeUpstream, fakeUpstream, type RunningProxy, startProxy } from '../support/harness.js';
import { createSimulator, type Simulator } from '../../simulator/index.js';
import { logCapture } from './test-utils.js';

let up: FakeUpstream;
let proxy: RunningProxy;
let openai: OpenAI;
let anthropic: Anthropic;
const log = logCapture();

beforeAll(async () => {
  up = await fakeUpstream();
  // No default upstream: a name the YAML does not map is unknown to toolproof itself.
  proxy = await startProxy({}, { models: { real: { upstream: up.url } } }, log.stream);
  openai = new OpenAI({ baseURL: `${proxy.origin}/v1`, apiKey: 'unused', maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: proxy.origin, apiKey: 'unused', maxRetries: 0 });
});
afterAll(async () => {
  await proxy.close();
  await up.close();
});

async function caught(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => {
      throw new Error('expected an error');
    },
    (e: unknown) => e,
  );
}

function expectOpenAINotFound(err: unknown, what: string): void {
  expect(err, what).toBeInstanceOf(OpenAI.NotFoundError);
  const e = err as InstanceType<typeof OpenAI.NotFoundError>;
  expect(e.status, what).toBe(404);
  expect(e.code, what).toBe('model_not_found');
  expect(e.param, what).toBe('model');
  expect(e.type, what).toBe('invalid_request_error');
  expect(e.error, what).toMatchObject({ message: expect.stringContaining('"nope-7b"') });
}

function expectAnthropicNotFound(err: unknown, what: string): void {
  expect(err, what).toBeInstanceOf(Anthropic.NotFoundError);
  const e = err as InstanceType<typeof Anthropic.NotFoundError>;
  expect(e.status, what).toBe(404);
  expect(e.error, what).toMatchObject({
    type: 'error',
    error: { type: 'not_found_error', message: expect.stringContaining('"nope-7b"') },
  });
}

describe('an unknown model, through the openai client', () => {
  it('chat completions, streamed or not', async () => {
    const messages = [{ role: 'user' as const, content: 'hi' }];
    expectOpenAINotFound(
      await caught(openai.chat.completions.create({ model: 'nope-7b', messages })),
      'chat',
    );
    expectOpenAINotFound(
      await caught(openai.chat.completions.create({ model: 'nope-7b', messages, stream: true })),
      'chat stream',
    );
  });

  it('Responses, streamed or not', async () => {
    expectOpenAINotFound(
      await caught(openai.responses.create({ model: 'nope-7b', input: 'hi' })),
      'responses',
    );
    expectOpenAINotFound(
      await caught(openai.responses.create({ model: 'nope-7b', input: 'hi', stream: true })),
      'responses stream',
    );
  });

  it('completions, embeddings and models.retrieve', async () => {
    expectOpenAINotFound(
      await caught(openai.completions.create({ model: 'nope-7b', prompt: 'hi' })),
      'completions',
    );
    expectOpenAINotFound(
      await caught(openai.embeddings.create({ model: 'nope-7b', input: 'hi' })),
      'embeddings',
    );
    expectOpenAINotFound(await caught(openai.models.retrieve('nope-7b')), 'models.retrieve');
  });

  it('a pass-through route that names the model', async () => {
    const res = await fetch(`${proxy.origin}/tokenize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'nope-7b', prompt: 'hi' }),
    });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({
      error: { type: 'invalid_request_error', param: 'model', code: 'model_not_found' },
    });
  });

  it("toolproof's own code stays on the log line", async () => {
    await caught(
      openai.chat.completions.create(
        { model: 'nope-7b', messages: [{ role: 'user', content: 'hi' }] },
        { headers: { 'x-request-id': 'mnf-log' } },
      ),
    );
    await new Promise((r) => setTimeout(r, 20));
    const line = log.lines.find((l) => l.reqId === 'mnf-log' && l.msg === 'request');
    expect(line?.error).toMatchObject({ code: 'TP_ERR_MODEL_NOT_FOUND', status: 404 });
  });
});

describe('an unknown model, through the Anthropic client', () => {
  it('Messages, streamed or not', async () => {
    const body = { model: 'nope-7b', max_tokens: 10, messages: [{ role: 'user' as const, content: 'hi' }] };
    expectAnthropicNotFound(await caught(anthropic.messages.create(body)), 'messages');
    expectAnthropicNotFound(
      await caught(anthropic.messages.create({ ...body, stream: true })),
      'messages stream',
    );
  });

  it('count_tokens', async () => {
    expectAnthropicNotFound(
      await caught(
        anthropic.messages.countTokens({ model: 'nope-7b', messages: [{ role: 'user', content: 'hi' }] }),
      ),
      'count_tokens',
    );
  });

  it('models.retrieve', async () => {
    expectAnthropicNotFound(await caught(anthropic.models.retrieve('nope-7b')), 'models.retrieve');
  });
});

describe('a name the upstream does not serve (its own 404)', () => {
  let sim: Simulator;
  let behind: RunningProxy;
  beforeAll(async () => {
    // vLLM answers a name it does not serve with 404 "The model `x` does not exist."
    sim = await createSimulator({ personality: 'vllm', checkModel: true, modelName: 'served-7b' });
    behind = await startProxy({ TOOLPROOF_UPSTREAM_URL: sim.url });
  });
  afterAll(async () => {
    await behind.close();
    await sim.close();
  });

  it("is OpenAI's model_not_found, the upstream's body kept beside it", async () => {
    const client = new OpenAI({ baseURL: `${behind.origin}/v1`, apiKey: 'unused', maxRetries: 0 });
    const err = (await caught(
      client.chat.completions.create({ model: 'nope-7b', messages: [{ role: 'user', content: 'hi' }] }),
    )) as InstanceType<typeof OpenAI.NotFoundError>;
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect(err.code).toBe('model_not_found');
    expect(err.type).toBe('invalid_request_error');
    expect(err.param).toBe('model');
    expect(err.error).toMatchObject({
      message: expect.stringContaining('nope-7b'),
      upstream: expect.anything(),
    });
    const streamed = (await caught(
      client.chat.completions.create({
        model: 'nope-7b',
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      }),
    )) as InstanceType<typeof OpenAI.NotFoundError>;
    expect(streamed).toBeInstanceOf(OpenAI.NotFoundError);
    expect(streamed.code).toBe('model_not_found');
  });

  it("is Anthropic's not_found_error on Messages", async () => {
    const client = new Anthropic({ baseURL: behind.origin, apiKey: 'unused', maxRetries: 0 });
    const err = await caught(
      client.messages.create({
        model: 'nope-7b',
        max_tokens: 10,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    );
    expect(err).toBeInstanceOf(Anthropic.NotFoundError);
    expect((err as InstanceType<typeof Anthropic.NotFoundError>).error).toMatchObject({
      type: 'error',
      error: { type: 'not_found_error', message: expect.stringContaining('nope-7b') },
    });
  });
});

describe('keys', () => {
  it('the 404 names only the models the key may see, as /v1/models lists them; a wrong key is invalid_api_key', async () => {
    const key = 'sk-bob-000000000001';
    const keyed = await startProxy(
      {},
      {
        models: { 'qwen-a': { upstream: up.url }, 'secret-b': { upstream: up.url } },
        keys: [{ name: 'bob', key, models: ['qwen*'] }],
      },
    );
    try {
      const client = new OpenAI({ baseURL: `${keyed.origin}/v1`, apiKey: key, maxRetries: 0 });
      const err = (await caught(
        client.chat.completions.create({ model: 'qwen-nope', messages: [{ role: 'user', content: 'hi' }] }),
      )) as InstanceType<typeof OpenAI.NotFoundError>;
      expect(err).toBeInstanceOf(OpenAI.NotFoundError);
      expect(err.code).toBe('model_not_found');
      expect(err.message).toContain('qwen-a');
      expect(err.message).not.toContain('secret-b');
      const listed = (await client.models.list()).data.map((m) => m.id);
      expect(listed).not.toContain('secret-b');
      // A key it does not accept: OpenAI's invalid_api_key; Anthropic's shape for its clients,
      // on the model list too.
      const wrong = new OpenAI({ baseURL: `${keyed.origin}/v1`, apiKey: 'sk-wrong-0000001', maxRetries: 0 });
      const refused = (await caught(wrong.models.list())) as InstanceType<typeof OpenAI.AuthenticationError>;
      expect(refused).toBeInstanceOf(OpenAI.AuthenticationError);
      expect(refused.code).toBe('invalid_api_key');
      const claude = new Anthropic({ baseURL: keyed.origin, apiKey: 'sk-wrong-0000001', maxRetries: 0 });
      const denied = (await caught(claude.models.retrieve('qwen-a'))) as InstanceType<
        typeof Anthropic.AuthenticationError
      >;
      expect(denied).toBeInstanceOf(Anthropic.AuthenticationError);
      expect(denied.error).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    } finally {
      await keyed.close();
    }
  });
});
