/**
 * previous_response_id's costs, x1 vs x4 (tests/support/cost-scaling.ts): continuing a
 * conversation of n turns (the walk back through its responses, then the chat messages the
 * upstream gets) and keeping a turn of a client that sends its whole conversation (the scan that
 * links it to the response it continues) each cost about n, in CPU and in what they keep.
 */
import { describe, expect, it } from 'vitest';
import { inputToMessages } from '../../../../protocol/responses/items.js';
import type { InputItem, OutputItem } from '../../../../protocol/responses/types.js';
import { ResponsesItemStore } from '../../../../server/front-doors/responses/item-store.js';
import { measureScaling, withinBudget } from '../../../support/cost-scaling.js';

const user = (i: number): InputItem => ({ type: 'message', role: 'user', content: `question ${i}` });
const call = (i: number): OutputItem =>
  ({
    type: 'function_call',
    id: `fc_${i}`,
    call_id: `call_${i}`,
    name: 'f',
    arguments: '{"x":1}',
    status: 'completed',
  }) as OutputItem;
const result = (i: number): InputItem =>
  ({ type: 'function_call_output', call_id: `call_${i}`, output: `result ${i}` }) as InputItem;

/** A store holding a chain of `turns` responses (each: a question or a result, then a call). */
function chain(turns: number): ResponsesItemStore {
  const store = new ResponsesItemStore(1 << 30);
  for (let i = 0; i < turns; i++)
    store.keepResponse(
      'k',
      `resp_${i}`,
      i === 0 ? undefined : `resp_${i - 1}`,
      [i % 2 ? result(i - 1) : user(i)],
      [call(i)],
    );
  return store;
}

describe('previous_response_id: linear in the conversation it continues', () => {
  it('the walk and the messages it becomes (x1 vs x4)', () => {
    const small = chain(3).conversation('k', 'resp_2');
    if (small.missing !== undefined) throw new Error(small.missing);
    expect(inputToMessages([user(9)], undefined, undefined, () => undefined, small.items)).toHaveLength(7);
    const s = measureScaling(
      (n) => ({ store: chain(n), last: `resp_${n - 1}` }),
      ({ store, last }) => {
        const found = store.conversation('k', last);
        if (found.missing !== undefined) throw new Error(found.missing);
        return inputToMessages([user(-1)], undefined, undefined, () => undefined, found.items);
      },
      { from: 64, max: 65_536 },
    );
    const within = withinBudget(s, 5);
    expect(within.time, JSON.stringify(s)).toBe(true);
    expect(within.memory, JSON.stringify(s)).toBe(true);
  });

  it('a whole conversation sent again, linked to the response it continues (x1 vs x4)', () => {
    const s = measureScaling(
      (n) => {
        const store = new ResponsesItemStore(1 << 30);
        const conversation: InputItem[] = [];
        for (let i = 0; i < n; i++) conversation.push(user(i), call(i) as InputItem, result(i));
        store.keepResponse('k', 'resp_0', undefined, conversation.slice(0, -2), [call(n - 1)]);
        return { store, conversation };
      },
      ({ store, conversation }) => {
        store.keepResponse('k', 'resp_1', undefined, conversation, [call(-1)]);
        return store.conversation('k', 'resp_1');
      },
      { from: 64, max: 65_536 },
    );
    expect(withinBudget(s, 5).time, JSON.stringify(s)).toBe(true);
  });
});
