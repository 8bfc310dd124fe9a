/**
 * POST /v1/responses/compact through the real server and the openai SDK (`responses.compact`),
 * and the Agents SDK's OpenAIResponsesCompactionSession, which calls it once a session's history
 * grows. Before, a 404: the run failed at the session's first compaction. Now the model writes a
 * summary (its last user turn asks for one, no tools), the answer keeps the user messages and a
 * `compaction` item holding the summary, and sent back that item is the summary upstream, also on
 * another toolproof (nothing is kept).
 */
import { OpenAIProvider, OpenAIResponsesCompactionSession, Runner } from '@openai/agents';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../server/stack.js';
import { prefixBreak } from './raw-json.js';

type Msg = { role: string; content?: unknown };
const upstreamMessages = (s: Stack): Msg[][] =>
  s.sim.requests
    .filter((r) => r.path.endsWith('/chat/completions'))
    .map((r) => (r.body as { messages: Msg[] }).messages);
const scenario = (turns: unknown[]) => ({ headers: { 'x-sim-scenario': JSON.stringify({ turns }) } });

describe('responses.compact', () => {
  let stack: Stack;
  let other: Stack;
  beforeAll(async () => {
    [stack, other] = await Promise.all([startStack(), startStack()]);
  });
  afterAll(() => Promise.all([stack.close(), other.close()]));

  it('the user messages and a compaction item; sent back (to another toolproof), the summary upstream', async () => {
    stack.sim.reset();
    const input: OpenAI.Responses.ResponseInputItem[] = [
      { role: 'user', content: 'My name is Ada.' },
      { role: 'assistant', content: 'Hello Ada.' },
      { role: 'user', content: 'Remember 42.' },
    ];
    const compacted = await stack.client.responses.compact(
      { model: 'sim', input },
      scenario([{ say: 'Ada asked to remember 42.' }]),
    );
    expect(compacted.object).toBe('response.compaction');
    expect(compacted.output.map((o) => o.type)).toEqual(['message', 'message', 'compaction']);
    const asked = upstreamMessages(stack).at(-1)!;
    expect(asked.at(-1)!.content).toMatch(/^Summarize the conversation so far/);
    expect(stack.sim.requests.at(-1)!.body).not.toHaveProperty('tools');

    other.sim.reset();
    await other.client.responses.create(
      {
        model: 'sim',
        input: [
          ...(compacted.output as unknown as OpenAI.Responses.ResponseInputItem[]),
          { role: 'user', content: 'What number?' },
        ],
      },
      { headers: { 'x-sim-scenario': 'echo' } },
    );
    const sent = upstreamMessages(other).at(-1)!;
    expect(sent.map((m) => m.role)).toEqual(['user', 'user', 'assistant', 'user']);
    expect(sent[2]!.content).toBe(
      '[summary of the earlier conversation, written when it was compacted]\nAda asked to remember 42.\n',
    );
  });

  it("Codex's history after a remote compaction (codex-rs/core compact_remote.rs): the items as Codex sends them back, its ghost snapshots after them, three turns extending each other", async () => {
    // Codex replaces its history with the endpoint's output items, re-serialized as its
    // ResponseItem (no ids), and appends its ghost_snapshot items (kept for /undo). Before, the
    // ghost_snapshot was a 400 on every later turn.
    const compacted = await stack.client.responses.compact(
      { model: 'sim', input: [{ role: 'user', content: 'Fix the bug in a.rs.' }] },
      scenario([{ say: 'The bug is in a.rs line 3.' }]),
    );
    const history: Array<Record<string, unknown>> = compacted.output.map((o) => {
      const { id: _id, status: _status, ...rest } = o as unknown as Record<string, unknown>;
      return rest;
    });
    history.push({
      type: 'ghost_snapshot',
      ghost_commit: {
        id: '5f1c0de',
        parent: null,
        preexisting_untracked_files: [],
        preexisting_untracked_dirs: [],
      },
    });
    other.sim.reset();
    const bodies: string[] = [];
    for (let turn = 1; turn <= 3; turn++) {
      history.push({
        type: 'message',
        role: 'user',
        content: [{ type: 'input_text', text: `go on ${turn}` }],
      });
      const r = await other.client.responses.create(
        { model: 'sim', input: history as never, store: false },
        { headers: { 'x-sim-scenario': JSON.stringify({ say: `done ${turn}` }) } },
      );
      expect(r.output_text).toBe(`done ${turn}`);
      history.push({
        type: 'message',
        role: 'assistant',
        content: [{ type: 'output_text', text: r.output_text }],
      });
      bodies.push(other.sim.requests.at(-1)!.rawBody);
    }
    expect(other.sim.requests.filter((q) => q.path.endsWith('/chat/completions'))).toHaveLength(3);
    for (let k = 1; k < bodies.length; k++) expect(prefixBreak(bodies[k - 1]!, bodies[k]!)).toBeNull();
    const first = upstreamMessages(other)[0]!;
    expect(JSON.stringify(first)).toContain('The bug is in a.rs line 3.');
    expect(JSON.stringify(first)).not.toContain('5f1c0de');
  });

  it("the Agents SDK's OpenAIResponsesCompactionSession compacts after a run", async () => {
    stack.sim.reset();
    const client = new OpenAI({
      baseURL: stack.url,
      apiKey: 'unused',
      maxRetries: 0,
      timeout: 15_000,
      defaultHeaders: { 'x-sim-scenario': 'echo' },
    });
    const runner = new Runner({
      modelProvider: new OpenAIProvider({ openAIClient: client }),
      tracingDisabled: true,
    });
    const { Agent } = await import('@openai/agents');
    // The session accepts OpenAI model names only (gpt-*); the stack serves any name.
    const agent = new Agent({ name: 'a', instructions: 'Answer.', model: 'gpt-5' });
    const session = new OpenAIResponsesCompactionSession({
      client,
      model: 'gpt-5',
      shouldTriggerCompaction: () => true,
    });
    await runner.run(agent, 'First.', { session });
    const items = await session.getItems();
    expect(items.map((i) => i.type)).toContain('compaction');
    await runner.run(agent, 'Second.', { session });
    const last = upstreamMessages(stack).at(-1)!;
    expect(JSON.stringify(last)).toContain(
      '[summary of the earlier conversation, written when it was compacted]',
    );
  });
});
