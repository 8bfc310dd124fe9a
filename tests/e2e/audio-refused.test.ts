/**
 * Audio sent to a model that cannot take it. A text-only llama-server answers a chat
 * `input_audio` part with its 500 "audio input is not supported" (tools/server/utils.hpp, as the
 * simulator says it); relayed, that came back on every later turn (the agent sends its history
 * again), and the Responses door refused `input_audio` itself with a 400. toolproof sends the
 * request once more with each audio part as a note and remembers: later turns go straight with
 * the note, the same bytes every turn. Three turns of one session through the real server and
 * the real openai SDK, on chat completions and Responses, streamed and not. The stack does not
 * ask /props here, as for a backend whose /props does not say (vLLM, a build before audio
 * input): `audio` stays auto; tests/e2e/audio-props.test.ts covers what /props answers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectStream, startStack, type Stack } from '../server/stack.js';

/** 1,000 bytes of "WAV", as base64. */
const WAV = Buffer.alloc(1000, 7).toString('base64');
const NOTE = '[audio omitted: wav, 1000 B; this model cannot take audio]';
const QUESTION = 'What is said in this recording?';

function chatRequests(stack: Stack) {
  return stack.sim.requests.filter((r) => r.path.endsWith('/chat/completions'));
}

/** One turn on a door, streamed or not, given the history so far; returns the assistant's text. */
type Turn = (stack: Stack, history: string[], stream: boolean) => Promise<string>;

const doors: Record<string, Turn> = {
  chat: async (stack, history, stream) => {
    const messages = [
      {
        role: 'user' as const,
        content: [
          { type: 'text' as const, text: QUESTION },
          { type: 'input_audio' as const, input_audio: { data: WAV, format: 'wav' as const } },
        ],
      },
      ...history.map((text, i) =>
        i % 2 === 0
          ? { role: 'assistant' as const, content: text }
          : { role: 'user' as const, content: text },
      ),
    ];
    if (!stream) {
      const c = await stack.client.chat.completions.create({ model: 'sim', messages });
      return c.choices[0]?.message.content ?? '';
    }
    return (
      await collectStream(
        await stack.client.chat.completions.create({ model: 'sim', messages, stream: true }),
      )
    ).content;
  },
  responses: async (stack, history, stream) => {
    const input = [
      {
        role: 'user' as const,
        content: [
          { type: 'input_text' as const, text: QUESTION },
          { type: 'input_audio' as const, input_audio: { data: WAV, format: 'wav' as const } },
        ],
      },
      ...history.map((text, i) =>
        i % 2 === 0
          ? { role: 'assistant' as const, content: text }
          : { role: 'user' as const, content: text },
      ),
    ];
    const params = { model: 'sim', input } as never;
    const res = stream
      ? await stack.client.responses.stream(params).finalResponse()
      : await stack.client.responses.create(params);
    expect(res.status).toBe('completed');
    return res.output_text;
  },
};

for (const [door, turn] of Object.entries(doors))
  for (const stream of [false, true])
    describe(`audio to a text-only llama-server, ${door}${stream ? ' (streamed)' : ''}`, () => {
      let stack: Stack;
      beforeAll(async () => {
        stack = await startStack({ sim: { personality: 'llama-server', scenario: 'demo' } });
      });
      afterAll(() => stack.close());

      it('three turns of one session are answered, the audio a note with the same bytes every turn', async () => {
        const history: string[] = [];
        const firstUser: string[] = [];
        for (let t = 0; t < 3; t++) {
          stack.sim.reset();
          const answer = await turn(stack, history, stream);
          const sent = chatRequests(stack);
          // The first turn is refused once upstream and sent again with the note; later turns
          // go straight with it.
          expect(sent).toHaveLength(t === 0 ? 2 : 1);
          if (t === 0) expect(sent[0]!.rawBody).toContain(WAV.slice(0, 40));
          const last = sent[sent.length - 1]!;
          expect(last.rawBody).toContain(NOTE);
          expect(last.rawBody).not.toContain(WAV.slice(0, 40));
          const messages = (JSON.parse(last.rawBody) as { messages: unknown[] }).messages;
          firstUser.push(JSON.stringify(messages[0]));
          history.push(answer || '(no text)', `turn ${t + 2}: go on`);
        }
        expect(new Set(firstUser).size).toBe(1);
        expect(firstUser[0]).toContain(`${QUESTION}\\n\\n${NOTE}`);
      });

      it('the counters say so', async () => {
        const text = await (await fetch(`${stack.origin}/metrics`)).text();
        expect(text).toMatch(/toolproof_degraded_content_total\{[^}]*kind="audio-note"\} 3/);
        expect(text).toMatch(/toolproof_upstream_refusals_total\{[^}]*decision="audio-refused"\} 1/);
      });
    });
