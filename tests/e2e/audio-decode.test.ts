/**
 * An audio clip the backend cannot decode. llama-server with an audio projector loads each clip
 * through mtmd-helper, which takes only WAV, MP3 and FLAC bytes as audio: an Ogg voice note
 * labelled `wav` (as browsers and phones record them) refuses the whole request with its 400
 * "Failed to load image or audio file", the words it uses for an image, naming nothing
 * (tools/server/server-common.cpp). The agent sends the clip again on every later turn: relayed,
 * the refusal ended the session. toolproof sends the request once more with that clip as a note
 * (the WAV beside it and a PNG screenshot go on as they are), remembers it, and later turns go
 * with the same note from the start, their messages extending the first turn's byte for byte.
 * Through the real server and the openai SDK on chat completions and Responses (streamed),
 * against the simulator as a llama-server that sees and hears.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../server/stack.js';
import { prefixBreak } from './raw-json.js';
import { PNG_1X1_BASE64 as PNG } from '../support/images.js';

const b64 = (bytes: string) => Buffer.from(bytes, 'latin1').toString('base64');
const WAV = b64(`RIFF\x24\x00\x00\x00WAVEfmt ${'\x00'.repeat(26)}`);
const OGG = b64(`OggS\x00\x02${'\x00'.repeat(34)}`);
const NOTE = '[audio not available: wav, 40 B; the model server could not decode it]';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({
    sim: { personality: 'llama-server', vision: true, audio: true, scenario: 'demo' },
    file: { defaults: { vision: true, audio: true } },
  });
});
afterAll(() => stack.close());

const upstream = () => stack.sim.requests.filter((r) => r.path.endsWith('/chat/completions'));
const clip = (data: string) => ({
  type: 'input_audio' as const,
  input_audio: { data, format: 'wav' as const },
});

/** Three turns of one session; each turn's upstream attempts and its last request body. */
async function session(
  turn: (history: string[]) => Promise<string>,
): Promise<{ attempts: number[]; sent: string[] }> {
  const history: string[] = [];
  const attempts: number[] = [];
  const sent: string[] = [];
  for (let t = 0; t < 3; t++) {
    const before = upstream().length;
    const answer = await turn(history);
    const mine = upstream().slice(before);
    attempts.push(mine.length);
    sent.push(mine.at(-1)!.rawBody);
    history.push(answer || '(no text)', `turn ${t + 2}: go on`);
  }
  return { attempts, sent };
}

function expectDegraded(attempts: number[], sent: string[]): void {
  expect(attempts).toEqual([2, 1, 1]); // refused once, on the first turn
  for (const body of sent) {
    expect(body).toContain(NOTE);
    expect(body).not.toContain(OGG.slice(0, 12));
    expect(body).toContain(WAV); // the clip it decodes stays audio
    expect(body).toContain(`data:image/png;base64,${PNG}`); // and the image an image
  }
  for (const k of [1, 2]) expect(prefixBreak(sent[0]!, sent[k]!)).toBeNull();
}

describe('an audio clip llama-server cannot decode', () => {
  it('chat: an Ogg voice note labelled wav becomes a note; three turns answered, the same bytes each turn', async () => {
    const { attempts, sent } = await session(async (history) => {
      const c = await stack.client.chat.completions.create({
        model: 'sim',
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'What do these say?' },
              clip(OGG),
              clip(WAV),
              { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
            ],
          },
          ...history.map((text, i) =>
            i % 2 === 0
              ? { role: 'assistant' as const, content: text }
              : { role: 'user' as const, content: text },
          ),
        ],
      });
      return c.choices[0]?.message.content ?? '';
    });
    expectDegraded(attempts, sent);
  });

  it('Responses, streamed: the same, the clip remembered from the chat session (one upstream, model and key)', async () => {
    const { attempts, sent } = await session(async (history) => {
      const input = [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'What do these say?' },
            clip(OGG),
            clip(WAV),
            { type: 'input_image', image_url: `data:image/png;base64,${PNG}` },
          ],
        },
        ...history.map((text, i) => ({ role: i % 2 === 0 ? 'assistant' : 'user', content: text })),
      ];
      const res = await stack.client.responses.stream({ model: 'sim', input } as never).finalResponse();
      expect(res.status).toBe('completed');
      return res.output_text;
    });
    // Remembered by the chat session's refusal: no turn is refused.
    expect(attempts).toEqual([1, 1, 1]);
    expectDegraded([2, ...attempts.slice(1)], sent);
    const metrics = await (await fetch(`${stack.origin}/metrics`)).text();
    expect(metrics).toMatch(/toolproof_upstream_refusals_total\{[^}]*decision="audio-decode-refused"\} 1$/m);
    for (const api of ['chat', 'responses'])
      expect(metrics).toMatch(
        new RegExp(`degraded_content_total\\{[^}]*api="${api}",kind="audio-undecodable"\\} 3$`, 'm'),
      );
    expect(metrics).not.toMatch(/decision="image-decode-refused"/);
  });
});
