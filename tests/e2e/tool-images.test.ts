/**
 * An image in a tool result, on a backend whose chat template renders no image of a tool message:
 * vLLM loads the image and finds no placeholder for it in the prompt, and its multimodal
 * processor's assertion is a 500, "Failed to apply prompt replacement for mm_items['image'][0]"
 * (Gemma 4 before its tool template, vllm-project/vllm#41452). A screenshot tool's result (Claude
 * Code's, computer use, a browser agent's) is sent again on every later turn: relayed, each turn
 * was that 500. toolproof sends the request once more with each such image in a user message
 * right after the turn's tool results (numbered, a line naming it left in the result), remembers
 * the upstream and model, and later turns go so from the start, their messages extending the
 * first turn's byte for byte. Through the real server and the anthropic and openai SDKs on all
 * three doors, against the simulator as that vLLM; each door on a model of its own, so each
 * session's first turn meets the refusal.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MOVED_HEAD } from '../../policies/tool-images/index.js';
import { startStack, type Stack } from '../server/stack.js';
import { prefixBreak } from './raw-json.js';
import { threeTurns } from '../support/three-turns.js';
import {
  messagesImage as image,
  PNG_1X1_BASE64 as PNG,
  SCREENSHOT_TOOL,
  screenshotTurn,
} from '../support/images.js';

type Obj = Record<string, unknown>;
const PNG_URL = `data:image/png;base64,${PNG}`;
const ANSWER = 'I see the screenshot.';

let stack: Stack;
let anthropic: Anthropic;
beforeAll(async () => {
  stack = await startStack({
    sim: { personality: 'vllm', vision: true, toolMessageImages: false, scenario: [{ say: ANSWER }] },
    file: { defaults: { vision: true } },
  });
  anthropic = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0, timeout: 30_000 });
});
afterAll(() => stack.close());

const upstream = () => stack.sim.requests.filter((r) => r.path.endsWith('/chat/completions'));

/** Three turns of one session: each turn's upstream attempts and the body its last attempt sent. */
const session = (turn: (history: string[]) => Promise<string>) => threeTurns(upstream, ANSWER, turn);

function expectMoved(run: { attempts: number[]; bodies: string[] }) {
  expect(run.attempts).toEqual([2, 1, 1]); // refused once, on the first turn
  for (const body of run.bodies) {
    const messages = (JSON.parse(body) as { messages: Obj[] }).messages;
    const tool = messages.findIndex((m) => m.role === 'tool');
    expect(JSON.stringify(messages[tool])).not.toContain('image_url');
    expect(JSON.stringify(messages[tool])).toContain(
      '[image 1: in the user message after these tool results]',
    );
    const after = messages[tool + 1]!;
    expect(after.role).toBe('user');
    expect(after.content).toEqual([
      { type: 'text', text: MOVED_HEAD },
      { type: 'text', text: '[image 1]' },
      { type: 'image_url', image_url: { url: PNG_URL } },
    ]);
  }
  for (const k of [1, 2]) expect(prefixBreak(run.bodies[0]!, run.bodies[k]!)).toBeNull();
}

describe('an image in a tool result, on a template that renders none in a tool message', () => {
  it('Messages: a screenshot tool_result; three turns answered, the same bytes each turn', async () => {
    const run = await session(async (history) => {
      const messages: Obj[] = [
        { role: 'user', content: 'Take a screenshot.' },
        ...screenshotTurn('toolu_1', [image(PNG)]),
        ...history.map((text, i) => ({ role: i % 2 === 0 ? 'assistant' : 'user', content: text })),
      ];
      const m = await anthropic.messages.create({
        model: 'sim',
        max_tokens: 100,
        tools: [SCREENSHOT_TOOL],
        messages: messages as never,
      });
      return m.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
    });
    expectMoved(run);
  });

  it('chat, streamed: a tool message holding text and an image (LangChain, hand-rolled loops)', async () => {
    const run = await session(async (history) => {
      const stream = await stack.client.chat.completions.create({
        model: 'm',
        stream: true,
        tools: [{ type: 'function', function: { name: 'screenshot', parameters: { type: 'object' } } }],
        messages: [
          { role: 'user', content: 'Take a screenshot.' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'call_1', type: 'function', function: { name: 'screenshot', arguments: '{}' } },
            ],
          },
          {
            role: 'tool',
            tool_call_id: 'call_1',
            content: [
              { type: 'text', text: 'Screenshot taken.' },
              { type: 'image_url', image_url: { url: PNG_URL } },
            ] as never,
          },
          ...history.map((text, i) =>
            i % 2 === 0
              ? { role: 'assistant' as const, content: text }
              : { role: 'user' as const, content: text },
          ),
        ],
      });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      return text;
    });
    expectMoved(run);
    expect(JSON.parse(run.bodies[0]!).messages[2].content).toBe(
      'Screenshot taken.\n\n[image 1: in the user message after these tool results]',
    );
  });

  it('Responses, streamed: a function_call_output of an input_image (Codex, the Agents SDK)', async () => {
    const run = await session(async (history) => {
      const input = [
        { role: 'user', content: 'Take a screenshot.' },
        { type: 'function_call', call_id: 'call_1', name: 'screenshot', arguments: '{}' },
        {
          type: 'function_call_output',
          call_id: 'call_1',
          output: [{ type: 'input_image', image_url: PNG_URL }],
        },
        ...history.map((text, i) => ({ role: i % 2 === 0 ? 'assistant' : 'user', content: text })),
      ];
      const res = await stack.client.responses
        .stream({
          model: 'm1',
          input,
          tools: [{ type: 'function', name: 'screenshot', parameters: { type: 'object' }, strict: false }],
        } as never)
        .finalResponse();
      expect(res.status).toBe('completed');
      return res.output_text;
    });
    expectMoved(run);
    const metrics = await (await fetch(`${stack.origin}/metrics`)).text();
    expect(metrics).toMatch(/toolproof_upstream_refusals_total\{[^}]*decision="tool-images-refused"\} 1$/m);
    expect(metrics).toMatch(
      /toolproof_degraded_content_total\{[^}]*api="responses",kind="tool-image-moved"\} 3$/m,
    );
  });
});
