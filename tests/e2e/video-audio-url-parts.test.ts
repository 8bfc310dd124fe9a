/**
 * vLLM's chat `video_url` and `audio_url` parts, and llama-server's `input_video`, on a model that
 * cannot take them, through the real server with the openai SDK, a session of two turns. They
 * went upstream as they came: a text-only vLLM answers "<model> is not a multimodal model",
 * llama-server "unsupported content[].type" (it takes no URL of either) or "video input is not
 * supported" (no video mmproj), on that turn and on every later one, since the agent sends its
 * history again. Now each becomes a note (policies/video, policies/audio), the same bytes on the
 * next turn; a backend that takes video gets it as sent.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../server/stack.js';

const say = { 'x-sim-scenario': JSON.stringify({ say: 'ok' }) };
const MP4 = `data:video/mp4;base64,${Buffer.alloc(3000, 7).toString('base64')}`;
const WAV = `data:audio/wav;base64,${Buffer.alloc(1500, 1).toString('base64')}`;
type Part = Record<string, unknown>;
type Sent = { messages: Array<{ role: string; content: unknown }> };

const shapes: Array<{ name: string; part: Part; note: string }> = [
  {
    name: 'video_url (a data URL)',
    part: { type: 'video_url', video_url: { url: MP4 } },
    note: '[video omitted: video/mp4, 2.9 KB; this model cannot take video]',
  },
  {
    name: 'video_url (https)',
    part: { type: 'video_url', video_url: { url: 'https://example.com/clip.mp4' } },
    note: '[video omitted: video by URL; this model cannot take video]',
  },
  {
    name: 'input_video',
    part: {
      type: 'input_video',
      input_video: { data: Buffer.alloc(30, 7).toString('base64'), format: 'mp4' },
    },
    note: '[video omitted: video, 30 B; this model cannot take video]',
  },
  {
    name: 'audio_url',
    part: { type: 'audio_url', audio_url: { url: WAV } },
    note: '[audio omitted: audio/wav, 1.5 KB; this model cannot take audio]',
  },
];

/**
 * Two turns carrying `part`: the first answered with `note` in its place upstream, the second
 * sending that first message's bytes again. The upstream requests the first turn took.
 */
async function twoTurns(stack: Stack, client: OpenAI, part: object, note: string): Promise<number> {
  const first = [{ role: 'user', content: [{ type: 'text', text: 'What is in this?' }, part] }];
  const before = stack.sim.requests.length;
  const a = await client.chat.completions.create({ model: 'sim', messages: first as never });
  expect(a.choices[0]?.message.content).toBe('ok');
  const sent = stack.sim.requests.at(-1)!.body as Sent;
  expect(sent.messages[0]!.content).toEqual(`What is in this?\n\n${note}`);
  const upstreamRequests = stack.sim.requests.length - before;
  const b = await client.chat.completions.create({
    model: 'sim',
    messages: [...first, { role: 'assistant', content: 'ok' }, { role: 'user', content: 'And?' }] as never,
  });
  expect(b.choices[0]?.message.content).toBe('ok');
  expect((stack.sim.requests.at(-1)!.body as Sent).messages[0]).toEqual(sent.messages[0]);
  return upstreamRequests;
}

for (const personality of ['vllm', 'llama-server'] as const)
  describe(`${personality}, a model that takes neither`, () => {
    let stack: Stack;
    let client: OpenAI;
    beforeAll(async () => {
      stack = await startStack({ sim: { personality, vision: false } as never });
      client = new OpenAI({ baseURL: stack.url, apiKey: 'k', maxRetries: 0, defaultHeaders: say });
    });
    afterAll(() => stack.close());

    for (const { name, part, note } of shapes)
      it(`${name}: answered with a note, the next turn with the same bytes`, async () => {
        await twoTurns(stack, client, part, note);
      });
  });

describe('llama-server with an image mmproj: no URL of video or audio', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ sim: { personality: 'llama-server', vision: true } as never });
  });
  afterAll(() => stack.close());

  for (const { name, part, note } of shapes.filter((s) => s.name !== 'input_video'))
    it(`${name}: refused once ("unsupported content[].type"), sent again with the note; the next turn noted from the start`, async () => {
      const client = new OpenAI({ baseURL: stack.url, apiKey: 'k', maxRetries: 0, defaultHeaders: say });
      const upstreamRequests = await twoTurns(stack, client, part, note);
      expect(upstreamRequests).toBeLessThanOrEqual(2);
    });
});

describe('vLLM, a model that takes video', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ sim: { personality: 'vllm', vision: true } as never });
  });
  afterAll(() => stack.close());

  it('the video goes as sent', async () => {
    const client = new OpenAI({ baseURL: stack.url, apiKey: 'k', maxRetries: 0, defaultHeaders: say });
    const part = { type: 'video_url', video_url: { url: MP4 } };
    await client.chat.completions.create({
      model: 'sim',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'What is in this?' }, part] }] as never,
    });
    expect((stack.sim.requests.at(-1)!.body as Sent).messages[0]!.content).toEqual([
      { type: 'text', text: 'What is in this?' },
      part,
    ]);
  });
});
