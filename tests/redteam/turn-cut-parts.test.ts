/**
 * A user turn over the model's window by itself, in several text parts (a chat client's content
 * parts, a Responses client's input_text parts: two files attached to one question; the Messages
 * door joins its text blocks into one text, cut whole already). The turn cut (policies/truncation cutTurnsOverWindow) cut only its
 * longest part, to half the window: two parts of 13k tokens each in a 16k window still came to
 * 19.6k, the backend refused the turn, and every later turn that carried it, as before the cut
 * existed: the session was dead. Now the parts share the half window (the longest cut first, each
 * to the same share), so the turn fits, and the same bytes go on every later turn. The simulator
 * enforces a 16k window.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../server/stack.js';

/** About 13k of the simulator's tokens (4 characters a token) of numbered lines, per file. */
const file = (name: string) =>
  Array.from({ length: 950 }, (_, i) => `${name} line ${i}: a file the user attached, long enough.`).join(
    '\n',
  );
const say = { 'x-sim-scenario': JSON.stringify({ say: 'ok' }) };
const MARKER = /\[\.\.\. toolproof left out \d+ of this message's \d+ characters/;
type Sent = { messages: Array<{ role: string; content: unknown }> };

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({
    sim: { personality: 'vllm', maxModelLen: 16384, enforceWindow: true } as never,
  });
});
afterAll(() => stack.close());

const parts = [
  { type: 'text', text: file('a.log') },
  { type: 'text', text: file('b.log') },
  { type: 'text', text: 'What went wrong in these two logs?' },
];

async function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${stack.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...say, ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

describe('a user turn of several text parts over a 16k window by itself', () => {
  it('chat completions: every long part cut, answered, the next turn the same bytes', async () => {
    const first = await post('/v1/chat/completions', {
      model: 'sim',
      messages: [{ role: 'user', content: parts }],
    });
    expect(first.status, first.text.slice(0, 300)).toBe(200);
    const sent = (stack.sim.requests.at(-1)!.body as Sent).messages.at(-1)!.content as Array<{
      text: string;
    }>;
    expect(sent).toHaveLength(3);
    expect(sent[0]!.text).toMatch(MARKER);
    expect(sent[1]!.text).toMatch(MARKER);
    expect(sent[2]!.text).toBe('What went wrong in these two logs?');
    expect(sent[0]!.text.startsWith('a.log line 0: ')).toBe(true);
    expect(sent[1]!.text.endsWith('b.log line 949: a file the user attached, long enough.')).toBe(true);
    const next = await post('/v1/chat/completions', {
      model: 'sim',
      messages: [
        { role: 'user', content: parts },
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: 'And now?' },
      ],
    });
    expect(next.status, next.text.slice(0, 300)).toBe(200);
    const again = (stack.sim.requests.at(-1)!.body as Sent).messages[0]!.content;
    expect(again).toEqual(sent);
  });

  it('Responses (input_text parts): answered', async () => {
    const res = await post('/v1/responses', {
      model: 'sim',
      store: false,
      input: [{ role: 'user', content: parts.map((p) => ({ type: 'input_text', text: p.text })) }],
    });
    expect(res.status, res.text.slice(0, 300)).toBe(200);
  });
});
