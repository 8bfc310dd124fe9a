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
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../server/stack.js';
import { prefixBreak } from './raw-json.js';
import {
  messagesImage as image,
  PNG_1X1_BASE64 as PNG,
  SCREENSHOT_TOOL,
  screenshotTurn,
  WEBP_HEAD_BASE64 as WEBP,
} from '../support/images.js';

type Obj = Record<string, unknown>;
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
