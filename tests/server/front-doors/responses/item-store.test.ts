/** The Responses item store: bounded by its byte count, oldest out first, per API key. */
import { describe, expect, it } from 'vitest';
import type { OutputItem } from '../../../../protocol/responses/types.js';
import { ResponsesItemStore } from '../../../../server/front-doors/responses/item-store.js';

const message = (id: string, text: string): OutputItem => ({
  type: 'message',
  id,
  role: 'assistant',
  status: 'completed',
  content: [{ type: 'output_text', text, annotations: [] }],
});

describe('ResponsesItemStore', () => {
  it('returns an item as it was kept, to its own key only', () => {
    const store = new ResponsesItemStore(1 << 20);
    store.keep('a', [message('msg_1', 'It is 4.')]);
    expect(store.lookup('a', 'msg_1')?.item).toEqual(message('msg_1', 'It is 4.'));
    expect(store.lookup('b', 'msg_1')).toBeUndefined();
    expect(store.lookup('a', 'msg_2')).toBeUndefined();
  });

  it('stays under its budget whatever is kept, evicting the oldest first', () => {
    const store = new ResponsesItemStore(64 * 1024);
    const text = 'x'.repeat(1000);
    for (let i = 0; i < 10_000; i++) {
      store.keep('a', [message(`msg_${i}`, text)]);
      expect(store.bytes).toBeLessThanOrEqual(64 * 1024);
    }
    // It keeps the newest, not nothing.
    expect(store.size).toBeGreaterThan(40);
    expect(store.lookup('a', 'msg_9999')).toBeDefined();
    expect(store.lookup('a', `msg_${10_000 - store.size}`)).toBeDefined();
    expect(store.lookup('a', `msg_${10_000 - store.size - 1}`)).toBeUndefined();
  });

  it('counts UTF-8 bytes, and skips an item larger than the whole budget', () => {
    const store = new ResponsesItemStore(4096);
    store.keep('a', [message('msg_small', 'ok')]);
    store.keep('a', [message('msg_big', 'é'.repeat(2048))]); // 4 KB of UTF-8
    expect(store.lookup('a', 'msg_big')).toBeUndefined();
    expect(store.lookup('a', 'msg_small')).toBeDefined();
  });
});
