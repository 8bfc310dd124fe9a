/**
 * Every front door refuses a body nested past the bound before anything recursive runs on it
 * (translation, JSON.stringify upstream), with a 400 in its own API's shape naming the client's
 * own field, never a 500.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../server/stack.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack.close());

const deep = (n: number): string => {
  let s = '{"type":"string"}';
  for (let i = 0; i < n; i++) s = `{"type":"object","properties":{"a":${s}}}`;
  return s;
};

const post = (path: string, body: string) =>
  fetch(`${stack.origin}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });

describe('a 50,000-level tool schema', () => {
  it('/v1/messages: Anthropic-shaped 400 naming tools.0.input_schema', async () => {
    const res = await post(
      '/v1/messages',
      `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"t","input_schema":${deep(50_000)}}]}`,
    );
    expect(res.status).toBe(400);
    const body = (await res.json()) as { type: string; error: { type: string; message: string } };
    expect(body.type).toBe('error');
    expect(body.error.type).toBe('invalid_request_error');
    expect(body.error.message).toContain('tools.0.input_schema');
  });

  it('/v1/responses: OpenAI-shaped 400 naming tools.0.parameters', async () => {
    const res = await post(
      '/v1/responses',
      `{"model":"m","input":"hi","tools":[{"type":"function","name":"t","parameters":${deep(50_000)}}]}`,
    );
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { param: string; code: string } };
    expect(body.error.code).toBe('TP_ERR_INVALID_FIELD');
    expect(body.error.param.startsWith('tools.0.parameters')).toBe(true);
  });
});
