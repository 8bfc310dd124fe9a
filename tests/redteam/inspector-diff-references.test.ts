/**
 * The inspector's diff base of a Responses request (server/routes/inspect-diff.ts) is the request
 * translated again at each read of its record (a 304 too), with the conversation its
 * previous_response_id or conversation continues read from the Responses store as it is now, and
 * its item_references resolved there. A record of a few bytes (`{"previous_response_id": ...,
 * "input": "and?"}`) so cost what the whole conversation costs, up to the store's 16 MB (or the
 * 32 MiB body limit), at every read of it: parsed, translated, serialized and sent, on the event
 * loop every request shares, and inspector reads have no budget in one process. The attempt it is
 * diffed against is cut at the capture's body size (TOOLPROOF_CAPTURE_BODY_KB, 256 KB) anyway.
 * Now a base is read only within that size: past it, none, and the note says why; the walk
 * counts what it would read before it parses any of it.
 */
import { describe, expect, it } from 'vitest';
import { answerJson, proxyInFrontOf, textCompletion } from '../support/harness.js';

const BODY_KB = 64;
const pair = proxyInFrontOf(answerJson(textCompletion('ok')), {
  env: { TOOLPROOF_CAPTURE_BODY_KB: String(BODY_KB) },
});

const post = async (body: unknown, id: string) => {
  const res = await fetch(`${pair.proxy.origin}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': id },
    body: JSON.stringify({ model: 'm1', ...(body as object) }),
  });
  const json = (await res.json()) as { id: string; output: Array<{ id: string }> };
  expect(res.status).toBe(200);
  return json;
};

type View = { diffBase: { against: string | null; text: string; note?: string } };

const read = async (id: string) => {
  const res = await fetch(`${pair.proxy.origin}/inspect/api/requests/${id}`);
  expect(res.status).toBe(200);
  return res.text();
};

describe('a captured Responses request that continues a large conversation', () => {
  it('is read back at most at the size a captured body keeps, with a note', async () => {
    // 4 turns of 1 MB each (4 MB of conversation), then one of a few bytes.
    let previous: string | undefined;
    for (let i = 0; i < 4; i++) {
      const turn = await post(
        { input: `${String(i).repeat(1 << 20)}`, ...(previous ? { previous_response_id: previous } : {}) },
        `conv-${i}`,
      );
      previous = turn.id;
    }
    await post({ previous_response_id: previous, input: 'and?' }, 'conv-tiny');
    const text = await read('conv-tiny');
    // Before: the 4 MB conversation translated and sent at every read.
    expect(text.length).toBeLessThan(20 * BODY_KB * 1024);
    const got = JSON.parse(text) as View;
    expect(got.diffBase.against).toBeNull();
    expect(got.diffBase.note).toContain('TOOLPROOF_CAPTURE_BODY_KB');
    // Each turn read through its conversation: held to the same size.
    const first = JSON.parse(await read('conv-1')) as View;
    expect(first.diffBase.against).toBeNull();
  });

  it('a conversation within that size is still the base, its references resolved', async () => {
    const first = await post({ input: 'hi' }, 'small-0');
    const next = await post(
      {
        previous_response_id: first.id,
        input: [
          { type: 'item_reference', id: first.output[0]!.id },
          { type: 'message', role: 'user', content: 'and?' },
        ],
      },
      'small-1',
    );
    expect(next.output.length).toBe(1);
    const got = JSON.parse(await read('small-1')) as View;
    expect(got.diffBase.against).toBe('translated');
    // The referenced answer follows the one the conversation holds (one assistant turn).
    expect(JSON.parse(got.diffBase.text).messages.map((m: { content: string }) => m.content)).toEqual([
      'hi',
      'okok',
      'and?',
    ]);
  });
});
