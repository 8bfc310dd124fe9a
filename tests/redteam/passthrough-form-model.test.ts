/**
 * A key held to some models reaches the pass-through's routes only for its models, also when the
 * model is a form field: /v1/audio/transcriptions and /v1/audio/translations take
 * multipart/form-data (the openai SDK's FormData), and an upstream serving several models
 * (llama-swap, vLLM's adapters) picks one by its `model` field. Only a JSON body's model was read:
 * a form went unjudged to the default upstream, so a key held to m1 used any model through it.
 * Python's form parsers read `;` as well as `&` between urlencoded fields and Go's multipart
 * reader takes LF-only lines, so both spellings are judged; a field the scan cannot read
 * exactly (encoded, or a file) is refused, as an unreadable JSON body is.
 */
import { describe, expect, it } from 'vitest';
import { formModels } from '../../server/routes/form-model.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';
import { proxyInFrontOf } from '../support/harness.js';

const KEY = 'sk-only-m1-000000002';

const pair = proxyInFrontOf(
  (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ text: 'ok', bytes: req.body.length }));
  },
  { file: { keys: [{ name: 'narrow', key: KEY, models: ['m1'] }] } },
);

const post = (body: string | FormData, type?: string) =>
  fetch(`${pair.proxy.origin}/v1/audio/transcriptions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, ...(type ? { 'content-type': type } : {}) },
    body,
  });

function form(model: string): FormData {
  const f = new FormData();
  f.append('file', new Blob([Buffer.from('RIFF....WAVEfmt ')], { type: 'audio/wav' }), 'a.wav');
  f.append('model', model);
  return f;
}

const multipart = (parts: string[], nl = '\r\n', boundary = 'XyZ') =>
  `--${boundary}${nl}${parts.join(`${nl}--${boundary}${nl}`)}${nl}--${boundary}--${nl}`;

async function refused(res: Response, status: number, code: string): Promise<void> {
  const text = await res.text();
  expect(res.status, text).toBe(status);
  expect(JSON.parse(text).error.code).toBe(code);
}

describe("the pass-through reads a form's model for a key's allow-list", () => {
  it("multipart/form-data (the SDK's FormData), a model outside the list: 403, nothing sent", async () => {
    const before = pair.upstream.requests.length;
    await refused(await post(form('secret')), 403, 'TP_ERR_MODEL_FORBIDDEN');
    expect(pair.upstream.requests.length).toBe(before);
  });

  it.each([
    [
      'LF-only lines (Go reads them)',
      multipart(['Content-Disposition: form-data; name="model"\n\nsecret'], '\n'),
    ],
    [
      'a second model field after an allowed one',
      multipart([
        'Content-Disposition: form-data; name="model"\r\n\r\nm1',
        'Content-Disposition: form-data; name="model"\r\n\r\nsecret',
      ]),
    ],
    ['an unquoted name', multipart(['content-disposition: form-data; name=model\r\n\r\nsecret'])],
  ])('%s: 403', async (_name, body) => {
    await refused(await post(body, 'multipart/form-data; boundary=XyZ'), 403, 'TP_ERR_MODEL_FORBIDDEN');
  });

  it("a form without a model field and the model in the query (Go's FormValue reads it): 403", async () => {
    const f = new FormData();
    f.append('file', new Blob([Buffer.from('RIFF')]), 'a.wav');
    const res = await fetch(`${pair.proxy.origin}/v1/audio/transcriptions?language=en&model=secret`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}` },
      body: f,
    });
    await refused(res, 403, 'TP_ERR_MODEL_FORBIDDEN');
  });

  it('urlencoded, with `;` between fields as Python reads them: 403', async () => {
    await refused(
      await post('model=secret', 'application/x-www-form-urlencoded'),
      403,
      'TP_ERR_MODEL_FORBIDDEN',
    );
    await refused(
      await post('language=en;model=sec%72et', 'application/x-www-form-urlencoded'),
      403,
      'TP_ERR_MODEL_FORBIDDEN',
    );
  });

  it('a model field the scan cannot read exactly (base64-encoded, or sent as a file): 400, nothing sent', async () => {
    const before = pair.upstream.requests.length;
    for (const part of [
      'Content-Disposition: form-data; name="model"\r\nContent-Transfer-Encoding: base64\r\n\r\nc2VjcmV0',
      'Content-Disposition: form-data; name="model"; filename="m.txt"\r\n\r\nsecret',
      "Content-Disposition: form-data; name*=utf-8''model\r\n\r\nsecret",
    ]) {
      await refused(
        await post(multipart([part]), 'multipart/form-data; boundary=XyZ'),
        400,
        'TP_ERR_INVALID_FIELD',
      );
    }
    await refused(await post(multipart(['x']), 'multipart/form-data'), 400, 'TP_ERR_INVALID_FIELD');
    expect(pair.upstream.requests.length).toBe(before);
  });

  it('its own model goes through byte for byte', async () => {
    const res = await post(form('m1'));
    expect(res.status).toBe(200);
    await res.text();
    const sent = pair.upstream.requests.at(-1)!;
    expect(String(sent.headers['content-type'])).toMatch(/^multipart\/form-data; boundary=/);
    expect(sent.body.toString('latin1')).toContain('RIFF....WAVEfmt ');
  });

  it('the scan costs about ×4 for a form ×4 as large (many parts without a blank line; many fields without `=`)', () => {
    const type = 'multipart/form-data; boundary=b';
    const s = measureScaling(
      (n) => Buffer.from('--b\r\nx: y\r\n'.repeat(n)),
      (body) => formModels(type, body),
      { from: 16_000, max: 2_000_000 },
    );
    expect(withinBudget(s, 5).time, JSON.stringify(s)).toBe(true);
    const u = measureScaling(
      (n) => Buffer.from('a&'.repeat(n)),
      (body) => formModels('application/x-www-form-urlencoded', body),
      { from: 16_000, max: 2_000_000 },
    );
    expect(withinBudget(u, 5).time, JSON.stringify(u)).toBe(true);
  });
});
