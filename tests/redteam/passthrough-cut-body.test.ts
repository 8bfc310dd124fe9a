/**
 * A pass-through answer (/v1/rerank, /tokenize, /v1/score: any route toolproof does not own) whose
 * body the upstream cuts after its headers (a backend restarted mid-answer). The body was piped as
 * it came, its status already sent: the client read a 200 and then a cut connection (fetch's
 * `terminated`), never an error it could read. A body of declared length up to 1 MiB is now read
 * whole first: cut, it is a 502 `TP_ERR_UPSTREAM_CUT_OFF` in the OpenAI shape. A whole one is
 * relayed byte for byte under its status; a larger or chunked one still streams as it comes.
 */
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf } from '../support/harness.js';

type Write = (res: ServerResponse) => void;
let write: Write = () => undefined;
const pair = proxyInFrontOf((_req, res) => write(res));

const SCORES = JSON.stringify({
  id: 'r',
  results: [{ index: 0, relevance_score: 0.9 }],
  pad: 'x'.repeat(4000),
});

/** The headers and `sent` of `length` bytes, then the socket destroyed. */
const cutAt =
  (length: number, sent: number): Write =>
  (res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(length) });
    res.write(Buffer.alloc(sent, 0x20), () => setTimeout(() => res.socket?.destroy(), 20));
  };

const rerank = () =>
  fetch(`${pair.proxy.origin}/v1/rerank`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm1', query: 'q', documents: ['a'] }),
    signal: AbortSignal.timeout(10_000),
  });

describe('pass-through, a non-streamed body', () => {
  it('cut after its headers: a 502 TP_ERR_UPSTREAM_CUT_OFF in the OpenAI shape', async () => {
    write = cutAt(SCORES.length, 1000);
    const res = await rerank();
    expect(res.status).toBe(502);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('TP_ERR_UPSTREAM_CUT_OFF');
    expect(body.error.message).toContain('closed the response body before it ended');
  });

  it('whole: relayed byte for byte under its status and length', async () => {
    write = (res) => {
      res.writeHead(201, { 'content-type': 'application/json', 'content-length': String(SCORES.length) });
      res.end(SCORES);
    };
    const res = await rerank();
    expect(res.status).toBe(201);
    expect(res.headers.get('content-length')).toBe(String(SCORES.length));
    expect(await res.text()).toBe(SCORES);
  });

  it('over 1 MiB, cut: streamed as it came (its status already sent)', async () => {
    write = cutAt(2 << 20, 64 << 10);
    const res = await rerank();
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
  });
});
