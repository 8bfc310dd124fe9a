/**
 * Hardening (issue 8): a 100k-level tool schema used to answer 500 (RangeError from
 * JSON.stringify on the way upstream); a self-referencing schema (`{"$ref": "#"}`) threw from
 * the validator, inside the stream when streaming. Now: a 400 naming the field for a body nested
 * past MAX_REQUEST_DEPTH, and a schema that cannot be applied is skipped, never thrown.
 */
import { describe, expect, it } from 'vitest';
import { MAX_REQUEST_DEPTH } from '../../protocol/json-depth.js';
import { proxyInFrontOfChat, toolCallCompletion, toolCallStream } from '../support/fake-upstream.js';

function deepSchema(levels: number): string {
  let deep = '{"type":"string"}';
  for (let i = 0; i < levels; i++) deep = `{"type":"object","properties":{"x":${deep}}}`;
  return deep;
}

describe('through the server', () => {
  const pair = proxyInFrontOfChat((body, res) => {
    if (body.stream === true) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(toolCallStream(String(body.model), 'lookup', '{"a":{"b":1}}'));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(toolCallCompletion(String(body.model), 'lookup', '{"a":{"b":1}}'));
  });

  const post = (parameters: string, stream: boolean) =>
    fetch(`${pair.proxy.origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `{"model":"m","stream":${stream},"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"lookup","parameters":${parameters}}}]}`,
    });

  for (const stream of [false, true]) {
    it(`100k-level tool schema (stream: ${stream}): 400 naming the field, not 500`, async () => {
      const before = pair.upstream.requests.length;
      const res = await post(deepSchema(100_000), stream);
      expect(res.status).toBe(400);
      const json = (await res.json()) as { error: { code: string; param: string; message: string } };
      expect(json.error).toMatchObject({
        code: 'TP_ERR_INVALID_FIELD',
        param: 'tools.0.function.parameters',
      });
      expect(json.error.message).toContain(`deeper than ${MAX_REQUEST_DEPTH} levels`);
      expect(pair.upstream.requests.length).toBe(before);
    }, 30_000);

    it(`\`{"$ref": "#"}\` tool schema (stream: ${stream}): the call goes through, nothing thrown`, async () => {
      const res = await post('{"$ref":"#"}', stream);
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(text).toContain('lookup');
      expect(text).not.toContain('"error"');
    }, 30_000);
  }

  it('a schema just under the bound is still forwarded', async () => {
    const res = await post(deepSchema(40), false);
    expect(res.status).toBe(200);
  }, 30_000);
});
