/**
 * Shares weighed by prompt size (server/admission.ts costUnits: the upstream body in 4 KiB
 * units) counted a relayed body written again (/v1/completions and /v1/embeddings with the
 * model renamed upstream: `upstreamModel`) by its UTF-16 characters, not its bytes: a prompt of
 * CJK text (three bytes a character) was charged a third of its prefill, and its owner's long
 * turns went before short prompts queued beside them. The chat doors send bytes and were
 * charged right.
 */
import { describe, expect, it } from 'vitest';
import { waitFor } from '../server/stack.js';
import { proxyInFrontOf } from '../support/harness.js';

const KEYS = { long: 'sk-long-cjk-fair-00000001', short: 'sk-short-cjk-fair-0000001' };
let order: string[] = [];
let hold: (() => void) | undefined;
const pair = proxyInFrontOf(
  (req, res) => {
    const prompt = String((JSON.parse(req.body.toString()) as { prompt?: unknown }).prompt);
    order.push(prompt.split(' ')[0]!);
    const answer = () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'c',
          object: 'text_completion',
          created: 0,
          model: 'upstream-name',
          choices: [{ index: 0, text: 'ok', finish_reason: 'stop', logprobs: null }],
        }),
      );
    };
    if (order.length === 1) hold = answer;
    else answer();
  },
  {
    file: (url) => ({
      models: { m1: { upstream: url, upstreamModel: 'upstream-name' } },
      admission: { concurrency: 1, queueTimeoutMs: 30_000 },
      keys: [
        { name: 'long', key: KEYS.long },
        { name: 'short', key: KEYS.short },
      ],
    }),
  },
);

const post = (key: string, prompt: string) =>
  fetch(`${pair.proxy.origin}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: 'm1', prompt, max_tokens: 4 }),
  }).then(async (res) => {
    await res.text();
    return res.status;
  });

describe('/v1/completions with the model renamed upstream, one busy slot', () => {
  it('a CJK prompt is charged its bytes: the short prompts queued beside it go first', async () => {
    order = [];
    // 12,000 characters, 36 KB: 9 units by its bytes, 3 by its characters.
    const long = (name: string) => `${name} ${'漢'.repeat(12_000)}`;
    const queued = () =>
      pair.proxy.app.toolproof.upstreams
        .all()
        .reduce((n, u) => n + u.admissionLoad().reduce((m, l) => m + l.queued, 0), 0);
    const all = [post(KEYS.long, long('l0'))];
    await waitFor(() => order.length === 1, 20_000);
    const rest: Array<[string, string]> = [
      [KEYS.long, long('l1')],
      [KEYS.short, 's1'],
      [KEYS.short, 's2'],
      [KEYS.short, 's3'],
      [KEYS.short, 's4'],
      [KEYS.short, 's5'],
    ];
    for (const [i, [key, prompt]] of rest.entries()) {
      all.push(post(key, prompt));
      await waitFor(() => queued() === i + 1, 20_000);
    }
    hold?.();
    expect(await Promise.all(all)).toEqual(Array(7).fill(200));
    expect(order, order.join(' ')).toEqual(['l0', 's1', 's2', 's3', 's4', 's5', 'l1']);
  }, 60_000);
});
