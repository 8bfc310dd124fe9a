/**
 * clientErrorResponse (server/error-handler): the raw answer to a request node's HTTP parser
 * refused, in the API's own shape (over a socket: tests/redteam/client-errors.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { clientErrorResponse } from '../../server/error-handler.js';

describe('clientErrorResponse', () => {
  it('a request not received in time is a 408; no request line read is the OpenAI shape', () => {
    const text = clientErrorResponse({ code: 'ERR_HTTP_REQUEST_TIMEOUT' });
    expect(text).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    const [head, json] = text.split('\r\n\r\n');
    expect(head).toContain(`Content-Length: ${Buffer.byteLength(json!)}`);
    expect(JSON.parse(json!).error.message).toMatch(/not received in time/);
  });

  it('/v1/messages with a query string is still Anthropic', () => {
    const text = clientErrorResponse({
      code: 'HPE_INVALID_CHUNK_SIZE',
      rawPacket: Buffer.from('POST /v1/messages?beta=true HTTP/1.1\r\n'),
    });
    expect(JSON.parse(text.split('\r\n\r\n')[1]!)).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error' },
    });
  });
});
