/**
 * A chain named past a limit (a request's previous_response_id or conversation past the body
 * limit, the inspector's diff base past a captured body): its bytes were counted over the whole
 * chain before the caller refused it, so a few bytes naming a chain of the whole store cost all
 * of it, for each request and each inspector record naming it: a session export of n records of
 * a chain of n turns cost n x n. Now the walk stops once past the limit: each such read costs
 * what the limit holds, n of them about n (x1 vs x4, tests/support/cost-scaling.ts).
 */
import { describe, expect, it } from 'vitest';
import type { InputItem, OutputItem } from '../../protocol/responses/types.js';
import { ResponsesItemStore } from '../../server/front-doors/responses/item-store.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';
import { answerJson, proxyInFrontOf, textCompletion } from '../support/harness.js';

const pair = proxyInFrontOf(answerJson(textCompletion('ok')), {
  env: { TOOLPROOF_BODY_LIMIT_BYTES: '8192' },
});

const user = (i: number): InputItem => ({ type: 'message', role: 'user', content: `question ${i}` });
const answer = (i: number): OutputItem =>
  ({
    type: 'message',
    id: `msg_${i}`,
    role: 'assistant',
    status: 'completed',
    content: [{ type: 'output_text', text: `answer ${i}`, annotations: [] }],
  }) as OutputItem;

/** A store holding a chain of `turns` responses, and a conversation whose turns they are. */
function chain(turns: number): ResponsesItemStore {
  const store = new ResponsesItemStore(1 << 30);
  store.openConversation('k', 'conv', []);
  for (let i = 0; i < turns; i++)
    store.keepResponse('k', `resp_${i}`, i === 0 ? undefined : `resp_${i - 1}`, [user(i)], [answer(i)]);
  store.advanceConversation('k', 'conv', `resp_${turns - 1}`);
  return store;
}

/** What a captured body keeps of a base, say: a few turns of this chain. */
const LIMIT = 2_000;

describe('a chain named past a limit', () => {
  it('is refused having read what the limit holds, not the whole chain', () => {
    const store = chain(10_000);
    const found = store.conversation('k', 'resp_9999', false, LIMIT);
    expect(found.missing).toBeUndefined();
    if (found.missing !== undefined) return;
    expect(found.items).toEqual([]);
    expect(found.bytes).toBeGreaterThan(LIMIT);
    // Stopped within a turn of the limit, not the chain's ~1 MB.
    expect(found.bytes).toBeLessThan(LIMIT + 500);
    const items = store.conversationItems('k', 'conv', false, LIMIT);
    expect(items.missing === undefined && items.bytes < LIMIT + 500).toBe(true);
  });

  it('n reads of a chain of n turns cost about n (x1 vs x4)', () => {
    const s = measureScaling(
      (n) => ({ store: chain(n), n }),
      ({ store, n }) => {
        let bytes = 0;
        for (let r = 0; r < n; r++) {
          const found =
            r % 2 === 0
              ? store.conversation('k', `resp_${n - 1}`, false, LIMIT)
              : store.conversationItems('k', 'conv', false, LIMIT);
          if (found.missing === undefined) bytes += found.bytes;
        }
        return bytes;
      },
      { from: 64, max: 16_384 },
    );
    const within = withinBudget(s, 5);
    expect(within.time, JSON.stringify(s)).toBe(true);
    expect(within.memory, JSON.stringify(s)).toBe(true);
  });
});

describe('over HTTP: a previous_response_id chain past the body limit', () => {
  it("is refused with the door's 413 in the OpenAI shape, as before", async () => {
    let previous: string | undefined;
    let refused: Response | undefined;
    for (let i = 0; i < 12 && !refused; i++) {
      const res = await fetch(`${pair.proxy.origin}/v1/responses`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'm1',
          input: `${i} ${'x'.repeat(1500)}`,
          ...(previous ? { previous_response_id: previous } : {}),
        }),
      });
      if (res.status !== 200) refused = res;
      else previous = ((await res.json()) as { id: string }).id;
    }
    expect(refused?.status).toBe(413);
    const body = (await refused!.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('TP_ERR_BODY_TOO_LARGE');
    expect(body.error.message).toContain('more than the body limit (8192 bytes)');
  });
});
