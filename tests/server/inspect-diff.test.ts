/**
 * What the inspector diffs an attempt's request against (server/routes/inspect-diff.ts): a chat
 * request as it came; a Messages or Responses request translated to chat completions (the door's
 * own translation, before toolproof's policies); no base when the captured body was cut; an
 * item_reference no longer held shown as a placeholder that says so, never a failure.
 */
import { describe, expect, it } from 'vitest';
import type { AppState } from '../../server/app-state.js';
import type { CaptureRecord } from '../../server/capture/ring.js';
import { ResponsesItemStore } from '../../server/front-doors/responses/item-store.js';
import { diffBaseOf } from '../../server/routes/inspect-diff.js';

const state = { config: { keys: [] }, responsesStore: undefined } as unknown as AppState;
const record = (api: string, body: unknown, cut = 0) =>
  ({
    api,
    clientRequest: {
      headers: {},
      body: { text: typeof body === 'string' ? body : JSON.stringify(body), cut },
    },
  }) as unknown as CaptureRecord;

describe('the inspector diff base', () => {
  it('a chat request is its own base', () => {
    const text = '{"model":"m","messages":[{"role":"user","content":"hi"}]}';
    expect(diffBaseOf(record('chat', text), state)).toEqual({ against: 'client', text });
  });

  it('a Messages request is translated to chat completions', () => {
    const base = diffBaseOf(
      record('messages', {
        model: 'm',
        max_tokens: 10,
        system: 'Be brief.',
        messages: [{ role: 'user', content: 'hi' }],
        tools: [{ name: 'get_weather', input_schema: { type: 'object' } }],
      }),
      state,
    );
    expect(base.against).toBe('translated');
    expect(JSON.parse(base.text)).toMatchObject({
      model: 'm',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hi' },
      ],
      tools: [{ type: 'function', function: { name: 'get_weather' } }],
    });
  });

  it("a Responses request's previous_response_id: the conversation it continued, or a placeholder", () => {
    const store = new ResponsesItemStore(1 << 20);
    store.keepResponse(
      '',
      'resp_1',
      undefined,
      [{ type: 'message', role: 'user', content: 'hi' }],
      [
        {
          type: 'message',
          id: 'msg_1',
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: 'Hello.', annotations: [] }],
        },
      ],
    );
    const withStore = { config: { keys: [] }, responsesStore: store } as unknown as AppState;
    const body = (id: string) => record('responses', { model: 'm', previous_response_id: id, input: 'and?' });
    const base = diffBaseOf(body('resp_1'), withStore);
    expect(base.against).toBe('translated');
    expect(JSON.parse(base.text).messages).toEqual([
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'Hello.' },
      { role: 'user', content: 'and?' },
    ]);
    const gone = diffBaseOf(body('resp_gone'), withStore);
    expect(gone.against).toBe('translated');
    expect(gone.text).toContain('previous_response_id resp_gone continued: no longer');
    // A conversation: its first items, then its turns.
    store.openConversation('', 'conv_1', [{ type: 'message', role: 'user', content: 'first' }]);
    store.advanceConversation('', 'conv_1', 'resp_1');
    const inConv = diffBaseOf(
      record('responses', { model: 'm', conversation: 'conv_1', input: 'and?' }),
      withStore,
    );
    expect(JSON.parse(inConv.text).messages.map((m: { content: string }) => m.content)).toEqual([
      'first',
      'hi',
      'Hello.',
      'and?',
    ]);
  });

  it('a Responses request is translated, an item_reference no longer held shown as such', () => {
    const base = diffBaseOf(
      record('responses', {
        model: 'm',
        input: [
          { type: 'message', role: 'user', content: 'hi' },
          { type: 'item_reference', id: 'msg_gone' },
          { type: 'message', role: 'user', content: 'and?' },
        ],
      }),
      state,
    );
    expect(base.against).toBe('translated');
    expect(base.text).toContain('item_reference msg_gone: no longer');
    expect(JSON.parse(base.text).messages.at(-1)).toEqual({ role: 'user', content: 'and?' });
  });

  it('a body cut at capture has no base, and says why', () => {
    const base = diffBaseOf(record('messages', '{"model":"m","messages":[{"role":"us', 5000), state);
    expect(base).toMatchObject({ against: null, text: '', note: expect.stringContaining('cut at capture') });
  });
});
