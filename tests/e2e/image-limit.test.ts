/**
 * A vLLM started with `--limit-mm-per-prompt '{"image": 4}'` refuses a prompt of more images with
 * its 400 "At most 4 image(s) may be provided in one prompt." An agent that takes a screenshot a
 * turn (Claude Code's tool results) carries them all in its history: from the fifth, every turn
 * was refused and the session was over. toolproof reads the limit, sends the request once more
 * with the oldest images as notes (the latest go as images, at most 4), remembers the limit, and
 * notes the oldest in steps of half the limit, so the prompt changes once a step. Through the real
 * server and the anthropic SDK against the simulator as that vLLM.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../server/stack.js';
import { prefixBreak } from './raw-json.js';
import { messagesImage, PNG_1X1_BASE64 as PNG, SCREENSHOT_TOOL, screenshotTurn } from '../support/images.js';

type Obj = Record<string, unknown>;
const NOTE = 'left out: the model server takes at most 4 images a prompt, and this one is older]';

let stack: Stack;
let anthropic: Anthropic;
beforeAll(async () => {
  stack = await startStack({
    sim: { personality: 'vllm', vision: true, imageLimit: 4, scenario: [{ say: 'I see it.' }] },
    file: { defaults: { vision: true } },
  });
  anthropic = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0, timeout: 30_000 });
});
afterAll(() => stack.close());

const upstream = () => stack.sim.requests.filter((r) => r.path.endsWith('/chat/completions'));
const tools = [SCREENSHOT_TOOL];

describe('more screenshots than the backend takes a prompt', () => {
  it('every turn answered; at most 4 images go, the oldest as notes, changed once a step', async () => {
    const history: Obj[] = [{ role: 'user', content: 'Watch the page.' }];
    const sent: string[] = [];
    const attempts: number[] = [];
    for (let t = 1; t <= 8; t++) {
      history.push(...screenshotTurn(`toolu_${t}`, [messagesImage(`${PNG}${'A'.repeat(t * 4)}`)]));
      const before = upstream().length;
      const m = await anthropic.messages.create({
        model: 'sim',
        max_tokens: 100,
        tools,
        messages: history as never,
      });
      expect(m.content).toEqual([expect.objectContaining({ type: 'text', text: 'I see it.' })]);
      const turn = upstream().slice(before);
      attempts.push(turn.length);
      const last = turn.at(-1)!.rawBody;
      const images = last.split('"type":"image_url"').length - 1;
      expect(images).toBeLessThanOrEqual(4);
      // the latest screenshot always goes as an image
      expect(last).toContain(`${PNG}${'A'.repeat(t * 4)}"`);
      expect(last.split(NOTE).length - 1).toBe(t <= 4 ? 0 : t <= 6 ? 2 : 4);
      sent.push(last);
      history.push({ role: 'assistant', content: m.content });
    }
    // refused once, at the fifth screenshot; the limit remembered after it
    expect(attempts).toEqual([1, 1, 1, 1, 2, 1, 1, 1]);
    // two notes a step: the turns within a step extend each other byte for byte
    expect(prefixBreak(sent[4]!, sent[5]!)).toBeNull();
    expect(prefixBreak(sent[6]!, sent[7]!)).toBeNull();
    expect(prefixBreak(sent[5]!, sent[6]!)).not.toBeNull();
    const metrics = await (await fetch(`${stack.origin}/metrics`)).text();
    expect(metrics).toMatch(/toolproof_upstream_refusals_total\{[^}]*decision="image-limit-refused"\} 1$/m);
  });
});
