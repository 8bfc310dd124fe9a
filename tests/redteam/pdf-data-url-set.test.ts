/**
 * A request's PDF data URLs were gathered in a Set (and looked up in a Map) keyed by the whole
 * URL (server/documents/document-reader.ts). V8 hashes a string past 16,383 characters by its
 * length alone, so n data URLs of 20 KB alike but for their ends were each compared with all the
 * others: through the server 250 vs 1,000 of them cost 136 vs 3,205 ms of CPU (x23), ~8-10 s of
 * wall time on the shared box, for every request that sent them again. Now a StringSet and a
 * StringMap (protocol/string-set.ts, keyed by SHA-256 past 4,096 characters): 71 vs 271 ms.
 */
import { describe, expect, it } from 'vitest';
import { measureScalingAsync, withinBudget } from '../support/cost-scaling.js';
import { answerJson, proxyInFrontOf, textCompletion } from '../support/harness.js';

const pair = proxyInFrontOf(answerJson(textCompletion('done')));

/** n PDF data URLs of ~20 KB, alike but for their last eight characters (the first 16 are read). */
const body = (n: number) =>
  JSON.stringify({
    model: 'm1',
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'hi' },
          ...Array.from({ length: n }, (_, i) => ({
            type: 'file',
            file: {
              filename: 'a.pdf',
              file_data: `data:application/pdf;base64,JVBERi0x${'A'.repeat(20_000)}${String(i).padStart(8, '0')}`,
            },
          })),
        ],
      },
    ],
  });

const post = async (text: string) => {
  const res = await fetch(`${pair.proxy.origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: text,
  });
  await res.text();
  return res.status;
};

describe('PDF data URLs alike but for their ends', () => {
  it('x4 the URLs cost about x4 of the request, not x16', async () => {
    expect(await post(body(2))).toBe(200);
    const s = await measureScalingAsync(
      body,
      async (text) => {
        const status = await post(text);
        if (status !== 200) throw new Error(`status ${status}`);
      },
      { from: 250, max: 250 },
    );
    expect(withinBudget(s, 20), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});
