/**
 * A session that attaches PDFs and goes on for six turns, each turn re-sending the whole history
 * as agents do, on each door in the shape its clients send: a chat `file` part (a data URL, and
 * bare base64, which OpenAI's chat API takes as well and which the Responses door already read),
 * a Responses `input_file`, a Messages `document`. Beside the readable PDF: a scanned one (no
 * text layer), an encrypted one and a corrupt one, each a note. Every turn is answered, streamed
 * and not, and the upstream gets the same document bytes every turn (the prompt prefix holds).
 * Through the real server against the simulator, with the real SDKs.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encryptedPdf, imageOnlyPdf, textPdf } from '../support/pdf.js';
import { startStack, type Stack } from '../server/stack.js';

const GOOD = textPdf(['The audit number is 58213.', 'Second page.']).toString('base64');
const SCANNED = imageOnlyPdf().toString('base64');
const LOCKED = encryptedPdf().toString('base64');
const CORRUPT = Buffer.from('%PDF-1.7\nthis is not a PDF body at all\n%%EOF').toString('base64');
const TURNS = 6;

/** The first user turn as the upstream got it (where the documents are), as text. */
function documentText(body: string): string {
  const sent = JSON.parse(body) as { messages: Array<{ role: string; content: unknown }> };
  const first = sent.messages.find((m) => m.role === 'user')!.content;
  return typeof first === 'string' ? first : JSON.stringify(first);
}

describe('a PDF session, six turns, every door', () => {
  let stack: Stack;
  let anthropic: Anthropic;
  beforeAll(async () => {
    stack = await startStack({ sim: { personality: 'vllm', scenario: 'demo' } });
    anthropic = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0, timeout: 30_000 });
  });
  afterAll(() => stack.close());

  /** Runs TURNS turns of `turn(history index)`, returns the document text the upstream got each turn. */
  async function session(turn: (i: number) => Promise<void>): Promise<string[]> {
    const seen: string[] = [];
    for (let i = 0; i < TURNS; i++) {
      stack.sim.reset();
      await turn(i);
      seen.push(documentText(stack.sim.requests.at(-1)!.rawBody));
    }
    return seen;
  }

  function expectSameDocuments(seen: string[], notes: number): void {
    expect(seen[0]).toContain('The audit number is 58213.');
    expect(seen[0]).toContain('text extracted by the proxy');
    expect(seen[0]!.match(/\[document not read:/g) ?? []).toHaveLength(notes);
    expect(new Set(seen).size).toBe(1);
  }

  for (const stream of [false, true]) {
    for (const [shape, data] of [
      ['data URL', (b64: string) => `data:application/pdf;base64,${b64}`],
      ['bare base64', (b64: string) => b64],
    ] as const) {
      it(`chat${stream ? ' (streamed)' : ''}: file parts as a ${shape}`, async () => {
        const file = (name: string, b64: string) => ({
          type: 'file' as const,
          file: { filename: name, file_data: data(b64) },
        });
        const history: Array<Record<string, unknown>> = [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'What do these say?' },
              file('report.pdf', GOOD),
              file('scan.pdf', SCANNED),
              file('locked.pdf', LOCKED),
              file('broken.pdf', CORRUPT),
            ],
          },
        ];
        const seen = await session(async (i) => {
          const params = { model: 'sim', messages: history as never };
          let text = '';
          if (stream) {
            const s = await stack.client.chat.completions.create({ ...params, stream: true });
            for await (const c of s) text += c.choices[0]?.delta.content ?? '';
          } else
            text = (await stack.client.chat.completions.create(params)).choices[0]?.message.content ?? '';
          expect(text).toBeTruthy();
          history.push({ role: 'assistant', content: text }, { role: 'user', content: `and then ${i}?` });
        });
        expectSameDocuments(seen, 3);
      });
    }

    it(`responses${stream ? ' (streamed)' : ''}: input_file parts`, async () => {
      const file = (name: string, b64: string) => ({
        type: 'input_file' as const,
        filename: name,
        file_data: `data:application/pdf;base64,${b64}`,
      });
      const input: Array<Record<string, unknown>> = [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'What do these say?' },
            file('report.pdf', GOOD),
            file('scan.pdf', SCANNED),
            file('locked.pdf', LOCKED),
            file('broken.pdf', CORRUPT),
          ],
        },
      ];
      const seen = await session(async (i) => {
        const params = { model: 'sim', input: input as never, store: false };
        const res = stream
          ? await stack.client.responses.stream(params).finalResponse()
          : await stack.client.responses.create(params);
        expect(res.status).toBe('completed');
        input.push(
          { role: 'assistant', content: res.output_text },
          { role: 'user', content: `and then ${i}?` },
        );
      });
      expectSameDocuments(seen, 3);
    });

    it(`messages${stream ? ' (streamed)' : ''}: document blocks`, async () => {
      const doc = (title: string, b64: string) => ({
        type: 'document' as const,
        title,
        source: { type: 'base64' as const, media_type: 'application/pdf' as const, data: b64 },
      });
      const messages: Anthropic.MessageParam[] = [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What do these say?' },
            doc('report.pdf', GOOD),
            doc('scan.pdf', SCANNED),
            doc('locked.pdf', LOCKED),
            doc('broken.pdf', CORRUPT),
          ],
        },
      ];
      const seen = await session(async (i) => {
        const params = {
          model: 'sim',
          max_tokens: 200,
          messages,
          tools: [{ name: 'Read', input_schema: { type: 'object' as const, properties: {} } }],
        };
        const msg = stream
          ? await anthropic.messages.stream(params).finalMessage()
          : await anthropic.messages.create(params);
        expect(msg.type).toBe('message');
        messages.push(
          { role: 'assistant', content: msg.content },
          { role: 'user', content: `and then ${i}?` },
        );
        // A tool_use the model made gets its result on the next turn, as an agent sends it.
        const uses = msg.content.filter((b) => b.type === 'tool_use');
        if (uses.length > 0)
          messages[messages.length - 1] = {
            role: 'user',
            content: uses.map((u) => ({ type: 'tool_result' as const, tool_use_id: u.id, content: 'ok' })),
          };
      });
      expectSameDocuments(seen, 3);
    });

    // A Responses input_file of bare base64 that is no PDF (a .docx: a zip's bytes, "UEsDB"), in a
    // stored session (previous_response_id: the store replays it): the note said "not a base64
    // data URL", which it never claimed to be; it says what it is and why the proxy left it out,
    // the same on every turn.
    it(`responses${stream ? ' (streamed)' : ''}: a bare base64 non-PDF input_file, stored`, async () => {
      const docx = Buffer.from('PK\x03\x04 a word document, zipped').toString('base64');
      let previous: string | undefined;
      const seen = await session(async (i) => {
        const params = {
          model: 'sim',
          ...(previous ? { previous_response_id: previous } : {}),
          input:
            i === 0
              ? [
                  {
                    role: 'user' as const,
                    content: [
                      { type: 'input_text' as const, text: 'What does it say?' },
                      { type: 'input_file' as const, filename: 'memo.docx', file_data: docx },
                    ],
                  },
                ]
              : `and then ${i}?`,
        };
        const res = stream
          ? await stack.client.responses.stream(params).finalResponse()
          : await stack.client.responses.create(params);
        expect(res.status).toBe('completed');
        previous = res.id;
      });
      expect(seen[0]).toContain(
        '[document not read: memo.docx (28 B): its file_data is bare base64 with no media type, and neither its first bytes',
      );
      expect(seen[0]).toContain('say it is a PDF or plain text, the only documents the proxy reads]');
      expect(seen[0]).not.toContain('data URL');
      expect(new Set(seen).size).toBe(1);
    });

    // Codex declares the hosted web_search on every request, Claude Code its WebSearch server tool
    // on some: left out (hostedTools: drop), it made toolproof run the request policies before the
    // PDFs were read, and every document became "it was not extracted".
    it(`beside a hosted tool${stream ? ' (streamed)' : ''}: responses and messages read the PDF`, async () => {
      stack.sim.reset();
      const params = {
        model: 'sim',
        store: false,
        input: [
          {
            role: 'user' as const,
            content: [
              { type: 'input_text' as const, text: 'What does it say?' },
              {
                type: 'input_file' as const,
                filename: 'report.pdf',
                file_data: `data:application/pdf;base64,${GOOD}`,
              },
            ],
          },
        ],
        tools: [
          { type: 'web_search' as const },
          {
            type: 'function' as const,
            name: 'shell',
            parameters: { type: 'object', properties: {} },
            strict: false,
          },
        ],
      };
      const res = stream
        ? await stack.client.responses.stream(params).finalResponse()
        : await stack.client.responses.create(params);
      expect(res.status).toBe('completed');
      expect(documentText(stack.sim.requests.at(-1)!.rawBody)).toContain('The audit number is 58213.');

      stack.sim.reset();
      const mparams = {
        model: 'sim',
        max_tokens: 200,
        messages: [
          {
            role: 'user' as const,
            content: [
              { type: 'text' as const, text: 'What does it say?' },
              {
                type: 'document' as const,
                source: { type: 'base64' as const, media_type: 'application/pdf' as const, data: GOOD },
              },
            ],
          },
        ],
        tools: [
          { type: 'web_search_20250305' as const, name: 'web_search' as const },
          { name: 'Read', input_schema: { type: 'object' as const, properties: {} } },
        ],
      };
      const msg = stream
        ? await anthropic.messages.stream(mparams).finalMessage()
        : await anthropic.messages.create(mparams);
      expect(msg.type).toBe('message');
      expect(documentText(stack.sim.requests.at(-1)!.rawBody)).toContain('The audit number is 58213.');
    });
  }
});
