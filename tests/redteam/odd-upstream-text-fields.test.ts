/**
 * Text fields of the wrong type from the upstream: `reasoning_content` (or `reasoning`) sent as
 * an object became "[object Object]" in the answer, and a numeric `content` was dropped.
 * toolproof invents no text: a reasoning that is not a string is ignored (as if absent), the
 * same streamed and not; a content that is neither a string, null nor a list of parts is the
 * upstream's fault, a 502 (an error event once the stream opened) naming the field, as a
 * `tool_calls` that is not an array is (protocol/completion-shape.ts). On the three doors (chat
 * with a tool: without, its answer is relayed byte for byte, unread).
 */
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { chunkEvent, proxyInFrontOf, type Recorded, sendCompletion } from '../support/harness.js';

let message: Record<string, unknown> = {};

function answer(req: Recorded, res: ServerResponse): void {
  const stream = (JSON.parse(req.body.toString()) as { stream?: boolean }).stream === true;
  if (!stream) {
    sendCompletion(res, message);
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.end(`${chunkEvent({ role: 'assistant', ...message })}${chunkEvent({}, 'stop')}data: [DONE]\n\n`);
}

const pair = proxyInFrontOf(answer);

const doors = {
  chat: (stream: boolean) => ({
    path: '/v1/chat/completions',
    // With a tool: a chat request without tools is relayed byte for byte (no reading, nothing to fix).
    body: {
      model: 'm1',
      stream,
      messages: [{ role: 'user', content: 'hi' }],
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
    },
  }),
  responses: (stream: boolean) => ({ path: '/v1/responses', body: { model: 'm1', stream, input: 'hi' } }),
  messages: (stream: boolean) => ({
    path: '/v1/messages',
    body: { model: 'm1', stream, max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] },
  }),
};

async function ask(door: keyof typeof doors, stream: boolean): Promise<{ status: number; text: string }> {
  const { path, body } = doors[door](stream);
  const res = await fetch(`${pair.proxy.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

describe('odd upstream text fields', () => {
  for (const door of Object.keys(doors) as Array<keyof typeof doors>)
    for (const stream of [false, true]) {
      const how = stream ? 'streamed' : 'not streamed';
      for (const field of ['reasoning_content', 'reasoning'])
        it(`${door}, ${how}: ${field} as an object is ignored, the answer kept`, async () => {
          message = { content: 'the answer', [field]: { text: 'thinking', n: 1 } };
          const { status, text } = await ask(door, stream);
          expect(status).toBe(200);
          expect(text).toContain('the answer');
          expect(text).not.toContain('[object Object]');
          expect(text).not.toContain('thinking');
        });

      it(`${door}, ${how}: a numeric content is the upstream's fault, named`, async () => {
        message = { content: 42 };
        const { status, text } = await ask(door, stream);
        if (stream) expect(status === 200 || status === 502).toBe(true);
        else expect(status).toBe(502);
        expect(text).toContain('content that is not a string');
      });
    }
});
