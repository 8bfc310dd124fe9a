/** The Responses item store: bounded by its byte count, the busiest key's oldest out first, per API key. */
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

  it("a busy key evicts its own items, not a quiet key's", () => {
    const store = new ResponsesItemStore(64 * 1024);
    const text = 'x'.repeat(1000);
    store.keep('quiet', [message('msg_quiet_1', text), message('msg_quiet_2', text)]);
    for (let i = 0; i < 10_000; i++) {
      store.keep('busy', [message(`msg_busy_${i}`, text)]);
      expect(store.bytes).toBeLessThanOrEqual(64 * 1024);
    }
    // The quiet key's two items, kept before all of the busy key's, are still there.
    expect(store.lookup('quiet', 'msg_quiet_1')).toBeDefined();
    expect(store.lookup('quiet', 'msg_quiet_2')).toBeDefined();
    expect(store.lookup('busy', 'msg_busy_9999')).toBeDefined();
    expect(store.lookup('busy', 'msg_busy_0')).toBeUndefined();
    // Once the quiet key holds more than the other, its own oldest goes first.
    for (let i = 0; i < 200; i++) store.keep('quiet', [message(`msg_quiet_n${i}`, text)]);
    expect(store.bytes).toBeLessThanOrEqual(64 * 1024);
    expect(store.lookup('quiet', 'msg_quiet_1')).toBeUndefined();
    expect(store.lookup('busy', 'msg_busy_9999')).toBeDefined();
  });

  it('an id kept again under another key moves there, its bytes with it', () => {
    const store = new ResponsesItemStore(64 * 1024);
    store.keep('a', [message('msg_1', 'one')]);
    const bytes = store.bytes;
    store.keep('b', [message('msg_1', 'one')]);
    expect(store.bytes).toBe(bytes);
    expect(store.lookup('a', 'msg_1')).toBeUndefined();
    expect(store.lookup('b', 'msg_1')).toBeDefined();
  });
});
