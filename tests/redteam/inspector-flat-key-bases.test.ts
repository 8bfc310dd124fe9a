/**
 * The inspector's diff base of a Responses request reads what it continued and referred to from
 * the Responses store, under its key's scope. The capture knows a key by its name, and every flat
 * key (TOOLPROOF_API_KEYS) carries one: the first flat key's scope was read for every flat key's
 * record. A second flat key's request naming an item of the first one's by item_reference (a
 * reference that missed in its own scope: a note upstream, the request answered) showed that
 * item's content in its diff base, which the door itself never lets it read; and its own
 * previous_response_id conversations showed as gone. Then a name several keys carry read no
 * scope (a placeholder in every flat key's base); now each flat key's record keeps a token of its
 * own key (config-keys.ts flatKeyToken), so its base reads its own key's store and no other's,
 * and no answer carries that token.
 */
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf } from '../support/harness.js';

/** The upstream answers with the last user message's text, echoed. */
const pair = proxyInFrontOf(
  (req, res) => {
    const messages = (JSON.parse(req.body.toString()) as { messages: Array<{ content: unknown }> }).messages;
    const last = messages.at(-1)!.content;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        id: 'c',
        object: 'chat.completion',
        created: 0,
        model: 'm1',
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: `echo: ${JSON.stringify(last)}` },
            finish_reason: 'stop',
          },
        ],
      }),
    );
  },
  { env: { TOOLPROOF_API_KEYS: 'key-first,key-second' } },
);

const respond = (key: string, body: unknown) =>
  fetch(`${pair.proxy.origin}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });

interface View {
  record: { clientRequest: { body: { text: string } } };
  diffBase: { against: string | null; text: string; note?: string };
}

/** The second key's view of its own record whose client request holds `marker`. */
async function viewOf(marker: string): Promise<View> {
  const headers = { authorization: 'Bearer key-second' };
  const list = (await (await fetch(`${pair.proxy.origin}/inspect/api/requests`, { headers })).json()) as {
    requests: Array<{ id: string }>;
  };
  for (const { id } of list.requests) {
    const view = (await (
      await fetch(`${pair.proxy.origin}/inspect/api/requests/${id}`, { headers })
    ).json()) as View;
    if (view.record.clientRequest.body.text.includes(marker)) return view;
  }
  throw new Error(`no record holds ${marker}`);
}

describe("a flat key's record, another flat key's store", () => {
  it("an item_reference to the other key's item: its content is not in the diff base", async () => {
    const first = (await (await respond('key-first', { model: 'm1', input: 'SECRET-OF-FIRST' })).json()) as {
      output: Array<{ id: string }>;
    };
    const res = await respond('key-second', {
      model: 'm1',
      input: [
        { type: 'item_reference', id: first.output[0]!.id },
        { type: 'message', role: 'user', content: 'REFERENCE-TURN' },
      ],
    });
    expect(res.status).toBe(200);
    // The door resolves nothing across keys: the upstream got no content of the first key's.
    expect(JSON.stringify(await res.json())).not.toContain('SECRET-OF-FIRST');
    const view = await viewOf('REFERENCE-TURN');
    expect(view.diffBase.text).not.toContain('SECRET-OF-FIRST');
    // Its own store did not hold it, as the door found.
    expect(view.diffBase.text).toContain(`item_reference ${first.output[0]!.id}: no longer in`);
    expect(view.diffBase.text).toContain('REFERENCE-TURN');
  });

  it("its own previous_response_id conversation: read from its own key's store", async () => {
    const own = (await (await respond('key-second', { model: 'm1', input: 'second first' })).json()) as {
      id: string;
    };
    const res = await respond('key-second', {
      model: 'm1',
      input: 'CONTINUED-TURN',
      previous_response_id: own.id,
    });
    expect(res.status).toBe(200);
    const view = await viewOf('CONTINUED-TURN');
    expect(view.diffBase.text).not.toContain('no longer in this');
    // The conversation it continued, from its own key's store: its earlier turn and answer.
    expect(view.diffBase.text).toContain('second first');
    expect(view.diffBase.text).toContain('echo: ');
    expect(JSON.stringify(view)).not.toContain('keyToken');
  });

  it("the first key's own conversation reads from the first key's store, the session export too", async () => {
    const own = (await (await respond('key-first', { model: 'm1', input: 'FIRST-OPENING' })).json()) as {
      id: string;
    };
    const res = await fetch(`${pair.proxy.origin}/v1/responses`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: 'Bearer key-first',
        'x-session-affinity': 'first-run',
      },
      body: JSON.stringify({ model: 'm1', input: 'FIRST-CONTINUED', previous_response_id: own.id }),
    });
    expect(res.status).toBe(200);
    const headers = { authorization: 'Bearer key-first' };
    const list = (await (await fetch(`${pair.proxy.origin}/inspect/api/requests`, { headers })).json()) as {
      requests: Array<{ id: string; session: string }>;
    };
    const session = list.requests[0]!.session;
    const exported = (await (
      await fetch(`${pair.proxy.origin}/inspect/api/session/export?key=${encodeURIComponent(session)}`, {
        headers,
      })
    ).json()) as { requests: View[] };
    const continued = exported.requests.find((r) =>
      r.record.clientRequest.body.text.includes('FIRST-CONTINUED'),
    );
    expect(continued!.diffBase.text).toContain('FIRST-OPENING');
    expect(JSON.stringify(exported)).not.toContain('keyToken');
  });
});
