/**
 * An agent's compaction turn over the model's window, through the real server on every front
 * door: Claude Code's (Anthropic Messages, its "Respond with TEXT ONLY" prompt), Codex's local one
 * (Responses, "CONTEXT CHECKPOINT COMPACTION") and the openai SDK's responses.compact. Agents
 * compact when the history grows, and some only after the backend refused a turn as too long, so
 * the compaction carries a history over the window. It was relayed whole: the backend refused it,
 * the agent could not compact, and every later turn, longer still, was refused too. Now the oldest
 * messages are left out with a note saying so (policies/truncation), and the summary is written.
 * A turn that is no compaction is still the backend's context_length_exceeded (the agent's cue to
 * compact). The simulator enforces an 8k window and counts CJK a token a character.
 */
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../protocol/openai.js';
import { decodeOwnCompaction } from '../../protocol/responses/compaction.js';
import { AGENT_COMPACTIONS, sessionTools } from '../support/agent-compactions.js';
import { type Stack, startStack } from '../server/stack.js';

/** `lines` lines of Chinese text (~30 tokens each), numbered by turn. */
const cjk = (lines: number, turn: number) =>
  Array.from(
    { length: lines },
    (_, i) => `第${turn}轮第${i}行：这是一段很长的中文说明，用来填满模型的上下文窗口。`,
  ).join('\n');
/** Twelve turns of ~1,200 tokens: about twice the window. */
const history = () =>
  Array.from({ length: 12 }, (_, turn) => [
    { role: 'user' as const, content: cjk(30, turn) },
    { role: 'assistant' as const, content: cjk(10, turn) },
  ]).flat();
const say = { 'x-sim-scenario': JSON.stringify({ say: 'The summary.' }) };
const NOTE =
  /^\[toolproof left out the \d+ oldest messages of this conversation to fit the model's context window \(a compaction over the window\)\]$/;
type Sent = { messages: Array<{ role: string; content: unknown }> };

for (const personality of ['vllm', 'llama-server'] as const) {
  describe(`a compaction over an 8k window on ${personality}`, () => {
    let stack: Stack;
    beforeAll(async () => {
      stack = await startStack({
        sim: { personality, maxModelLen: 8192, nCtx: 8192, enforceWindow: true } as never,
      });
    });
    afterAll(() => stack.close());
    const lastSent = () => stack.sim.requests.at(-1)!.body as Sent;

    it("Claude Code's (Anthropic Messages, text only): the summary, the oldest turns left out with a note", async () => {
      const prompt =
        'CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\nYour task is to create a detailed summary of the conversation so far.';
      const res = await fetch(`${stack.origin}/v1/messages`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'anthropic-version': '2023-06-01',
          'x-api-key': 'x',
          ...say,
        },
        body: JSON.stringify({
          model: 'sim',
          max_tokens: 512,
          system: 'You are Claude Code.',
          messages: [...history(), { role: 'user', content: prompt }],
          tools: [
            { name: 'Bash', input_schema: { type: 'object', properties: { command: { type: 'string' } } } },
          ],
        }),
      });
      const body = (await res.json()) as { content?: Array<{ text?: string }> };
      expect(res.status, JSON.stringify(body).slice(0, 300)).toBe(200);
      expect(body.content?.[0]?.text).toBe('The summary.');
      const sent = lastSent().messages;
      expect(sent[0]?.role).toBe('system');
      expect(String(sent[1]?.content)).toMatch(NOTE);
      expect(JSON.stringify(sent.at(-1)?.content)).toContain('Respond with TEXT ONLY');
    });

    it("Codex's local compaction (Responses): completed, the oldest turns left out with a note", async () => {
      const r = await stack.client.responses.create(
        {
          model: 'sim',
          input: [
            ...history(),
            {
              role: 'user',
              content:
                'You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM that will resume the task.',
            },
          ],
        },
        { headers: say },
      );
      expect(r.status).toBe('completed');
      expect(r.output_text).toBe('The summary.');
      expect(String(lastSent().messages[0]?.content)).toMatch(NOTE);
    });

    it('responses.compact (the openai SDK, the Agents SDK compaction session): the compaction item', async () => {
      const compacted = await stack.client.responses.compact(
        { model: 'sim', input: history() as OpenAI.Responses.ResponseInputItem[] },
        { headers: say },
      );
      expect(compacted.output.at(-1)?.type).toBe('compaction');
      expect(String(lastSent().messages[0]?.content)).toMatch(NOTE);
    });

    // Each agent's own compaction (tests/support/agent-compactions.ts), as it sends it: streamed
    // chat completions. Before, only Claude Code's and Codex's were known; the rest were refused.
    AGENT_COMPACTIONS.forEach((agent, i) => {
      it(`${agent.source}: the summary (chat completions, ${i % 2 ? 'not ' : ''}streamed)`, async () => {
        const messages = agent.messages(history() as ChatMessage[], cjk(360, 99)) as never;
        const body = { model: 'sim', messages, ...(agent.tools ? { tools: sessionTools } : {}) };
        let text = '';
        if (i % 2) {
          const r = await stack.client.chat.completions.create(body, { headers: say });
          text = r.choices[0]?.message.content ?? '';
        } else {
          const stream = await stack.client.chat.completions.create(
            { ...body, stream: true },
            { headers: say },
          );
          for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
        }
        expect(text).toBe('The summary.');
        expect(JSON.stringify(lastSent().messages)).toContain('(a compaction over the window)');
      });
    });

    // pi speaks each of the three APIs: its compaction (the conversation in its one user turn) on
    // the other two doors, streamed as pi streams.
    const pi = AGENT_COMPACTIONS.find((a) => a.source.startsWith('pi '))!;
    const [piSystem, piUser] = pi.messages([], cjk(360, 99)) as Array<{ content: unknown }>;
    it("pi's compaction on Anthropic Messages (streamed): the summary", async () => {
      const res = await fetch(`${stack.origin}/v1/messages`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'anthropic-version': '2023-06-01',
          'x-api-key': 'x',
          ...say,
        },
        body: JSON.stringify({
          model: 'sim',
          max_tokens: 2048,
          stream: true,
          system: [{ type: 'text', text: piSystem!.content }],
          messages: [{ role: 'user', content: piUser!.content }],
        }),
      });
      const text = (await res.text())
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => (JSON.parse(l.slice(6)) as { delta?: { text?: string } }).delta?.text ?? '')
        .join('');
      expect(res.status).toBe(200);
      expect(text).toBe('The summary.');
      expect(JSON.stringify(lastSent().messages)).toContain('(a compaction over the window)');
    });
    it("pi's compaction on Responses (streamed): the summary", async () => {
      const parts = piUser!.content as Array<{ text: string }>;
      const events = await stack.client.responses.create(
        {
          model: 'sim',
          stream: true,
          store: false,
          instructions: String(piSystem!.content),
          input: [{ role: 'user', content: [{ type: 'input_text', text: parts[0]!.text }] }],
        },
        { headers: say },
      );
      let text = '';
      for await (const e of events) if (e.type === 'response.completed') text = e.response.output_text;
      expect(text).toBe('The summary.');
      expect(JSON.stringify(lastSent().messages)).toContain('(a compaction over the window)');
    });

    // OpenAI's compaction on its servers, asked by a compaction_trigger as the last input item
    // (Codex's remote compaction sends it with its tools): answered with a compaction item that
    // holds the model's summary, as /v1/responses/compact's. Before, a 400 on every such request.
    for (const stream of [false, true])
      it(`compaction_trigger (Responses, ${stream ? '' : 'not '}streamed): a compaction item, over the window too`, async () => {
        const input = [...history(), { type: 'compaction_trigger' }] as never;
        const tools = [{ type: 'function' as const, name: 'shell', parameters: {}, strict: false }];
        let output: OpenAI.Responses.ResponseOutputItem[];
        if (stream) {
          const events = await stack.client.responses.create(
            { model: 'sim', input, tools, stream: true },
            { headers: say },
          );
          const done: unknown[] = [];
          output = [];
          for await (const e of events) {
            if (e.type === 'response.output_item.done') done.push(e.item);
            if (e.type === 'response.completed') output = e.response.output;
          }
          expect(done).toEqual(output);
        } else {
          const r = await stack.client.responses.create({ model: 'sim', input, tools }, { headers: say });
          expect(r.status).toBe('completed');
          output = r.output;
        }
        expect(output).toHaveLength(1);
        const item = output[0] as { type: string; encrypted_content: string };
        expect(item.type).toBe('compaction');
        expect(decodeOwnCompaction(item.encrypted_content)).toBe('The summary.');
        const sent = lastSent().messages;
        expect(String(sent[0]?.content)).toMatch(NOTE);
        expect(String(sent.at(-1)?.content)).toContain(
          '[compaction_trigger: the conversation is compacted here.',
        );
        // Sent back in place of the conversation, the item is the summary on the next turn.
        await stack.client.responses.create(
          { model: 'sim', input: [item, { role: 'user', content: 'Go on.' }] as never, tools },
          { headers: say },
        );
        expect(JSON.stringify(lastSent().messages)).toContain('The summary.');
      });

    it('a turn that is no compaction is still context_length_exceeded (the cue to compact)', async () => {
      const err = await stack.client.responses
        .create(
          { model: 'sim', input: [...history(), { role: 'user', content: 'And then?' }] },
          { headers: say },
        )
        .catch((e: unknown) => e as { status?: number; code?: string });
      expect(err).toMatchObject({ status: 400, code: 'context_length_exceeded' });
    });
  });
}
