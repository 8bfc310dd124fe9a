/**
 * An image sent to a model that cannot see, where toolproof could not know beforehand: vLLM's
 * /v1/models does not say whether a model takes images (`vision: auto` stays "can see"), and a
 * llama-server down at start-up was never asked. The backend refuses the image (vLLM 400 "<model>
 * is not a multimodal model", llama-server 500 "image input is not supported"); the agent sends
 * the image again on every later turn, so relaying the refusal ended the session. toolproof sends
 * the request once more with the image as a note, and remembers: later turns go straight with the
 * note. Through the real server against the simulator, with the real SDKs, on the three doors,
 * streamed and not.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveCapabilities } from '../../server/capability-probe.js';
import { startStack, type Stack } from '../server/stack.js';
import {
  chatImageMessage,
  messagesImageMessage,
  PNG_300_BASE64,
  PNG_300_DATA_URL,
} from '../support/images.js';

const PNG = PNG_300_BASE64;
const IMG = PNG_300_DATA_URL;
const NOTE = '[image omitted: image/png, 300 B; this model cannot read images]';

function chatRequests(stack: Stack) {
  return stack.sim.requests.filter((r) => r.path.endsWith('/chat/completions'));
}

for (const personality of ['vllm', 'llama-server'] as const) {
  describe(`vision refused by a text-only ${personality} (vision: auto, not known beforehand)`, () => {
    let stack: Stack;
    let anthropic: Anthropic;
    beforeAll(async () => {
      stack = await startStack({ sim: { personality, scenario: 'demo', vision: false } });
      anthropic = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0, timeout: 30_000 });
    });
    afterAll(() => stack.close());

    /** Each door's turn with the image, streamed or not; resolves when the answer is whole. */
    const doors: Record<string, (stream: boolean) => Promise<void>> = {
      chat: async (stream) => {
        const params = {
          model: 'sim',
          messages: [chatImageMessage('What is in this picture?', IMG)],
          tools: [
            {
              type: 'function' as const,
              function: { name: 'read', parameters: { type: 'object', properties: {} } },
            },
          ],
        };
        if (stream) {
          const s = await stack.client.chat.completions.create({ ...params, stream: true });
          for await (const _ of s) {
            // drained
          }
        } else {
          const c = await stack.client.chat.completions.create(params);
          expect(c.choices[0]?.message).toBeDefined();
        }
      },
      responses: async (stream) => {
        const params = {
          model: 'sim',
          input: [
            {
              role: 'user' as const,
              content: [
                { type: 'input_text' as const, text: 'What is in this picture?' },
                { type: 'input_image' as const, image_url: IMG, detail: 'auto' as const },
              ],
            },
          ],
        };
        const res = stream
          ? await stack.client.responses.stream(params).finalResponse()
          : await stack.client.responses.create(params);
        expect(res.status).toBe('completed');
      },
      messages: async (stream) => {
        const params = {
          model: 'sim',
          max_tokens: 100,
          messages: [messagesImageMessage('What is in this picture?')],
          tools: [{ name: 'Read', input_schema: { type: 'object' as const, properties: {} } }],
        };
        const msg = stream
          ? await anthropic.messages.stream(params).finalMessage()
          : await anthropic.messages.create(params);
        expect(msg.type).toBe('message');
      },
    };

    it('the first turn is answered: refused once upstream, sent again with the note', async () => {
      stack.sim.reset();
      await doors.chat!(false);
      const sent = chatRequests(stack);
      expect(sent).toHaveLength(2);
      expect(sent[0]!.rawBody).toContain(PNG.slice(0, 40));
      expect(sent[1]!.rawBody).toContain(NOTE);
      expect(sent[1]!.rawBody).not.toContain(PNG.slice(0, 40));
    });

    for (const [door, turn] of Object.entries(doors))
      for (const stream of [false, true])
        it(`${door}${stream ? ' (streamed)' : ''}: later turns go straight with the note`, async () => {
          stack.sim.reset();
          await turn(stream);
          const sent = chatRequests(stack);
          expect(sent).toHaveLength(1);
          expect(sent[0]!.rawBody).toContain(NOTE);
        });

    it('the degraded-content counter says so', async () => {
      const text = await (await fetch(`${stack.origin}/metrics`)).text();
      expect(text).toMatch(
        /toolproof_degraded_content_total\{model="sim",api="chat",kind="image-note"\} [1-9]/,
      );
    });
  });
}

describe('vision refused: a model that sees keeps its images', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ sim: { personality: 'vllm', scenario: 'demo', vision: true } });
  });
  afterAll(() => stack.close());

  it('an image reaches a vLLM model that takes it, turn after turn', async () => {
    for (let i = 0; i < 2; i++) {
      stack.sim.reset();
      await stack.client.chat.completions.create({
        model: 'sim',
        messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: IMG } }] }],
      });
      expect(chatRequests(stack)).toHaveLength(1);
      expect(chatRequests(stack)[0]!.rawBody).toContain(PNG.slice(0, 40));
    }
  });

  it('another 400 about the image is relayed as it is, never retried', async () => {
    stack.sim.reset();
    const scenario = JSON.stringify({
      error: { status: 400, message: 'Invalid image: this image is not allowed here' },
    });
    const err = await stack.client.chat.completions
      .create(
        {
          model: 'sim',
          messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: IMG } }] }],
        },
        { headers: { 'x-sim-scenario': scenario } },
      )
      .catch((e: unknown) => e);
    expect((err as { status?: number }).status).toBe(400);
    expect(chatRequests(stack)).toHaveLength(1);
  });
});

// llama-server's /props says `modalities.vision` from the projector it was started with; a
// gateway's /props (llama-swap's, for another model) or a projector that failed to load can say
// vision while the chat parser still answers "image input is not supported". Resolved `true`
// from /props was taken as the operator's word: every later turn was refused once more (the
// agent re-sends its images), two round trips a turn for the session's life.
describe('vision and audio refused where /props said the model takes them', () => {
  const WAV = Buffer.alloc(600, 7).toString('base64');
  const AUDIO_NOTE = '[audio omitted: wav, 600 B; this model cannot take audio]';
  const sim = { personality: 'llama-server', scenario: 'demo', vision: false, audio: false } as const;
  let stack: Stack;
  beforeAll(async () => {
    const probe = await startStack({ sim });
    let defaults: Parameters<typeof startStack>[0] = {};
    try {
      const config = await resolveCapabilities(probe.app.toolproof.config, async (url) =>
        url.endsWith('/props') ? { modalities: { vision: true, audio: true } } : undefined,
      );
      expect(config.defaults.vision).toBe(true);
      expect(config.defaults.audio).toBe(true);
      defaults = { config: { defaults: config.defaults } };
    } finally {
      await probe.close();
    }
    stack = await startStack({ sim, ...defaults });
  });
  afterAll(() => stack.close());

  const turn = async (stream: boolean) => {
    const params = {
      model: 'sim',
      messages: [
        {
          role: 'user' as const,
          content: [
            { type: 'text' as const, text: 'What is in this picture and this recording?' },
            { type: 'image_url' as const, image_url: { url: IMG } },
            { type: 'input_audio' as const, input_audio: { data: WAV, format: 'wav' as const } },
          ],
        },
      ],
    };
    if (stream) {
      for await (const _ of await stack.client.chat.completions.create({ ...params, stream: true })) {
        // drained
      }
    } else expect((await stack.client.chat.completions.create(params)).choices[0]?.message).toBeDefined();
  };

  it('the first turn learns it (one refusal per kind), later turns go straight with the notes', async () => {
    stack.sim.reset();
    await turn(false);
    const first = chatRequests(stack);
    // refused for the image, then for the audio, then answered
    expect(first.length).toBe(3);
    expect(first[2]!.rawBody).toContain(NOTE);
    expect(first[2]!.rawBody).toContain(AUDIO_NOTE);
    for (const stream of [false, true]) {
      stack.sim.reset();
      await turn(stream);
      const sent = chatRequests(stack);
      expect(sent).toHaveLength(1);
      const messages = (r: (typeof sent)[number]) =>
        JSON.stringify((r.body as { messages: unknown }).messages);
      expect(messages(sent[0]!)).toBe(messages(first[2]!));
    }
  });
});
