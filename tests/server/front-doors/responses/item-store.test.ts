/** The Responses item store: bounded by its byte count, the busiest key's oldest out first, per API key. */
import { describe, expect, it } from 'vitest';
import type { InputItem, OutputItem } from '../../../../protocol/responses/types.js';
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

  it('continues a chain of responses: each turn its own items, walked oldest first', () => {
    const store = new ResponsesItemStore(1 << 20);
    const user = (text: string): InputItem => ({ type: 'message', role: 'user', content: text });
    store.keepResponse('a', 'resp_1', undefined, [user('one')], [message('msg_1', 'It is 1.')]);
    store.keepResponse('a', 'resp_2', 'resp_1', [user('two')], [message('msg_2', 'It is 2.')]);
    const found = store.conversation('a', 'resp_2');
    expect(found.missing).toBeUndefined();
    if (found.missing !== undefined) return;
    expect(found.items).toEqual([
      user('one'),
      message('msg_1', 'It is 1.'),
      user('two'),
      message('msg_2', 'It is 2.'),
    ]);
    expect(found.turns).toBe(2);
    // Another key's, or one never kept, misses; a chain whose start is gone misses at the start.
    expect(store.conversation('b', 'resp_2')).toEqual({ missing: 'resp_2' });
    store.keepResponse('a', 'resp_3', 'resp_0', [user('three')], []);
    expect(store.conversation('a', 'resp_3')).toEqual({ missing: 'resp_0' });
  });

  it('a conversation in use is the newest: idle ones are evicted before it', () => {
    const text = 'x'.repeat(1000);
    const store = new ResponsesItemStore(128 * 1024);
    const user = (t: string): InputItem => ({ type: 'message', role: 'user', content: t });
    store.keepResponse('a', 'resp_live_0', undefined, [user('start')], [message('msg_live_0', text)]);
    for (let i = 0; i < 200; i++) {
      // An idle conversation started each turn, and the live one continued.
      store.keepResponse('a', `resp_idle_${i}`, undefined, [user(text)], [message(`msg_idle_${i}`, text)]);
      const live = store.conversation('a', `resp_live_${i}`);
      expect(live.missing, `turn ${i}`).toBeUndefined();
      store.keepResponse(
        'a',
        `resp_live_${i + 1}`,
        `resp_live_${i}`,
        [user('next')],
        [message(`msg_live_${i + 1}`, 'ok')],
      );
      expect(store.bytes).toBeLessThanOrEqual(128 * 1024);
    }
    expect(store.conversation('a', 'resp_idle_0')).toEqual({ missing: 'resp_idle_0' });
  });

  it('a request that sent the whole conversation is linked to the response it continues, not copied', () => {
    const store = new ResponsesItemStore(1 << 20);
    const user = (t: string): InputItem => ({ type: 'message', role: 'user', content: t });
    const big = 'y'.repeat(10_000);
    const conversation: InputItem[] = [user(big)];
    store.keepResponse('a', 'resp_0', undefined, [...conversation], [message('msg_0', 'ok')]);
    const first = store.bytes;
    for (let i = 1; i <= 20; i++) {
      conversation.push(message(`msg_${i - 1}`, 'ok') as InputItem, user(`turn ${i}`));
      store.keepResponse('a', `resp_${i}`, undefined, [...conversation], [message(`msg_${i}`, 'ok')]);
    }
    // The 10 KB message is held once, not once per turn.
    expect(store.bytes).toBeLessThan(first + 20 * 1000);
    const found = store.conversation('a', 'resp_20');
    if (found.missing !== undefined) throw new Error(found.missing);
    expect(found.items).toEqual([...conversation, message('msg_20', 'ok')]);
    // A conversation that differs from the kept one in its length is kept whole.
    store.keepResponse(
      'a',
      'resp_x',
      undefined,
      [user('other'), message('msg_3', 'ok') as InputItem, user('q')],
      [],
    );
    const other = store.conversation('a', 'resp_x');
    if (other.missing !== undefined) throw new Error(other.missing);
    expect(other.turns).toBe(1);
    expect(other.items).toHaveLength(3);
  });

  it('a conversation: its first items, then the turns of its latest response; closed, it misses', () => {
    const store = new ResponsesItemStore(1 << 20);
    const user = (t: string): InputItem => ({ type: 'message', role: 'user', content: t });
    expect(store.openConversation('a', 'conv_1', [user('first')])).toBe(true);
    expect(store.conversationItems('a', 'conv_1')).toEqual({
      items: [user('first')],
      bytes: expect.any(Number),
      last: undefined,
    });
    store.keepResponse('a', 'resp_1', undefined, [user('q')], [message('msg_1', 'A.')], false);
    store.advanceConversation('a', 'conv_1', 'resp_1');
    const found = store.conversationItems('a', 'conv_1');
    if (found.missing !== undefined) throw new Error(found.missing);
    expect(found.items).toEqual([user('first'), user('q'), message('msg_1', 'A.')]);
    expect(found.last).toBe('resp_1');
    expect(store.conversationItems('b', 'conv_1')).toEqual({ missing: 'conv_1' });
    expect(store.closeConversation('b', 'conv_1')).toBe(false);
    expect(store.closeConversation('a', 'conv_1')).toBe(true);
    expect(store.conversationItems('a', 'conv_1')).toEqual({ missing: 'conv_1' });
    // Larger than the whole budget: not opened.
    expect(new ResponsesItemStore(4096).openConversation('a', 'conv_2', [user('x'.repeat(5000))])).toBe(
      false,
    );
  });
});
