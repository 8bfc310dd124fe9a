/**
 * Content of types toolproof did not know, in a session's history, through the real server and
 * the real SDKs (openai for chat completions and Responses, @anthropic-ai/sdk for Messages),
 * against the simulator as vLLM and as llama-server, each parser refusing the part types it does
 * not take as the real one does (vLLM's 400 "Unknown part type: <type>", llama-server's
 * "unsupported content[].type"). Three turns each, the whole history re-sent every turn: each
 * answered, nothing upstream that the backend's parser refuses, each later turn's upstream body
 * extending the one before byte for byte (the backend's prompt cache holds).
 *
 * Before: a chat history holding a reasoning model's `thinking` block (LangChain, hermes-agent:
 * llama-server's 400 on every later turn, their own sources say so) or an Anthropic-shaped image
 * block, and any Messages block or Responses part or item of a type toolproof did not know (a
 * newer API's), or Codex's `ghost_snapshot` and `compaction_summary` items, was a 400 on that turn
 * and every later one: the session was dead. Types named `future_*` are made up here, standing for
 * what a newer API adds.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../server/stack.js';
import { prefixBreak } from './raw-json.js';

type Obj = Record<string, unknown>;
const say = { 'x-sim-scenario': JSON.stringify({ say: 'ok' }) };
const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
const TAKES: Record<string, ReadonlySet<string>> = {
  // The part types each parser takes (simulator/vllm.ts, simulator/llama-server-validate.ts).
  vllm: new Set(['text', 'thinking', 'input_text', 'output_text', 'image_url', 'input_audio', 'refusal']),
  'llama-server': new Set(['text', 'image_url', 'input_audio']),
};

function chatBodies(stack: Stack, from: number): Array<{ raw: string; body: Obj }> {
  return stack.sim.requests
    .slice(from)
    .filter((r) => r.path.endsWith('/chat/completions'))
    .map((r) => ({ raw: r.rawBody, body: r.body as Obj }));
}

/** Part types of the body the parser would refuse. */
function refusedTypes(body: Obj, personality: string): string[] {
  const out: string[] = [];
  for (const m of body.messages as Obj[])
    if (Array.isArray(m.content))
      for (const p of m.content as Obj[])
        if (!TAKES[personality]!.has(String(p.type))) out.push(String(p.type));
  return out;
}

for (const personality of ['vllm', 'llama-server'] as const)
  describe(`${personality}: part and item types toolproof did not know, three turns each`, () => {
    let stack: Stack;
    let anthropic: Anthropic;
    beforeAll(async () => {
      stack = await startStack({
        sim: { personality, strictHistory: true, vision: true } as never,
        file: { defaults: { vision: true } } as never,
        // A model per case: what the upstream refused is remembered per model.
        served: ['sim', 'm1', 'm2', 'm3', 'm4'],
      });
      anthropic = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0, timeout: 30_000 });
    });
    afterAll(() => stack.close());

    /** Runs three turns; each answered, the last body of each turn the one answered. */
    async function session(turn: (i: number) => Promise<string>): Promise<string[]> {
      const answered: string[] = [];
      const counts: number[] = [];
      for (let i = 1; i <= 3; i++) {
        const from = stack.sim.requests.length;
        expect(await turn(i), `turn ${i}`).toBe('ok');
        const sent = chatBodies(stack, from);
        counts.push(sent.length);
        const last = sent.at(-1)!;
        expect(refusedTypes(last.body, personality), `turn ${i}`).toEqual([]);
        if (answered.length > 0) expect(prefixBreak(answered.at(-1)!, last.raw), `turn ${i}`).toBeNull();
        answered.push(last.raw);
      }
      // Refused once, on the first turn; the later turns go as the backend takes them from the start.
      expect(counts).toEqual([2, 1, 1]);
      return answered;
    }

    for (const [model, stream] of [
      ['sim', false],
      ['m1', true],
    ] as const)
      it(`chat${stream ? ', streamed' : ''}: a thinking block, a redacted one, an Anthropic image block and Responses text parts`, async () => {
        const client = stack.client;
        const messages: Obj[] = [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: [{ type: 'input_text', text: 'What is this?' }] },
          {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking: 'A small picture.', signature: 'c2ln' },
              { type: 'redacted_thinking', data: 'ZW5jcnlwdGVk' },
              { type: 'text', text: 'Send it.' },
            ],
          },
          {
            role: 'user',
            content: [
              { type: 'text', text: 'Here.' },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
            ],
          },
        ];
        const bodies = await session(async (i) => {
          let text = '';
          if (stream) {
            const s = await client.chat.completions.create(
              { model, messages: messages as never, stream: true },
              { headers: say },
            );
            for await (const chunk of s) text += chunk.choices[0]?.delta?.content ?? '';
          } else {
            const r = await client.chat.completions.create(
              { model, messages: messages as never },
              { headers: say },
            );
            text = r.choices[0]!.message.content ?? '';
          }
          messages.push({ role: 'assistant', content: text });
          messages.push({ role: 'user', content: `go on ${i}` });
          return text;
        });
        const first = JSON.parse(bodies[0]!) as { messages: Obj[] };
        expect(first.messages[1]!.content).toEqual([{ type: 'text', text: 'What is this?' }]);
        expect(first.messages[3]!.content).toEqual([
          { type: 'text', text: 'Here.' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
        ]);
        const said = JSON.stringify(first.messages[2]);
        expect(said).toContain('[content part of type \\"redacted_thinking\\" left out');
        expect(said).toContain('Send it.');
      });

    it('Responses: a part and an item of types toolproof does not know, ghost_snapshot, compaction_summary', async () => {
      const input: Obj[] = [
        {
          type: 'ghost_snapshot',
          ghost_commit: {
            id: 'a1b2c3',
            parent: null,
            preexisting_untracked_files: [],
            preexisting_untracked_dirs: [],
          },
        },
        { type: 'compaction_summary', encrypted_content: 'gAAAAABencrypted' },
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'Go on.' },
            { type: 'future_input_tensor', data: 'AAAA' },
          ],
        },
        { type: 'future_item', id: 'fi_1', payload: { x: 1 } },
        { role: 'user', content: 'Well?' },
      ];
      const bodies = await session(async (i) => {
        const r = await stack.client.responses.create(
          { model: 'm2', input: input as never },
          { headers: say },
        );
        expect(r.status).toBe('completed');
        input.push(...(r.output as unknown as Obj[]));
        input.push({ role: 'user', content: `go on ${i}` });
        return r.output_text;
      });
      const text = bodies[0]!;
      expect(text).toContain(
        'item of type \\"future_item\\" from the API this conversation began on left out',
      );
      expect(text).toContain('[content part of type \\"future_input_tensor\\" left out');
      expect(text).not.toContain('a1b2c3');
    });

    for (const [model, stream] of [
      ['m3', false],
      ['m4', true],
    ] as const)
      it(`Messages${stream ? ', streamed' : ''}: blocks of types toolproof does not know, in user content, a tool_result and the assistant turn`, async () => {
        const messages: Obj[] = [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'Read it.' },
              { type: 'future_block', data: 'AAAA' },
            ],
          },
          {
            role: 'assistant',
            content: [
              { type: 'future_assistant_block', note: 'x' },
              { type: 'tool_use', id: 'toolu_1', name: 'Read', input: { file_path: 'a.txt' } },
            ],
          },
          {
            role: 'user',
            content: [
              {
                type: 'tool_result',
                tool_use_id: 'toolu_1',
                content: [
                  { type: 'text', text: 'hello' },
                  { type: 'future_result_block', text: 'its own words' },
                ],
              },
            ],
          },
        ];
        const tools = [{ name: 'Read', input_schema: { type: 'object' as const } }];
        const bodies = await session(async (i) => {
          const params = { model, max_tokens: 64, messages: messages as never, tools };
          const r = stream
            ? await anthropic.messages.stream(params, { headers: say }).finalMessage()
            : await anthropic.messages.create(params, { headers: say });
          messages.push({ role: 'assistant', content: r.content });
          messages.push({ role: 'user', content: `go on ${i}` });
          return r.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
        });
        const text = bodies[0]!;
        expect(text).toContain(
          '[block of type \\"future_assistant_block\\" from the API this conversation began on',
        );
        expect(text).toContain('[content part of type \\"future_block\\" left out');
        expect(text).toContain('its own words');
      });
  });
