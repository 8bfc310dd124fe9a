/**
 * The Responses state with TOOLPROOF_WORKERS=2 (server/worker-relay.ts): the real process
 * (server/main.ts in a child, two workers in front of one simulator), driven by the real openai
 * SDK with every request on a connection of its own, which the primary hands to the workers in
 * turn, so each turn of a session reaches the other worker. previous_response_id over several
 * turns, a conversation, a stream resumed by GET /v1/responses/{id}?stream=true&starting_after,
 * input_items and DELETE all work as with one worker, another key still reads nothing, and a
 * worker that restarted gives the same 404 as today. Before, the second turn got a 400 ("not
 * held by this toolproof") and the session was dead.
 */
import type OpenAI from 'openai';
import type { Client } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { startHeldStream } from '../support/held-stream.js';
import { clusterOnYaml, freshRequest } from '../support/toolproof-process.js';
import { freshConnections, twoWorkers as reachTwo, sdkThrough, workerOf } from '../support/worker-clients.js';

/** An upstream whose streamed answer waits mid-way for release(): what went through meanwhile was not held. */
const held = await startHeldStream(['first words '], ['and the rest']);
afterAll(() => held.close());

const cluster = clusterOnYaml(
  { personality: 'vllm', scenario: (turn) => ({ say: `said to: ${turn.lastUserText}` }) },
  (simUrl) => `
defaults:
  forceToolUse: false
models:
  m:
    upstream: ${simUrl}
  held:
    upstream: ${held.url}
keys:
  - { name: alice, key: sk-alice-0123456789 }
  - { name: bob, key: sk-bob-0123456789 }
`,
);

/** Every request on a fresh connection: the cluster's primary spreads connections, not requests. */
const fresh = freshConnections();
afterAll(() => fresh.close());

const sdk = (key: string) => sdkThrough(cluster.origin, fresh, `sk-${key}-0123456789`);

/** The SDK on one connection (`client`): every request reaches the worker that connection reached. */
const sdkOn = (client: Client) => sdkThrough(cluster.origin, client, 'sk-alice-0123456789');

/** Two connections that reached different workers (told by a conversation made on each). */
async function twoWorkers(): Promise<[Client, Client]> {
  const w = await reachTwo(cluster.origin, async (c) => (await sdkOn(c).conversations.create({})).id);
  return [w.here, w.there];
}

/** The user turns of the last chat request that went upstream. */
const lastUpstreamUsers = () => {
  const chats = cluster.sim.requests.filter((r) => r.path.endsWith('/chat/completions'));
  const messages = (chats.at(-1)!.body as { messages: { role: string; content: unknown }[] }).messages;
  return messages.filter((m) => m.role === 'user').map((m) => m.content);
};

const metrics = async () => (await freshRequest(cluster.origin, { method: 'GET', path: '/metrics' })).text;
const sample = (text: string, name: string, labels: string): number =>
  text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) && l.includes(labels))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);

/** The worker number an id names (its first four hex digits). */

describe('Responses state across two workers', () => {
  const alice = () => sdk('alice');
  let first: OpenAI.Responses.Response;
  let conversation: string;

  it('previous_response_id over five turns, each on the next connection', async () => {
    const client = alice();
    first = await client.responses.create({ model: 'm', input: 'turn 1' });
    let prev = first;
    const owners = new Set<number>([workerOf(first.id)]);
    for (let k = 2; k <= 5; k++) {
      prev = await client.responses.create({ model: 'm', previous_response_id: prev.id, input: `turn ${k}` });
      expect(prev.output_text).toBe(`said to: turn ${k}`);
      expect(prev.previous_response_id).not.toBeNull();
      owners.add(workerOf(prev.id));
    }
    // The whole conversation went upstream on the last turn, built where it is kept.
    expect(lastUpstreamUsers()).toEqual(['turn 1', 'turn 2', 'turn 3', 'turn 4', 'turn 5']);
    // The chain stays with the worker that holds it.
    expect(owners.size).toBe(1);
    const items = await client.responses.inputItems.list(prev.id, { order: 'asc' });
    expect(items.data.filter((i) => i.type === 'message' && i.role === 'user')).toHaveLength(5);
  }, 60_000);

  it("item_reference (@ai-sdk/openai's store: true): each turn resolves the items made on the worker holding them", async () => {
    const client = alice();
    const input: OpenAI.Responses.ResponseInputItem[] = [{ role: 'user', content: 'ref 1' }];
    for (let k = 2; k <= 4; k++) {
      const r = await client.responses.create({ model: 'm', input });
      input.push({ type: 'item_reference', id: r.output[0]!.id! }, { role: 'user', content: `ref ${k}` });
    }
    const chats = cluster.sim.requests.filter((r) => r.path.endsWith('/chat/completions'));
    const messages = (chats.at(-1)!.body as { messages: { role: string; content: unknown }[] }).messages;
    expect(messages.map((m) => [m.role, m.content])).toEqual([
      ['user', 'ref 1'],
      ['assistant', 'said to: ref 1'],
      ['user', 'ref 2'],
      ['assistant', 'said to: ref 2'],
      ['user', 'ref 3'],
    ]);
  }, 60_000);

  it('a conversation: created, continued twice, its items listed, added and deleted', async () => {
    const client = alice();
    const conv = await client.conversations.create({
      items: [{ type: 'message', role: 'user', content: 'opening' }],
    });
    conversation = conv.id;
    expect(conv.id).toMatch(/^conv_[0-9a-f]{48}$/);
    for (const k of [1, 2]) {
      const r = await client.responses.create({ model: 'm', conversation: conv.id, input: `conv turn ${k}` });
      expect(r.output_text).toBe(`said to: conv turn ${k}`);
    }
    expect(lastUpstreamUsers()).toEqual(['opening', 'conv turn 1', 'conv turn 2']);
    const added = await client.conversations.items.create(conv.id, {
      items: [{ type: 'message', role: 'user', content: 'added' }],
    });
    const addedId = (added.data[0] as { id: string }).id;
    const listed = await client.conversations.items.list(conv.id, { order: 'asc' });
    expect(listed.data.map((i) => (i as { id: string }).id)).toContain(addedId);
    await client.conversations.items.delete(addedId, { conversation_id: conv.id });
    const after = await client.conversations.items.list(conv.id, { order: 'asc' });
    expect(after.data.map((i) => (i as { id: string }).id)).not.toContain(addedId);
    expect((await client.conversations.retrieve(conv.id)).id).toBe(conv.id);
  }, 60_000);

  it('a stream resumed with starting_after, then the response deleted', async () => {
    const client = alice();
    const live: { sequence_number: number; type: string }[] = [];
    const stream = await client.responses.create({
      model: 'm',
      previous_response_id: first.id,
      input: 'streamed',
      stream: true,
    });
    for await (const e of stream) live.push(e);
    const done = live.at(-1) as unknown as { type: string; response: OpenAI.Responses.Response };
    expect(done.type).toBe('response.completed');
    const id = done.response.id;
    const from = live[2]!.sequence_number;
    const resumed: { sequence_number: number; type: string }[] = [];
    for await (const e of await client.responses.retrieve(id, { stream: true, starting_after: from }))
      resumed.push(e);
    expect(resumed.map((e) => [e.sequence_number, e.type])).toEqual(
      live.slice(3).map((e) => [e.sequence_number, e.type]),
    );
    expect((await client.responses.retrieve(id)).output_text).toBe('said to: streamed');
    await client.responses.delete(id);
    await expect(client.responses.retrieve(id)).rejects.toMatchObject({ status: 404 });
  }, 60_000);

  it('a relayed stream is passed on as it comes, and a client that leaves ends it on the owner', async () => {
    const [here, there] = await twoWorkers();
    const client = sdkOn(here);
    const abort = new AbortController();
    // Made on the other worker: the stream below is relayed there.
    const anchor = await sdkOn(there).responses.create({ model: 'm', input: 'anchor' });
    const { data: stream, response } = await client.responses
      .create(
        { model: 'held', previous_response_id: anchor.id, input: 'slowly', stream: true },
        { signal: abort.signal },
      )
      .withResponse();
    const reqId = response.headers.get('x-request-id');
    const seen: string[] = [];
    let openStreams: string | undefined;
    const read = (async () => {
      for await (const e of stream) {
        seen.push(e.type);
        if (e.type === 'response.output_text.delta') {
          // The upstream holds the rest: this delta came through the relay before the stream ended.
          await held.holding;
          // Open on the worker that holds it, passed on by the other: the group counts it once.
          openStreams = /^toolproof_open_streams (\d+)$/m.exec(await metrics())?.[1];
          abort.abort();
        }
      }
    })().catch(() => undefined);
    await read;
    await Promise.all([here.close(), there.close()]);
    expect(openStreams).toBe('1');
    expect(seen).toContain('response.output_text.delta');
    expect(seen).not.toContain('response.completed');
    // The worker that holds the chain logged it, relayed and aborted; the one it reached, nothing.
    const line = await cluster.proc.waitFor((l) => l.msg === 'request' && l.reqId === reqId, 10_000);
    expect(line).toMatchObject({ status: 'aborted', relayed: true });
    expect(cluster.proc.lines.filter((l) => l.reqId === reqId && l.msg === 'request')).toHaveLength(1);
  }, 60_000);

  it('a client that leaves before the owner answered: counted and logged once, as aborted, by the owner', async () => {
    const [client, there] = await twoWorkers();
    const anchor = await sdkOn(there).responses.create({ model: 'm', input: 'anchor' });
    await there.close();
    const reqId = `leaves-early-${Date.now()}`;
    const before = held.requests.length;
    const abort = new AbortController();
    const sent = client
      .request({
        method: 'POST',
        path: '/v1/responses',
        signal: abort.signal,
        headers: {
          'content-type': 'application/json',
          authorization: 'Bearer sk-alice-0123456789',
          'x-request-id': reqId,
        },
        body: JSON.stringify({ model: 'held', previous_response_id: anchor.id, input: 'whole' }),
      })
      .catch(() => undefined);
    // The owner's upstream holds the rest of the answer: nothing went back yet.
    while (held.requests.length === before) await new Promise((r) => setTimeout(r, 20));
    abort.abort();
    await sent;
    await client.close();
    const line = await cluster.proc.waitFor((l) => l.msg === 'request' && l.reqId === reqId, 10_000);
    expect(line).toMatchObject({ status: 'aborted', relayed: true });
    await new Promise((r) => setTimeout(r, 200));
    expect(cluster.proc.lines.filter((l) => l.reqId === reqId && l.msg === 'request')).toHaveLength(1);
  }, 60_000);

  it("another key reads, continues and deletes nothing of alice's, whichever worker it reaches", async () => {
    const bob = sdk('bob');
    for (let i = 0; i < 2; i++) {
      await expect(bob.responses.retrieve(first.id)).rejects.toMatchObject({ status: 404 });
      await expect(
        bob.responses.create({ model: 'm', previous_response_id: first.id, input: 'steal' }),
      ).rejects.toMatchObject({ status: 400 });
      await expect(bob.conversations.retrieve(conversation)).rejects.toMatchObject({ status: 404 });
      await expect(bob.responses.delete(first.id)).rejects.toMatchObject({ status: 404 });
    }
    expect((await alice().responses.retrieve(first.id)).id).toBe(first.id);
  }, 60_000);

  it('counts each request once, where it was answered, and the relays beside', async () => {
    const text = await metrics();
    // At least the two made to cross (the turns on fresh connections mostly do too).
    expect(sample(text, 'toolproof_responses_relayed_total', 'outcome="relayed"')).toBeGreaterThanOrEqual(2);
    expect(sample(text, 'toolproof_responses_relayed_total', 'outcome="broken"')).toBe(0);
    // Thirteen turns went upstream (five, three by reference, two of the conversation, one
    // streamed, two anchors; bob's 400s did not), each counted once, by the worker that answered it.
    const answered = sample(text, 'toolproof_requests_total', 'route="responses",status="200"');
    expect(answered).toBe(13);
    // The two clients that left: each once.
    expect(sample(text, 'toolproof_requests_total', 'route="responses",status="aborted"')).toBe(2);
    // bob's eight tries: one each.
    expect(sample(text, 'toolproof_key_requests_total', 'key="bob"')).toBe(8);
  }, 30_000);

  it('a worker that restarted holds nothing: the same 404 as with one worker', async () => {
    const owner = workerOf(first.id);
    const line = cluster.proc.lines.find((l) => String(l.msg).startsWith(`worker ${owner} (pid `));
    const pid = Number(/pid (\d+)/.exec(String(line?.msg))![1]);
    const before = cluster.proc.lines.length;
    process.kill(pid, 'SIGKILL');
    await cluster.proc.waitFor(
      (l) =>
        cluster.proc.lines.indexOf(l) >= before && /^worker \d+ \(pid \d+\) listening$/.test(String(l.msg)),
      30_000,
    );
    for (let i = 0; i < 2; i++) {
      const err = await alice()
        .responses.retrieve(first.id)
        .catch((e: unknown) => e as { status: number; message: string });
      expect(err).toMatchObject({ status: 404 });
      expect((err as { message: string }).message).toContain('is not held by this toolproof');
    }
  }, 60_000);
});
