/**
 * An inline image the backend cannot decode: llama-server reads images with stb_image, which
 * takes no WebP (nor AVIF, HEIC, TIFF, SVG), and refuses the whole request with its 400 "Failed to
 * load image or audio file", naming no image (field reports: policies/image-decode/refusal.ts).
 * A WebP screenshot in an agent's history is sent again on every later turn, so relaying the
 * refusal ended the session. toolproof sends the request once more with that image as a note
 * (the PNG beside it goes on as an image), remembers it, and later turns go with the same note
 * from the start, their messages extending the first turn's byte for byte. Through the real
 * server and the anthropic SDK (a screenshot in a tool result, as Claude Code sends one) and the
 * openai SDK (streamed) against the simulator as a llama-server with a vision projector.
 *
 * vLLM decodes with PIL, which reads WebP but no HEIC (an iPhone photo a chat app attaches as it
 * came) or SVG (a browser agent's capture of an icon): its 400 is PIL's words, "cannot identify
 * image file <_io.BytesIO object at 0x…>", naming no image (vllm/multimodal/media/connector.py).
 * The same sessions on all three doors against the simulator as a vLLM that sees, each image of
 * its own so each door's first turn meets the refusal: before, every turn was that 400.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../server/stack.js';
import { prefixBreak } from './raw-json.js';
import { threeTurns } from '../support/three-turns.js';
import {
  messagesImage as image,
  PNG_1X1_BASE64 as PNG,
  SCREENSHOT_TOOL,
  screenshotTurn,
  WEBP_HEAD_BASE64 as WEBP,
} from '../support/images.js';

type Obj = Record<string, unknown>;
const b64 = (bytes: string) => Buffer.from(bytes, 'latin1').toString('base64');
const NOTE = '[image not available: image/webp, 34 B; the model server could not decode it]';

let stack: Stack;
let anthropic: Anthropic;
beforeAll(async () => {
  stack = await startStack({
    sim: { personality: 'llama-server', vision: true, scenario: [{ say: 'Both look fine.' }] },
    file: { defaults: { vision: true } },
  });
  anthropic = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0, timeout: 30_000 });
});
afterAll(() => stack.close());

const upstream = () => stack.sim.requests.filter((r) => r.path.endsWith('/chat/completions'));
const tools = [SCREENSHOT_TOOL];

describe('an inline image llama-server cannot decode', () => {
  it('Messages: a WebP screenshot in a tool result becomes a note; three turns answered, the same bytes each turn', async () => {
    const history: Obj[] = [
      { role: 'user', content: 'Take two screenshots.' },
      ...screenshotTurn('toolu_1', [image(WEBP, 'image/webp'), image(PNG)]),
    ];
    const sent: string[] = [];
    for (let t = 1; t <= 3; t++) {
      const before = upstream().length;
      const m = await anthropic.messages.create({
        model: 'sim',
        max_tokens: 100,
        tools,
        messages: history as never,
      });
      const attempts = upstream().slice(before);
      expect(attempts).toHaveLength(t === 1 ? 2 : 1); // refused once, on the first turn
      const last = attempts.at(-1)!.rawBody;
      expect(last).toContain(NOTE);
      expect(last).not.toContain(WEBP);
      expect(last).toContain(`data:image/png;base64,${PNG}`); // the readable one stays an image
      sent.push(last);
      history.push({ role: 'assistant', content: m.content }, { role: 'user', content: `next ${t}` });
    }
    for (const k of [1, 2]) expect(prefixBreak(sent[0]!, sent[k]!)).toBeNull();
    const metrics = await (await fetch(`${stack.origin}/metrics`)).text();
    expect(metrics).toMatch(/toolproof_upstream_refusals_total\{[^}]*decision="image-decode-refused"\} 1$/m);
    expect(metrics).toMatch(/toolproof_degraded_content_total\{[^}]*kind="image-undecodable"\} [1-9]/);
  });

  it('chat, streamed: a WebP the client pasted is a note the first time', async () => {
    const webp = `data:image/webp;base64,${WEBP.slice(0, -4)}AAAA`; // another image: not remembered yet
    const before = upstream().length;
    const stream = await stack.client.chat.completions.create({
      model: 'sim',
      stream: true,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this?' },
            { type: 'image_url', image_url: { url: webp } },
          ],
        },
      ],
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('Both look fine.');
    const attempts = upstream().slice(before);
    expect(attempts).toHaveLength(2);
    expect(attempts[1]!.rawBody).toContain('the model server could not decode it]');
  });
});

describe('an inline image vLLM (PIL) cannot identify', () => {
  /** The head of a HEIC photo (ISO BMFF, brand heic), `tag` telling the sessions' photos apart. */
  const heic = (tag: string) => b64(`\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic${tag}`);
  const SVG = b64(
    '<svg xmlns="http://www.w3.org/2000/svg" width="24" height="24"><path d="M0 0h24v24z"/></svg>',
  );
  const PNG_URL = `data:image/png;base64,${PNG}`;
  let vllm: Stack;
  let claude: Anthropic;
  beforeAll(async () => {
    vllm = await startStack({
      sim: { personality: 'vllm', vision: true, scenario: [{ say: 'A photo and a square.' }] },
      file: { defaults: { vision: true } },
    });
    claude = new Anthropic({ baseURL: vllm.origin, apiKey: 'x', maxRetries: 0, timeout: 30_000 });
  });
  afterAll(() => vllm.close());
  const sent = () => vllm.sim.requests.filter((r) => r.path.endsWith('/chat/completions'));

  /** Three turns of one session: each turn's upstream attempts and the body its last attempt sent. */
  const session = (turn: (history: string[]) => Promise<string>) =>
    threeTurns(sent, 'A photo and a square.', turn);
  function expectNoted(run: { attempts: number[]; bodies: string[] }, bytes: string, note: string) {
    expect(run.attempts).toEqual([2, 1, 1]); // refused once, on the first turn
    for (const body of run.bodies) {
      expect(body).toContain(note);
      expect(body).not.toContain(bytes);
      expect(body).toContain(PNG_URL); // the PNG beside it stays an image
    }
    for (const k of [1, 2]) expect(prefixBreak(run.bodies[0]!, run.bodies[k]!)).toBeNull();
  }
  const chatHistory = (history: string[]) =>
    history.map((text, i) =>
      i % 2 === 0 ? { role: 'assistant' as const, content: text } : { role: 'user' as const, content: text },
    );

  it('chat: a HEIC photo becomes a note; three turns answered, the same bytes each turn', async () => {
    const photo = heic('chat');
    const run = await session(async (history) => {
      const c = await vllm.client.chat.completions.create({
        model: 'sim',
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'What are these?' },
              { type: 'image_url', image_url: { url: `data:image/heic;base64,${photo}` } },
              { type: 'image_url', image_url: { url: PNG_URL } },
            ],
          },
          ...chatHistory(history),
        ],
      });
      return c.choices[0]?.message.content ?? '';
    });
    expectNoted(run, photo, '[image not available: image/heic, 28 B; the model server could not decode it]');
  });

  it('Responses, streamed: an SVG input_image becomes a note', async () => {
    const run = await session(async (history) => {
      const input = [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'What are these?' },
            { type: 'input_image', image_url: `data:image/svg+xml;base64,${SVG}` },
            { type: 'input_image', image_url: PNG_URL },
          ],
        },
        ...history.map((text, i) => ({ role: i % 2 === 0 ? 'assistant' : 'user', content: text })),
      ];
      const res = await vllm.client.responses.stream({ model: 'sim', input } as never).finalResponse();
      expect(res.status).toBe('completed');
      return res.output_text;
    });
    expectNoted(run, SVG, '[image not available: image/svg+xml, 92 B; the model server could not decode it]');
  });

  it('Messages, streamed: a HEIC photo in a tool result (labelled JPEG, as an app names it by its file) becomes a note', async () => {
    const photo = heic('msgs');
    const run = await session(async (history) => {
      const messages: Obj[] = [
        { role: 'user', content: 'Take two pictures.' },
        ...screenshotTurn('toolu_1', [image(photo, 'image/jpeg'), image(PNG)]),
        ...history.map((text, i) => ({ role: i % 2 === 0 ? 'assistant' : 'user', content: text })),
      ];
      const m = await claude.messages
        .stream({ model: 'sim', max_tokens: 100, tools, messages: messages as never })
        .finalMessage();
      return m.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
    });
    expectNoted(run, photo, '[image not available: image/jpeg, 28 B; the model server could not decode it]');
    const metrics = await (await fetch(`${vllm.origin}/metrics`)).text();
    expect(metrics).toMatch(/toolproof_upstream_refusals_total\{[^}]*decision="image-decode-refused"\} 3$/m);
  });
});
