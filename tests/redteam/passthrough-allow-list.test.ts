/**
 * A key with a model allow-list reaches the pass-through's routes only for its models
 * (docs/operations.md): the body's `model` is read, and a model outside the list is a 403. The
 * body was read only when its content type said JSON and it parsed as it came: the same JSON
 * sent as text/plain, or after a UTF-8 byte-order mark, was "not ours to judge" and went to the
 * default upstream unread. llama-server parses a body whatever its content type says and skips a
 * byte-order mark, and one upstream serving several models (llama-server's router, llama-swap)
 * picks the model from that field: a key held to one model used any other.
 */
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf } from '../support/harness.js';

const KEY = 'sk-only-m1-000000001';

const pair = proxyInFrontOf(
  (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ tokens: [1, 2, 3], bytes: req.body.length }));
  },
  { file: { keys: [{ name: 'narrow', key: KEY, models: ['m1'] }] } },
);

const send = (type: string, body: string | Buffer) =>
  fetch(`${pair.proxy.origin}/tokenize`, {
    method: 'POST',
    headers: { 'content-type': type, authorization: `Bearer ${KEY}` },
    body,
  });

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

describe('the pass-through reads the model of a JSON body however it is labelled', () => {
  it('application/json, a model outside the list: 403 (as before)', async () => {
    const res = await send('application/json', '{"model":"secret","prompt":"hi"}');
    expect(res.status).toBe(403);
    await res.text();
  });

  it.each([
    ['text/plain', Buffer.from('{"model":"secret","prompt":"hi"}')],
    ['application/octet-stream', Buffer.from('  {"model":"secret","prompt":"hi"}')],
    ['application/json', Buffer.concat([BOM, Buffer.from('{"model":"secret","prompt":"hi"}')])],
    ['text/plain', Buffer.concat([BOM, Buffer.from('\n{"model":"secret","prompt":"hi"}')])],
  ])('%s (%#), a model outside the list: 403, nothing sent upstream', async (type, body) => {
    const before = pair.upstream.requests.length;
    const res = await send(type, body);
    const text = await res.text();
    expect(res.status, text).toBe(403);
    expect(JSON.parse(text).error.code).toBe('TP_ERR_MODEL_FORBIDDEN');
    expect(pair.upstream.requests.length).toBe(before);
  });

  it('a body that opens as JSON but does not parse here (NaN, which Python reads): the 400, nothing sent', async () => {
    const before = pair.upstream.requests.length;
    const res = await send('application/json', '{"model":"secret","prompt":"hi","temperature":NaN}');
    const text = await res.text();
    expect(res.status, text).toBe(400);
    expect(JSON.parse(text).error.code).toBe('TP_ERR_INVALID_JSON');
    expect(pair.upstream.requests.length).toBe(before);
  });

  it('its own model, or a body that is not JSON, still goes through byte for byte', async () => {
    for (const [type, body] of [
      ['text/plain', Buffer.from('{"model":"m1","prompt":"hi"}')],
      ['application/json', Buffer.concat([BOM, Buffer.from('{"model":"m1"}')])],
      ['application/octet-stream', Buffer.from('RIFF....WAVEfmt ')],
    ] as const) {
      const res = await send(type, body);
      expect(res.status).toBe(200);
      await res.text();
      expect(pair.upstream.requests.at(-1)!.body.equals(body)).toBe(true);
    }
  });

  it("llama-swap's /upstream/<model>/ path (one model's server, past its router): judged by the key's list", async () => {
    const before = pair.upstream.requests.length;
    for (const path of [
      '/upstream/secret/v1/chat/completions',
      '/upstream//secret/completion',
      '/upstream/sec%72et/health',
      '/upstream/secret%2Fx/v1/models',
      '/v1/upstream/secret/completion',
    ]) {
      const res = await fetch(`${pair.proxy.origin}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
        body: '{"model":"m1","prompt":"hi"}',
      });
      const text = await res.text();
      expect(res.status, `${path}: ${text}`).toBe(403);
      expect(JSON.parse(text).error.code).toBe('TP_ERR_MODEL_FORBIDDEN');
    }
    expect(pair.upstream.requests.length).toBe(before);
    const own = await fetch(`${pair.proxy.origin}/upstream/m1/completion`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
      body: '{"prompt":"hi"}',
    });
    expect(own.status).toBe(200);
    await own.text();
  });
});
