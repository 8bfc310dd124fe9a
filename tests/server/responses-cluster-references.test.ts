/**
 * item_references to items kept on two workers (TOOLPROOF_WORKERS=2; server/front-doors/responses/
 * gather.ts): @ai-sdk/openai's default store: true sends each earlier answer back as a reference,
 * and a turn that carried none may land on the other worker, so one request names items of both.
 * The real process, the real openai SDK, each client pinned to one worker by its connection.
 * Both items go upstream, in either order of the references; another key gets neither; a worker
 * that does not answer (stopped) costs a bounded wait and its item becomes the note, as one killed
 * does. Before, the
 * items of the worker the request was not relayed to were the note.
 */
import type OpenAI from 'openai';
import type { Client } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterOnYaml, freshRequest } from '../support/toolproof-process.js';
import { answeredOnEach, sdkThrough, workerOf } from '../support/worker-clients.js';

const cluster = clusterOnYaml(
  { personality: 'vllm', scenario: (turn) => ({ say: `said to: ${turn.lastUserText}` }) },
  (simUrl) => `
defaults:
  forceToolUse: false
models:
  m:
    upstream: ${simUrl}
keys:
  - { name: alice, key: sk-alice-0123456789 }
  - { name: bob, key: sk-bob-0123456789 }
`,
);

const sdkOn = (client: Client, key = 'alice') => sdkThrough(cluster.origin, client, `sk-${key}-0123456789`);

/** The messages of the last chat request that went upstream, as [role, content]. */
const lastUpstream = () => {
  const chats = cluster.sim.requests.filter((r) => r.path.endsWith('/chat/completions'));
  const messages = (chats.at(-1)!.body as { messages: { role: string; content: unknown }[] }).messages;
  return messages.map((m) => [m.role, m.content]);
};

let here: Client;
let there: Client;
/** An assistant item kept on each worker (alice's). */
let mine: OpenAI.Responses.Response;
let theirs: OpenAI.Responses.Response;

beforeAll(async () => {
  ({ here, there, mine, theirs } = await answeredOnEach(cluster.origin, 'sk-alice-0123456789', [
    'first question',
    'second question',
  ]));
}, 90_000);
afterAll(async () => {
  await here?.close();
  await there?.close();
});

const naming = (first: string, second: string): OpenAI.Responses.ResponseInputItem[] => [
  { role: 'user', content: 'first question' },
  { type: 'item_reference', id: first },
  { role: 'user', content: 'second question' },
  { type: 'item_reference', id: second },
  { role: 'user', content: 'third' },
];

const note = (id: string) => expect.stringContaining(`[earlier output item ${id} left out`);

describe('item_reference to items kept on two workers', () => {
  it('resolves both, whichever worker serves the request and whichever item is named first', async () => {
    const a = mine.output[0]!.id!;
    const b = theirs.output[0]!.id!;
    for (const [client, refs] of [
      [here, [a, b]], // served here, b asked of the other worker
      [here, [b, a]], // relayed there, a placed in it here
      [there, [a, b]],
      [there, [b, a]],
    ] as const) {
      const first = refs[0] === a ? 'said to: first question' : 'said to: second question';
      const second = refs[0] === a ? 'said to: second question' : 'said to: first question';
      const r = await sdkOn(client).responses.create({ model: 'm', input: naming(refs[0], refs[1]) });
      expect(r.output_text).toBe('said to: third');
      expect(lastUpstream()).toEqual([
        ['user', 'first question'],
        ['assistant', first],
        ['user', 'second question'],
        ['assistant', second],
        ['user', 'third'],
      ]);
    }
  }, 60_000);

  it('responses.compact resolves both too', async () => {
    const a = mine.output[0]!.id!;
    const b = theirs.output[0]!.id!;
    for (const client of [here, there]) {
      await sdkOn(client).responses.compact({ model: 'm', input: naming(b, a) });
      const sent = lastUpstream();
      expect(sent[1]).toEqual(['assistant', 'said to: second question']);
      expect(sent[3]).toEqual(['assistant', 'said to: first question']);
    }
  }, 60_000);

  it("another key gets neither of alice's items, asked from either worker", async () => {
    const a = mine.output[0]!.id!;
    const b = theirs.output[0]!.id!;
    for (const client of [here, there]) {
      const r = await sdkOn(client, 'bob').responses.create({ model: 'm', input: naming(a, b) });
      expect(r.output_text).toBe('said to: third');
      const sent = JSON.stringify(lastUpstream());
      expect(sent).not.toContain('said to: first question');
      expect(sent).not.toContain('said to: second question');
      expect(lastUpstream()[1]).toEqual(['assistant', note(a)]);
    }
    // The workers' question is answered on their private sockets only.
    const asked = await freshRequest(cluster.origin, {
      key: 'alice',
      path: '/v1/responses/_worker/items',
      body: JSON.stringify({ ids: [a, b] }),
      headers: { 'content-type': 'application/json' },
    });
    expect(asked.status).toBe(404);
    expect(asked.text).not.toContain('said to');
  }, 60_000);

  it('a worker that does not answer: its item becomes the note after a bounded wait, the rest resolves', async () => {
    const a = mine.output[0]!.id!;
    const b = theirs.output[0]!.id!;
    const owner = workerOf(theirs.id);
    const line = cluster.proc.lines.find((l) => String(l.msg).startsWith(`worker ${owner} (pid `));
    const pid = Number(/pid (\d+)/.exec(String(line?.msg))![1]);
    process.kill(pid, 'SIGSTOP');
    try {
      const r = await sdkOn(here).responses.create({ model: 'm', input: naming(a, b) });
      expect(r.output_text).toBe('said to: third');
      const sent = lastUpstream();
      expect(sent[1]).toEqual(['assistant', 'said to: first question']);
      expect(sent[3]).toEqual(['assistant', note(b)]);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    // The questions, counted by the workers that asked them (/metrics sums the group).
    const text = (await freshRequest(cluster.origin, { method: 'GET', path: '/metrics' })).text;
    const counted = (outcome: string) =>
      text
        .split('\n')
        .filter((l) => l.startsWith(`toolproof_responses_relayed_total{outcome="${outcome}"`))
        .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    expect(counted('unanswered')).toBeGreaterThanOrEqual(1);
    expect(counted('asked')).toBeGreaterThanOrEqual(1);
  }, 60_000);

  it('a worker killed: its item becomes the note, the rest resolves, as it goes and once it restarted', async () => {
    const a = mine.output[0]!.id!;
    const b = theirs.output[0]!.id!;
    const owner = workerOf(theirs.id);
    const line = cluster.proc.lines.find((l) => String(l.msg).startsWith(`worker ${owner} (pid `));
    const pid = Number(/pid (\d+)/.exec(String(line?.msg))![1]);
    const before = cluster.proc.lines.length;
    process.kill(pid, 'SIGKILL');
    const check = async () => {
      const r = await sdkOn(here).responses.create({ model: 'm', input: naming(a, b) });
      expect(r.output_text).toBe('said to: third');
      const sent = lastUpstream();
      expect(sent[1]).toEqual(['assistant', 'said to: first question']);
      expect(sent[3]).toEqual(['assistant', note(b)]);
    };
    // At once (its socket gone, or the primary's word not yet here) and once another took its place.
    await check();
    await cluster.proc.waitFor(
      (l) =>
        cluster.proc.lines.indexOf(l) >= before && /^worker \d+ \(pid \d+\) listening$/.test(String(l.msg)),
      30_000,
    );
    await check();
  }, 60_000);
});
