/**
 * JSON leaves a key named twice to the parser: JSON.parse (toolproof), Python's and
 * llama-server's take the last, Go's gjson the first, and llama-swap (one upstream in front of
 * many llama-servers) routes by the first `model` it finds. toolproof judges the body it parsed (a
 * key's model allow-list, the route, the metrics) and forwards the client's own bytes wherever it
 * rewrote nothing (the chat door without tools, /v1/completions, /v1/embeddings, the
 * pass-through): `{"model":"secret","model":"m1"}` from a key held to m1 was judged as m1 and
 * served as secret. A client body naming a top-level field twice is now the door's 400.
 */
import { describe, expect, it } from 'vitest';
import { excessKeys, MAX_TOP_LEVEL_FIELDS } from '../../protocol/json-keys.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';
import { proxyInFrontOf, sendCompletion } from '../support/harness.js';

const KEY = 'sk-only-m1-000000002';

const pair = proxyInFrontOf(
  (req, res) => {
    if (req.url.endsWith('/embeddings') || req.url.endsWith('/tokenize')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"object":"list","data":[],"tokens":[1]}');
      return;
    }
    sendCompletion(res, { role: 'assistant', content: 'ok' }, 'stop');
  },
  { file: { keys: [{ name: 'narrow', key: KEY, models: ['m1'] }] } },
);

const MESSAGES = '"messages":[{"role":"user","content":"hi"}]';
const DOORS: Array<[string, string]> = [
  ['/v1/chat/completions', MESSAGES],
  ['/v1/completions', '"prompt":"hi"'],
  ['/v1/embeddings', '"input":"hi"'],
  ['/v1/messages', `"max_tokens":5,${MESSAGES}`],
  ['/v1/responses', '"input":"hi"'],
  ['/tokenize', '"prompt":"hi"'],
];

const post = (path: string, body: string) =>
  fetch(`${pair.proxy.origin}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${KEY}`,
      'anthropic-version': '2023-06-01',
    },
    body,
  });

describe('a body naming a top-level field twice', () => {
  for (const [path, rest] of DOORS)
    it(`${path}: the 400 naming the field, nothing sent upstream`, async () => {
      for (const model of ['"model":"secret","model":"m1"', '"model":"secret","mod\\u0065l":"m1"']) {
        const before = pair.upstream.requests.length;
        const res = await post(path, `{${model},${rest}}`);
        const text = await res.text();
        expect(res.status, text).toBe(400);
        expect((JSON.parse(text) as { error: { message: string } }).error.message).toContain('"model"');
        expect(pair.upstream.requests.length).toBe(before);
      }
    });

  it('a key named twice inside a value is not refused; one model alone is served', async () => {
    for (const [path, rest] of DOORS) {
      const res = await post(path, `{"model":"m1","metadata":{"a":"1","a":"2"},${rest}}`);
      expect(res.status, `${path}: ${await res.text()}`).toBe(200);
    }
  });
});

describe('the top-level names the scan keeps', () => {
  /**
   * A body of a quarter of the most top-level fields (256: the scale is the keys' length; with
   * all 1,024 the row took ~0.6 s of CPU at these lengths), each key `len` characters of escapes
   * (each read as JSON reads it).
   */
  const body = (len: number) =>
    Buffer.from(
      `{${Array.from({ length: MAX_TOP_LEVEL_FIELDS / 4 }, (_, i) => `"${i}${'\\u0061'.repeat(len)}":1`).join(',')}}`,
    );
  it('cost about x4 for keys x4 as long', () => {
    const s = measureScaling(
      body,
      (b) => {
        const excess = excessKeys(b);
        if (excess !== null) throw new Error(JSON.stringify(excess));
      },
      // Fixed sizes, 640 and 2,560 escapes a key (3.8 and 15 KB): a key past 16,383 bytes is
      // refused as long (LONG_KEY_BYTES), and a smaller 1x hides a quadratic decoding under the
      // scan's linear cost (a key rebuilt at each escape read x9 at 160 escapes, x15 here).
      { from: 640, max: 640 },
    );
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });

  it('a duplicate spelled another way is still found', () => {
    expect(excessKeys(Buffer.from('{"a\\u0062":1,"ab":2}'))).toEqual({ kind: 'duplicate', field: 'ab' });
    expect(excessKeys(Buffer.from('{"ab":1,"x":{"ab":2}}'))).toBeNull();
  });
});
