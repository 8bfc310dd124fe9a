/**
 * One long agent session per door (chat completions, Responses, Messages), streamed and not,
 * carrying what real sessions carry, the whole history re-sent every turn, against a strict
 * text-only backend (the llama-server simulator refusing images, unpaired tool calls and a prompt
 * over its window; every body also checked here for parts other than text). Turn by turn: PDFs
 * (a text one, one with Flate-compressed pages, a scanned one, an encrypted one, a truncated one)
 * and images (png, jpeg, webp, gif, a corrupt one) in the first user turn, with a session begun on
 * the vendor's API before it (signed and redacted thinking, OpenAI's encrypted reasoning); a
 * 300 KB tool result; a result of parts (text, image, PDF); a JSON-schema answer format beside
 * tools; a hosted tool in the list and cache_control everywhere; an upstream 500 mid-stream, the
 * turn sent again as agents do; a compaction request without tools. Every turn is answered, no
 * part but text reaches the backend, each note says what it stands for, and each turn's upstream
 * messages begin with the previous turn's, byte for byte (the backend's prompt cache holds).
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TurnAction } from '../../simulator/index.js';
import { encryptedPdf, imageOnlyPdf, textPdf } from '../support/pdf.js';
import { startStack, type Stack } from '../server/stack.js';
import { prefixBreak } from './raw-json.js';

type Obj = Record<string, unknown>;

const b64 = (b: Buffer) => b.toString('base64');
const GOOD = textPdf(['The audit number is 58213.', 'Second page.', 'Third page.']);
const PDFS: Array<[string, string]> = [
  ['report.pdf', b64(textPdf(['The audit number is 58213.', 'Second page.', 'Third page.']))],
  ['packed.pdf', b64(textPdf(['Packed page one.', 'Packed page two.'], { flate: true }))],
  ['scan.pdf', b64(imageOnlyPdf())],
  ['locked.pdf', b64(encryptedPdf())],
  ['cut.pdf', b64(GOOD.subarray(0, Math.floor(GOOD.length / 2)))],
];
const IMAGES: Array<[string, string]> = [
  [
    'image/png',
    'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  ],
  ['image/jpeg', b64(Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 16, 0x4a, 0x46, 0x49, 0x46, 0, 1, 0xff, 0xd9]))],
  ['image/webp', 'UklGRh4AAABXRUJQVlA4TBEAAAAvAAAAAAfQ//73v/+BiOh/AAA='],
  ['image/gif', 'R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7'],
  ['image/png', 'AAAAnotanimage'],
];
const BIG = Array.from({ length: 6_000 }, (_, k) => `row ${k} ${'z'.repeat(40)}`).join('\n'); // ~300 KB

/** What a strict text-only backend refuses in a chat body; [] when it takes it. */
function strictProblems(body: Obj): string[] {
  const out: string[] = [];
  const msgs = body.messages as Obj[];
  msgs.forEach((m, i) => {
    if (!['system', 'user', 'assistant', 'tool'].includes(String(m.role))) out.push(`${i}: role ${m.role}`);
    const c = m.content;
    if (Array.isArray(c)) {
      for (const p of c as Obj[]) if (p.type !== 'text') out.push(`${i}: part ${String(p.type)}`);
    } else if (c !== null && c !== undefined && typeof c !== 'string') out.push(`${i}: content ${typeof c}`);
    for (const tc of (m.tool_calls as Obj[] | undefined) ?? []) {
      if (typeof tc.id !== 'string' || !tc.id) out.push(`${i}: call id`);
      try {
        JSON.parse(String((tc.function as Obj).arguments));
      } catch {
        out.push(`${i}: call args`);
      }
    }
  });
  return out;
}

const READ = { name: 'Read', arguments: { file_path: 'a.txt' } };
/** The model's action for each turn of a session (the simulator answers the turn's first request). */
const PLAN: TurnAction[] = [
  { call: [READ] }, // 1: documents + images in user content -> a call
  { call: [READ] }, // 2: a 300 KB result -> a call
  { think: 'Let me look again.', call: [READ] }, // 3: a result of parts -> reasoning + a call
  { say: '{"answer":"58213"}' }, // 4: a result; response_format beside tools
  { say: 'Sure.' }, // 5: cache_control everywhere, a hosted tool in the list
  { error: { status: 500, message: 'boom', midStream: true }, raw: 'partial ' }, // 6: 500 mid-stream
  { say: 'Summary: the audit number is 58213.' }, // 7: compaction, no tools
];

interface Door {
  /** Sends turn i (1-based) with the whole history; returns the answer's text; appends it. */
  turn(i: number, stream: boolean): Promise<string>;
}

function lastChatBodies(stack: Stack): Array<{ raw: string; body: Obj }> {
  return stack.sim.requests
    .filter((r) => r.path.endsWith('/chat/completions'))
    .map((r) => ({ raw: r.rawBody, body: r.body as Obj }));
}

describe('a long session with real content, every door, a strict text-only backend', () => {
  let stack: Stack;
  let anthropic: Anthropic;
  beforeAll(async () => {
    stack = await startStack({
      sim: { personality: 'llama-server', strictHistory: true, enforceWindow: true, nCtx: 32768 },
      // The window as main.ts reads it from /props at start-up (the stack does not probe).
      file: { defaults: { vision: false, contextWindow: 32768 } },
    });
    anthropic = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0, timeout: 60_000 });
  });
  afterAll(() => stack.close());

  async function run(door: Door, stream: boolean): Promise<void> {
    const firsts: string[] = [];
    for (let i = 1; i <= PLAN.length; i++) {
      let n = 0;
      stack.sim.setScenario(() => (n++ === 0 ? PLAN[i - 1]! : { say: 'again' }));
      const before = lastChatBodies(stack).length;
      let text: string;
      try {
        text = await door.turn(i, stream);
      } catch (err) {
        if (i !== 6) throw new Error(`turn ${i}: ${(err as Error).message}`);
        // the scripted 500: the client sends the same turn again, as agents do
        expect((err as Error).message).toContain('boom');
        text = await door.turn(i, stream);
      }
      expect(text, `turn ${i}`).toBeDefined();
      const sent = lastChatBodies(stack).slice(before);
      expect(sent.length, `turn ${i} went upstream`).toBeGreaterThan(0);
      for (const s of sent) expect(strictProblems(s.body), `turn ${i}`).toEqual([]);
      firsts.push(sent[0]!.raw);
    }
    const breaks: string[] = [];
    for (let i = 1; i < firsts.length; i++) {
      const b = prefixBreak(firsts[i - 1]!, firsts[i]!, { tools: false });
      if (b) breaks.push(`turn ${i + 1}: ${b}`);
    }
    expect(breaks).toEqual([]);
    const last = firsts.at(-1)!;
    for (const note of [
      '[document: report.pdf (PDF, 3 pages',
      '[document: packed.pdf (PDF, 2 pages',
      'Packed page two.',
      '[document not read: scan.pdf (application/pdf, 944 B): it holds no text layer',
      '[document not read: locked.pdf (application/pdf, 895 B): it is encrypted]',
      '[document not read: cut.pdf (application/pdf, 570 B): it is not a readable PDF]',
      '[image omitted: image/jpeg, 14 B; this model cannot read images]',
      '[image omitted: image/webp, 38 B; this model cannot read images]',
      '[image omitted: image/gif, 42 B; this model cannot read images]',
      '[image omitted: image/png, 10 B; this model cannot read images]',
      "to fit the model's context window; re-run with a narrower command",
    ])
      expect(last).toContain(note);
    // The result of parts: its image a note, its PDF the text.
    expect(last.split('[image omitted: image/png, 70 B;').length).toBe(3);
    expect(last.split('The audit number is 58213.').length).toBe(3);
  }

  for (const stream of [false, true]) {
    it(`messages${stream ? ' (streamed)' : ''}`, async () => {
      const cc = { type: 'ephemeral' as const };
      const tools: Obj[] = [
        {
          name: 'Read',
          description: 'Read a file',
          input_schema: { type: 'object', properties: { file_path: { type: 'string' } } },
        },
      ];
      const messages: Obj[] = [
        // A session begun on Anthropic's API: signed thinking, redacted thinking.
        { role: 'user', content: 'Hello.' },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'The user greets me.', signature: 'EqQBCkYIBxgCKkDsig' },
            {
              type: 'redacted_thinking',
              data: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP',
            },
            { type: 'text', text: 'Hi.' },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Read all of these.', cache_control: cc },
            ...PDFS.map(([title, data]) => ({
              type: 'document',
              title,
              source: { type: 'base64', media_type: 'application/pdf', data },
              cache_control: cc,
            })),
            ...IMAGES.map(([media_type, data]) => ({
              type: 'image',
              source: { type: 'base64', media_type, data },
              cache_control: cc,
            })),
          ],
        },
      ];
      const door: Door = {
        async turn(i, stream) {
          const params: Obj = {
            model: 'sim',
            max_tokens: 1000,
            system: [
              { type: 'text', text: 'You are an agent.' },
              { type: 'text', text: 'Be careful.', cache_control: cc },
            ],
            messages,
            tools:
              i === 7
                ? undefined
                : i === 5
                  ? [...tools, { type: 'web_search_20250305', name: 'web_search', max_uses: 3 }]
                  : tools.map((t) => ({ ...t, cache_control: cc })),
            thinking: { type: 'enabled', budget_tokens: 500 },
          };
          if (i === 4)
            params.output_config = {
              format: {
                type: 'json_schema',
                schema: {
                  type: 'object',
                  properties: { answer: { type: 'string' } },
                  required: ['answer'],
                  additionalProperties: false,
                },
              },
            };
          if (i === 7)
            messages.push({
              role: 'user',
              content: 'Your task is to create a detailed summary of the conversation so far.',
            });
          // Claude Code counts the conversation before it sends it.
          const { max_tokens: _m, ...countable } = params;
          expect((await anthropic.messages.countTokens(countable as never)).input_tokens).toBeGreaterThan(0);
          const msg = stream
            ? await anthropic.messages.stream(params as never).finalMessage()
            : await anthropic.messages.create(params as never);
          if (i === 7) return msg.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
          messages.push({ role: 'assistant', content: msg.content });
          const uses = msg.content.filter((b) => b.type === 'tool_use');
          const result = (content: unknown) =>
            uses.map((u, k) => ({
              type: 'tool_result',
              tool_use_id: u.id,
              content: k === 0 ? content : 'ok',
              cache_control: cc,
            }));
          if (i === 1) messages.push({ role: 'user', content: result(BIG) });
          else if (i === 2)
            messages.push({
              role: 'user',
              content: result([
                { type: 'text', text: 'two parts' },
                { type: 'image', source: { type: 'base64', media_type: IMAGES[0]![0], data: IMAGES[0]![1] } },
                {
                  type: 'document',
                  source: { type: 'base64', media_type: 'application/pdf', data: PDFS[0]![1] },
                },
              ]),
            });
          else if (uses.length > 0) messages.push({ role: 'user', content: result('ok') });
          else
            messages.push({
              role: 'user',
              content: [{ type: 'text', text: `go on ${i}`, cache_control: cc }],
            });
          return msg.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
        },
      };
      await run(door, stream);
    }, 120_000);

    it(`chat${stream ? ' (streamed)' : ''}`, async () => {
      const tools = [
        {
          type: 'function',
          function: {
            name: 'Read',
            parameters: { type: 'object', properties: { file_path: { type: 'string' } } },
          },
        },
      ];
      const messages: Obj[] = [
        {
          role: 'system',
          content: [{ type: 'text', text: 'You are an agent.', cache_control: { type: 'ephemeral' } }],
        },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Read all of these.' },
            ...PDFS.map(([filename, data]) => ({
              type: 'file',
              file: { filename, file_data: `data:application/pdf;base64,${data}` },
            })),
            ...IMAGES.map(([media, data]) => ({
              type: 'image_url',
              image_url: { url: `data:${media};base64,${data}` },
            })),
          ],
        },
      ];
      const door: Door = {
        async turn(i, stream) {
          const params: Obj = { model: 'sim', messages, tools: i === 7 ? undefined : tools };
          if (i === 4)
            params.response_format = {
              type: 'json_schema',
              json_schema: {
                name: 'a',
                strict: true,
                schema: {
                  type: 'object',
                  properties: { answer: { type: 'string' } },
                  required: ['answer'],
                  additionalProperties: false,
                },
              },
            };
          if (i === 7) messages.push({ role: 'user', content: 'Summarize the conversation so far.' });
          const completion = stream
            ? await stack.client.chat.completions.stream(params as never).finalChatCompletion()
            : await stack.client.chat.completions.create(params as never);
          const msg = completion.choices[0]!.message as unknown as Obj & {
            tool_calls?: Array<{ id: string }>;
          };
          if (i === 7) return String(msg.content ?? '');
          const { parsed: _p, ...rest } = msg;
          messages.push(rest);
          const calls = msg.tool_calls ?? [];
          calls.forEach((c, k) => {
            const content =
              k > 0
                ? 'ok'
                : i === 1
                  ? BIG
                  : i === 2
                    ? [
                        { type: 'text', text: 'two parts' },
                        { type: 'image_url', image_url: { url: `data:image/png;base64,${IMAGES[0]![1]}` } },
                        {
                          type: 'file',
                          file: {
                            filename: 'r.pdf',
                            file_data: `data:application/pdf;base64,${PDFS[0]![1]}`,
                          },
                        },
                      ]
                    : 'ok';
            messages.push({ role: 'tool', tool_call_id: c.id, content });
          });
          if (calls.length === 0) messages.push({ role: 'user', content: `go on ${i}` });
          return String(msg.content ?? '');
        },
      };
      await run(door, stream);
    }, 120_000);

    for (const chained of [false, true])
      it(`responses${chained ? ' (previous_response_id)' : ''}${stream ? ' (streamed)' : ''}`, async () => {
        // chained: each turn sends only the items since the response it names (the openai and Agents
        // SDKs' previous_response_id); toolproof rebuilds the conversation from what it kept, and the
        // upstream gets the same bytes as from a client that sends it whole.
        let previous: string | undefined;
        let fresh: Obj[] = [];
        const tools: Obj[] = [
          {
            type: 'function',
            name: 'Read',
            parameters: { type: 'object', properties: { file_path: { type: 'string' } } },
            strict: false,
          },
        ];
        const input: Obj[] = [
          { role: 'user', content: 'Hello.' },
          // A session begun on OpenAI's API: its encrypted reasoning, with a summary.
          {
            type: 'reasoning',
            id: 'rs_1',
            summary: [{ type: 'summary_text', text: 'Greeting.' }],
            encrypted_content: 'gAAAAABoPENAIencrypted',
          },
          {
            type: 'message',
            role: 'assistant',
            content: [{ type: 'output_text', text: 'Hi.', annotations: [] }],
          },
          {
            role: 'user',
            content: [
              { type: 'input_text', text: 'Read all of these.' },
              ...PDFS.map(([filename, data]) => ({
                type: 'input_file',
                filename,
                file_data: `data:application/pdf;base64,${data}`,
              })),
              ...IMAGES.map(([media, data]) => ({
                type: 'input_image',
                image_url: `data:${media};base64,${data}`,
                detail: 'auto',
              })),
            ],
          },
        ];
        const door: Door = {
          async turn(i, stream) {
            const params: Obj = {
              model: 'sim',
              instructions: 'You are an agent.',
              input: previous === undefined ? input : fresh,
              ...(previous === undefined ? {} : { previous_response_id: previous }),
              ...(chained ? {} : { store: false }),
              include: ['reasoning.encrypted_content'],
              tools: i === 7 ? undefined : i === 5 ? [...tools, { type: 'web_search' }] : tools,
            };
            if (i === 4)
              params.text = {
                format: {
                  type: 'json_schema',
                  name: 'a',
                  strict: true,
                  schema: {
                    type: 'object',
                    properties: { answer: { type: 'string' } },
                    required: ['answer'],
                    additionalProperties: false,
                  },
                },
              };
            if (i === 7) {
              input.push({ role: 'user', content: 'Summarize the conversation so far.' });
              fresh.push(input.at(-1)!);
            }
            const res = stream
              ? await stack.client.responses.stream(params as never).finalResponse()
              : await stack.client.responses.create(params as never);
            expect(res.status).toBe('completed');
            if (chained) {
              previous = res.id;
              fresh = [];
            }
            if (i === 7) return res.output_text;
            let called = 0;
            for (const item of res.output) {
              const { parsed_arguments: _p, ...rest } = item as unknown as Obj;
              input.push(rest);
              if (item.type === 'function_call') {
                const output =
                  called++ > 0
                    ? 'ok'
                    : i === 1
                      ? BIG
                      : i === 2
                        ? [
                            { type: 'input_text', text: 'two parts' },
                            {
                              type: 'input_image',
                              image_url: `data:image/png;base64,${IMAGES[0]![1]}`,
                              detail: 'auto',
                            },
                            {
                              type: 'input_file',
                              filename: 'r.pdf',
                              file_data: `data:application/pdf;base64,${PDFS[0]![1]}`,
                            },
                          ]
                        : 'ok';
                input.push({ type: 'function_call_output', call_id: item.call_id, output });
                fresh.push(input.at(-1)!);
              }
            }
            if (called === 0) {
              input.push({ role: 'user', content: `go on ${i}` });
              fresh.push(input.at(-1)!);
            }
            return res.output_text;
          },
        };
        await run(door, stream);
      }, 120_000);
  }
});
