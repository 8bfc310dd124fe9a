/**
 * The chat door without tools relays the upstream's answer unread (its fast lane). A body that is
 * not a JSON object under a status below 400 (a reverse proxy's HTML page, plain text, nothing)
 * went to the client as it came, with that status and labelled `application/json`: an OpenAI SDK
 * got an unparseable answer, or `null` as its completion. Now it is the door's 502 in the OpenAI
 * error shape, as on the tool path and every other door, the upstream's text (cut to 4,000
 * characters) under `error.upstream`. A JSON object, an error or not, is still relayed byte for
 * byte; an error status was already answered in the OpenAI shape, its status kept.
 */
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { isJsonObjectText } from '../../server/chat/json-driver.js';
import { proxyInFrontOf } from '../support/harness.js';
import { budget, pick } from './surface-budget.js';

const BIG_PAGE = `<html><body>${'<p>proxy says no</p>'.repeat(10_000)}</body></html>`;
const ANSWERS: Record<string, [number, string, string]> = {
  html: [200, 'text/html', '<html><body><h1>Sign in to the gateway</h1></body></html>'],
  big: [200, 'text/html', BIG_PAGE],
  text: [200, 'text/plain', 'upstream connect error or disconnect/reset before headers'],
  empty: [200, 'application/json', ''],
  null: [200, 'application/json', 'null'],
  list: [200, 'application/json', ' [] '],
  redirect: [302, 'text/html', '<a href="/login">Found</a>'],
  object: [200, 'application/json', ' {"id":"x","object":"chat.completion",\n"weird":  1.50,"choices":[]}\n'],
  'error object': [200, 'application/json', '{"error":{"message":"model crashed","type":"server_error"}}'],
  'html 502': [502, 'text/html', '<html><body>502 Bad Gateway</body></html>'],
};

const pair = proxyInFrontOf((req, res) => {
  const which = (JSON.parse(req.body.toString()) as { messages: Array<{ content: string }> }).messages[0]!
    .content;
  const [status, type, body] = ANSWERS[which]!;
  res.writeHead(status, { 'content-type': type, ...(status === 302 ? { location: '/login' } : {}) });
  res.end(body);
});

async function chat(which: string): Promise<Response> {
  return fetch(`${pair.proxy.origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm1', messages: [{ role: 'user', content: which }] }),
    redirect: 'manual',
  });
}

describe('the chat door without tools, an upstream body that is not a JSON object', () => {
  it.each(['html', 'text', 'empty', 'null', 'list', 'redirect'])(
    '%s: the 502 in the OpenAI shape, the upstream text under error.upstream',
    async (which) => {
      const res = await chat(which);
      expect(res.status).toBe(502);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      const body = (await res.json()) as { error: Record<string, unknown> };
      const [status, type, text] = ANSWERS[which]!;
      expect(body.error).toMatchObject({
        type: 'upstream_error',
        code: 'TP_ERR_UPSTREAM_BAD_RESPONSE',
        param: null,
        upstream: text.trim(),
      });
      expect(body.error.message).toContain(`HTTP ${status}`);
      expect(body.error.message).toContain(type);
    },
  );

  it('a long page is cut to 4,000 characters', async () => {
    const body = (await (await chat('big')).json()) as { error: { upstream: string } };
    expect(body.error.upstream).toBe(BIG_PAGE.slice(0, 4000));
  });

  it('an OpenAI SDK client gets an APIError it can read', async () => {
    const client = new OpenAI({ baseURL: `${pair.proxy.origin}/v1`, apiKey: 'k', maxRetries: 0 });
    const err = await client.chat.completions
      .create({ model: 'm1', messages: [{ role: 'user', content: 'html' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
    expect((err as InstanceType<typeof OpenAI.APIError>).code).toBe('TP_ERR_UPSTREAM_BAD_RESPONSE');
  });

  it.each(['object', 'error object'])('%s: relayed byte for byte', async (which) => {
    const res = await chat(which);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(ANSWERS[which]![2]);
  });

  it('an HTML error status keeps its status, in the OpenAI shape', async () => {
    const res = await chat('html 502');
    expect(res.status).toBe(502);
    const body = (await res.json()) as { error: Record<string, unknown> };
    expect(body.error).toMatchObject({
      code: 'TP_ERR_UPSTREAM_ERROR',
      upstream: '<html><body>502 Bad Gateway</body></html>',
    });
  });
});

describe('the look at a relayed body: x1 vs x4', () => {
  it('whitespace around it (all it reads past the first and last bytes)', () => {
    budget(
      'isJsonObjectText, whitespace length',
      (size, rnd) => {
        // The same bytes as a string grown a unit at a time and then copied into a Buffer, written
        // straight into one: growing the string was ~1 s of the row's ~1.6 s of CPU.
        const pad = Buffer.allocUnsafe(size + 1);
        let n = 0;
        while (n < size) {
          const unit = pick(rnd, [' ', '\n', '\r\n', '\t']);
          pad[n++] = unit.charCodeAt(0);
          if (unit.length > 1) pad[n++] = unit.charCodeAt(1);
        }
        const body = pad.subarray(0, n);
        return Buffer.concat([body, Buffer.from(pick(rnd, ['{"a":1}', '<html>', ''])), body]);
      },
      isJsonObjectText,
      { from: 64_000, max: 64_000_000 },
      4301,
    );
  }, 120_000);
});
