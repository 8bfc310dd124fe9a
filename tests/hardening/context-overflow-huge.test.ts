/**
 * A context window the backend spells past 2^53 (or past any number) was read as `max:
 * undefined`: Messages answered "prompt is too long: NaN tokens > undefined maximum", which Claude
 * Code's pattern does not match, so it did not compact. The counts are held at the largest safe
 * integer: every door's message carries numbers.
 */
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf } from '../support/harness.js';

/** Claude Code's patterns (protocol/context-overflow.ts): the prompt, or prompt + max_tokens. */
const CLAUDE_CODE = /prompt is too long[^0-9]*(\d+)\s*tokens?\s*>\s*(\d+)/i;
const CLAUDE_CODE_BUDGET = /input length and `max_tokens` exceed context limit: (\d+) \+ (\d+) > (\d+)/;

let message = '';
const pair = proxyInFrontOf((_req, res) => {
  res.writeHead(400, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { message, type: 'BadRequestError', param: null, code: 400 } }));
});

const windows = [
  "This model's maximum context length is 99999999999999999999 tokens. However, your request has 123 input tokens. Please reduce the length of the input messages.",
  `This model's maximum context length is ${'9'.repeat(400)} tokens. However, you requested 5 tokens (4 in the messages, 1 in the completion). Please reduce the length of the messages or completion.`,
  "This model's maximum context length is 9007199254740993 tokens. However, your request has 9007199254740999 input tokens.",
];

async function post(path: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${pair.proxy.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

describe('a context window spelled past 2^53', () => {
  it.each(windows.map((w, i) => [i, w]))(
    'window %i: numbers on every door, Claude Code still compacts',
    async (_i, w) => {
      message = w;
      const messages = await post('/v1/messages', {
        model: 'm1',
        max_tokens: 16,
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(messages.status).toBe(400);
      const text = (messages.json.error as { message: string }).message;
      expect(text).not.toMatch(/NaN|undefined|Infinity|e\+/);
      const m = CLAUDE_CODE.exec(text);
      expect(m ?? CLAUDE_CODE_BUDGET.exec(text), text).not.toBeNull();
      if (m) expect(Number(m[1])).toBeGreaterThan(Number(m[2]));
      for (const path of ['/v1/chat/completions', '/v1/responses']) {
        const body =
          path === '/v1/responses'
            ? { model: 'm1', input: 'hi' }
            : { model: 'm1', messages: [{ role: 'user', content: 'hi' }] };
        const r = await post(path, body);
        const err = r.json.error as { message: string; code: string };
        expect(err.code, path).toBe('context_length_exceeded');
        expect(err.message, path).not.toMatch(/NaN|undefined|Infinity|e\+/);
      }
    },
  );
});
