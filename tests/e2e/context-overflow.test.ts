/**
 * A backend that says the conversation does not fit (vLLM's and llama-server's 400 bodies,
 * tests/fixtures/agents/context-overflow-bodies.json) reaches each front door's client as the
 * error that client recovers from, through the official SDKs on loopback: Anthropic's
 * "prompt is too long: N tokens > M maximum" (Claude Code compacts on it), OpenAI's
 * `context_length_exceeded` code on chat and on Responses, streamed and not.
 */
import { readFileSync } from 'node:fs';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeUpstream, startFakeUpstream } from '../support/fake-upstream.js';
import { type RunningProxy, startProxy } from '../support/harness.js';

const bodies = JSON.parse(
  readFileSync(new URL('../fixtures/agents/context-overflow-bodies.json', import.meta.url), 'utf8'),
) as Record<string, unknown>;

let upstream: FakeUpstream;
let proxy: RunningProxy;
/** Which body the fake backend answers with next. */
let answer = 'llama_fields';

beforeAll(async () => {
  upstream = await startFakeUpstream((_body, res) => {
    res.writeHead(400, { 'content-type': 'application/json' });
    res.end(JSON.stringify(bodies[answer]));
  });
  proxy = await startProxy({ TOOLPROOF_UPSTREAM_URL: upstream.url });
});
afterAll(async () => {
  await proxy.close();
  await upstream.close();
});

const anthropic = () => new Anthropic({ baseURL: proxy.origin, apiKey: 'k', maxRetries: 0, timeout: 15_000 });
const openai = () => new OpenAI({ baseURL: `${proxy.origin}/v1`, apiKey: 'k', maxRetries: 0 });
const tools = [
  { name: 'Read', description: 'read', input_schema: { type: 'object' as const, properties: {} } },
];

async function caught(p: Promise<unknown>): Promise<Record<string, unknown>> {
  try {
    await p;
  } catch (err) {
    return err as Record<string, unknown>;
  }
  throw new Error('expected an error');
}

describe('context overflow on /v1/messages (Claude Code)', () => {
  for (const [name, expected] of [
    ['llama_fields', 'prompt is too long: 9000 tokens > 8192 maximum'],
    ['vllm_input', 'prompt is too long: 40001 tokens > 32768 maximum'],
    // vLLM's later wordings (vllm/renderers/params.py, the v1 engine): relayed before as an
    // unknown 400, no cue to compact.
    ['vllm_contains', 'prompt is too long: 10000 tokens > 8192 maximum'],
    ['vllm_passed_chars', 'prompt is too long: 8193 tokens > 8192 maximum'],
    ['vllm_decoder', 'prompt is too long: 8825 tokens > 8192 maximum'],
    [
      'vllm_split',
      'input length and `max_tokens` exceed context limit: 8512 + 32000 > 32768, decrease input length or `max_tokens` and try again',
    ],
  ] as const) {
    it(`${name}: non-streamed and streamed`, async () => {
      answer = name;
      const params = {
        model: 'm',
        max_tokens: 32000,
        tools,
        messages: [{ role: 'user' as const, content: 'hi' }],
      };
      const err = await caught(anthropic().messages.create(params));
      expect(err).toBeInstanceOf(Anthropic.BadRequestError);
      expect(err.status).toBe(400);
      expect(err.error).toEqual({
        type: 'error',
        error: { type: 'invalid_request_error', message: expected },
      });
      const streamed = await caught(anthropic().messages.stream(params).finalMessage());
      expect((streamed as { error?: unknown }).error).toEqual({
        type: 'error',
        error: { type: 'invalid_request_error', message: expected },
      });
    });
  }
});

describe('context overflow on the OpenAI front doors (Codex, chat agents)', () => {
  it('/v1/responses: error.code context_length_exceeded, streamed and not', async () => {
    answer = 'vllm_input';
    const err = await caught(openai().responses.create({ model: 'm', input: 'hi' }));
    expect(err.status).toBe(400);
    expect(err.code).toBe('context_length_exceeded');
    // Streamed: the error arrives before the stream opens, as an HTTP 400 with the same code.
    const streamed = await caught(
      (async () => {
        for await (const _ of await openai().responses.create({ model: 'm', input: 'hi', stream: true })) {
          // drain
        }
      })(),
    );
    expect(streamed.code).toBe('context_length_exceeded');
  });

  it("/v1/chat/completions: vLLM's later wordings are context_length_exceeded too", async () => {
    for (const name of [
      'vllm_contains_at_least',
      'vllm_passed_tokens',
      'vllm_passed_chars',
      'vllm_decoder',
    ]) {
      answer = name;
      const err = await caught(
        openai().chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
      );
      expect(err.code, name).toBe('context_length_exceeded');
      expect(String(err.message), name).toMatch(/maximum context length is 8192 tokens/);
    }
  });

  it('/v1/chat/completions: OpenAI code context_length_exceeded, the backend body kept', async () => {
    answer = 'llama_words';
    const err = await caught(
      openai().chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    );
    expect(err.status).toBe(400);
    expect(err.code).toBe('context_length_exceeded');
    expect(err.param).toBe('messages');
    expect(String(err.message)).toMatch(/maximum context length is 8192 tokens/);
    expect((err.error as { upstream?: unknown }).upstream).toEqual(bodies.llama_words);
  });
});
