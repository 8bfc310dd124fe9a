/**
 * A 400 names what is wrong with a union field: an object `tool_choice` missing its `function`
 * was told "must be string" (the first branch's error of the schema's anyOf), about a branch
 * the object never meant (first seen on `{"type":"allowed_tools", ...}`, which since sessions14
 * goes upstream as the choice it means: tests/e2e/allowed-tools.test.ts). The error formatter (decisiveError, server/error-handler.ts) reports
 * the branch of the value's own type, for every union field on every door.
 */
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf } from '../support/harness.js';

const pair = proxyInFrontOf(() => undefined);

async function post(
  path: string,
  body: unknown,
): Promise<{ status: number; message: string; param: unknown }> {
  const res = await fetch(`${pair.proxy.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as { error: { message: string; param?: unknown } };
  return { status: res.status, message: json.error.message, param: json.error.param };
}

const chat = (extra: Record<string, unknown>) => ({
  model: 'm1',
  messages: [{ role: 'user', content: 'hi' }],
  ...extra,
});

describe('validation messages of union fields', () => {
  it('chat tool_choice as an object without its function: the object branch is reported', async () => {
    const r = await post('/v1/chat/completions', chat({ tool_choice: { type: 'function' } }));
    expect(r.status).toBe(400);
    expect(r.message).toBe('Missing required field "tool_choice.function".');
    expect(r.param).toBe('tool_choice.function');
  });

  it('chat tool_choice of neither type: both types named', async () => {
    const r = await post('/v1/chat/completions', chat({ tool_choice: 42 }));
    expect(r.message).toBe('Invalid field "tool_choice": must be string or object.');
  });

  it('chat tool_choice with a function name that is not a string: the nested field', async () => {
    const r = await post(
      '/v1/chat/completions',
      chat({ tool_choice: { type: 'function', function: { name: 1 } } }),
    );
    expect(r.message).toBe('Invalid field "tool_choice.function.name": must be string.');
  });

  it('a nullable field keeps its own type in the message, not "null"', async () => {
    expect((await post('/v1/chat/completions', chat({ stream: 'yes' }))).message).toBe(
      'Invalid field "stream": must be boolean or null.',
    );
    expect((await post('/v1/chat/completions', chat({ n: 500 }))).message).toBe(
      'Invalid field "n": must be <= 128.',
    );
  });

  it('chat message content of no accepted type', async () => {
    const r = await post('/v1/chat/completions', { model: 'm1', messages: [{ role: 'user', content: 5 }] });
    expect(r.message).toBe('Invalid field "messages.0.content": must be string or array or null.');
  });

  it('Responses tool_choice: an unknown string names the allowed values', async () => {
    const r = await post('/v1/responses', { model: 'm1', input: 'hi', tool_choice: 'sometimes' });
    expect(r.status).toBe(400);
    expect(r.message).toContain('"auto", "none", "required"');
  });

  it('Messages content as a list holding a number: the item is named', async () => {
    const r = await post('/v1/messages', {
      model: 'm1',
      max_tokens: 10,
      messages: [{ role: 'user', content: [1] }],
    });
    expect(r.status).toBe(400);
    expect(r.message).toContain('messages.0.content.0');
    expect(r.message).toContain('must be object');
  });
});
