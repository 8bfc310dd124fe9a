/**
 * JSON.parse interns every object key, and V8 hashes a string past 16,383 characters by its
 * length alone: n keys of one such length, alike but for their ends, are each compared with all
 * the others while the body is parsed (1,000 keys of 20 KB: 0.4-0.9 s; 250: 30-80 ms), before any
 * door reads a field. Any field takes them (`metadata` on every API, a tool schema's
 * `properties`): through the server, a Responses body whose `metadata` held 1,000 such keys cost
 * 1,652 ms of CPU against 1,234 ms for as many keys of as many bytes each hashed apart (each of
 * its own length); at the 32 MB body limit (1,950 keys of 16.4 KB) ~2 s of the loop. An
 * upstream's body is parsed the same way. Now the byte scan that already counts a body's keys
 * before it is parsed (protocol/json-keys.ts) refuses more than MAX_LONG_KEYS (16) keys longer
 * than 16,383 bytes: the door's 400 in its own shape, the upstream's 502.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { excessKeys, LONG_KEY_BYTES, MAX_LONG_KEYS } from '../../protocol/json-keys.js';
import { proxyInFrontOf, textCompletion } from '../support/harness.js';

/** `n` keys of LONG_KEY_BYTES + 7 characters, alike but for their last six, each to 'v'. */
const longKeys = (n: number): Record<string, string> =>
  Object.fromEntries(
    Array.from({ length: n }, (_, i) => [
      `${'k'.repeat(LONG_KEY_BYTES + 1)}${String(i).padStart(6, '0')}`,
      'v',
    ]),
  );

/** The upstream: a plain answer, or (after `hostile` is set) one carrying MAX_LONG_KEYS + 1 long keys. */
let hostile = false;
const pair = proxyInFrontOf((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  const answer = JSON.parse(textCompletion('done')) as Record<string, unknown>;
  res.end(JSON.stringify(hostile ? { ...answer, extra: longKeys(MAX_LONG_KEYS + 1) } : answer));
});

const openai = () => new OpenAI({ baseURL: `${pair.proxy.origin}/v1`, apiKey: 'none', maxRetries: 0 });
const anthropic = () => new Anthropic({ baseURL: pair.proxy.origin, apiKey: 'none', maxRetries: 0 });
const tools = [{ type: 'function' as const, function: { name: 'f', parameters: { type: 'object' } } }];

const doors = {
  chat: (metadata: Record<string, string>) =>
    openai().chat.completions.create({
      model: 'm1',
      messages: [{ role: 'user', content: 'hi' }],
      tools,
      metadata,
    }),
  responses: (metadata: Record<string, string>) =>
    openai().responses.create({ model: 'm1', input: 'hi', metadata }),
  messages: (metadata: Record<string, string>) =>
    anthropic().messages.create({
      model: 'm1',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'hi' }],
      metadata: metadata as never,
    }),
};

describe('object keys past V8 hash length', () => {
  it('the scan counts them: at most MAX_LONG_KEYS, anywhere in a body', () => {
    const body = (n: number) => Buffer.from(JSON.stringify({ a: [{ b: longKeys(n) }] }));
    expect(excessKeys(body(MAX_LONG_KEYS))).toBeNull();
    expect(excessKeys(body(MAX_LONG_KEYS + 1))).toEqual({ kind: 'long', limit: MAX_LONG_KEYS });
    // a long string value is no key
    expect(excessKeys(Buffer.from(JSON.stringify({ a: Object.keys(longKeys(100)) })))).toBeNull();
  });

  it.each(Object.entries(doors))(
    `%s: ${MAX_LONG_KEYS} long keys are served, one more is the door's 400 in its own shape`,
    async (door, send) => {
      hostile = false;
      await expect(send(longKeys(MAX_LONG_KEYS))).resolves.toBeDefined();
      const refused = await send(longKeys(MAX_LONG_KEYS + 1)).then(
        () => undefined,
        (e: unknown) => e,
      );
      if (door === 'messages') {
        expect(refused).toBeInstanceOf(Anthropic.BadRequestError);
        const err = refused as InstanceType<typeof Anthropic.BadRequestError>;
        expect(err.error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
        expect(err.message).toContain(`longer than ${LONG_KEY_BYTES} bytes`);
      } else {
        expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
        const err = refused as InstanceType<typeof OpenAI.BadRequestError>;
        expect(err.error).toMatchObject({ type: 'invalid_request_error', param: 'body' });
        expect(err.message).toContain(`longer than ${LONG_KEY_BYTES} bytes`);
      }
    },
    30_000,
  );

  it("an upstream answer naming more is the upstream's fault: a 502", async () => {
    hostile = true;
    try {
      const failed = await doors.chat({}).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(failed).toBeInstanceOf(OpenAI.APIError);
      expect((failed as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
      expect((failed as Error).message).toContain(`longer than ${LONG_KEY_BYTES} bytes`);
    } finally {
      hostile = false;
    }
  }, 30_000);
});
