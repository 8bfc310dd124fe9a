/**
 * `audio: auto` asks llama-server's /props (`modalities.audio`) at start-up, as `vision: auto`
 * does: a model that takes audio gets its `input_audio` parts unchanged, one that does not gets
 * the note from the first turn (before, its 500 "audio input is not supported" came back once per
 * TTL and the turn went twice). A /props without the field (a build before audio input) or none
 * at all (vLLM, a backend down) leaves it auto: audio passes until the backend refuses it
 * (tests/e2e/audio-refused.test.ts). Through the real server, the simulator's llama-server and
 * the real openai SDK.
 */
import { describe, expect, it } from 'vitest';
import { resolveCapabilities } from '../../server/capability-probe.js';
import type { Config } from '../../server/config.js';
import type { SimulatorOptions } from '../../simulator/types.js';
import { collectStream, startStack, type Stack } from '../server/stack.js';

const WAV = Buffer.alloc(1000, 7).toString('base64');
const NOTE = '[audio omitted: wav, 1000 B; this model cannot take audio]';

/** `config` as main.ts resolves it before listening, against a simulator with `sim`. */
async function resolvedAgainst(sim: Partial<SimulatorOptions>): Promise<Config> {
  const probe = await startStack({ sim });
  try {
    return await resolveCapabilities(probe.app.toolproof.config);
  } finally {
    await probe.close();
  }
}

const messages = [
  {
    role: 'user' as const,
    content: [
      { type: 'text' as const, text: 'What is said in this recording?' },
      { type: 'input_audio' as const, input_audio: { data: WAV, format: 'wav' as const } },
    ],
  },
];

async function turn(stack: Stack, stream: boolean): Promise<string> {
  if (!stream)
    return (
      (await stack.client.chat.completions.create({ model: 'sim', messages })).choices[0]?.message.content ??
      ''
    );
  return (
    await collectStream(await stack.client.chat.completions.create({ model: 'sim', messages, stream: true }))
  ).content;
}

function chatBodies(stack: Stack): string[] {
  return stack.sim.requests.filter((r) => r.path.endsWith('/chat/completions')).map((r) => r.rawBody);
}

describe('audio: auto, read from llama-server /props', () => {
  it('modalities.audio true: resolved true, the audio goes through unchanged, streamed or not', async () => {
    const sim = { personality: 'llama-server', scenario: 'demo', audio: true } as const;
    const config = await resolvedAgainst(sim);
    expect(config.defaults.audio).toBe(true);
    const stack = await startStack({ sim, config: { defaults: config.defaults } });
    try {
      for (const stream of [false, true]) {
        stack.sim.reset();
        expect(await turn(stack, stream)).toBeTruthy();
        const sent = chatBodies(stack);
        expect(sent).toHaveLength(1);
        expect(sent[0]).toContain(WAV);
        expect(sent[0]).not.toContain('audio omitted');
      }
      // The model list says so, beside what it says of images.
      const list = (await (await fetch(`${stack.url}/models`)).json()) as {
        data: Array<Record<string, unknown>>;
      };
      expect(list.data[0]!.input_modalities).toEqual(['text', 'audio']);
    } finally {
      await stack.close();
    }
  });

  it('modalities.audio false: resolved false, the note from the first turn, never refused', async () => {
    const sim = { personality: 'llama-server', scenario: 'demo' } as const;
    const config = await resolvedAgainst(sim);
    expect(config.defaults.audio).toBe(false);
    const stack = await startStack({ sim, config: { defaults: config.defaults } });
    try {
      for (const stream of [false, true]) {
        stack.sim.reset();
        expect(await turn(stack, stream)).toBeTruthy();
        const sent = chatBodies(stack);
        expect(sent).toHaveLength(1);
        expect(sent[0]).toContain(NOTE);
        expect(sent[0]).not.toContain(WAV.slice(0, 40));
      }
      const metrics = await (await fetch(`${stack.origin}/metrics`)).text();
      expect(metrics).not.toMatch(/decision="audio-refused"/);
      const list = (await (await fetch(`${stack.url}/models`)).json()) as {
        data: Array<Record<string, unknown>>;
      };
      expect(list.data[0]!.input_modalities).toEqual(['text']);
    } finally {
      await stack.close();
    }
  });

  it('modalities without audio (a build before audio input): stays auto; the refusal path still answers', async () => {
    const sim = { personality: 'llama-server', scenario: 'demo' } as const;
    const probe = await startStack({ sim });
    try {
      const config = await resolveCapabilities(probe.app.toolproof.config, async (url) =>
        url.endsWith('/props')
          ? { default_generation_settings: { n_ctx: 4096 }, modalities: { vision: false } }
          : undefined,
      );
      expect(config.defaults.audio).toBe('auto');
      expect(config.defaults.vision).toBe(false);
      expect(config.defaults.contextWindow).toBe(4096);
      const stack = await startStack({ sim, config: { defaults: config.defaults } });
      try {
        expect(await turn(stack, false)).toBeTruthy();
        const sent = chatBodies(stack);
        expect(sent).toHaveLength(2); // refused once, sent again with the note
        expect(sent[1]).toContain(NOTE);
      } finally {
        await stack.close();
      }
    } finally {
      await probe.close();
    }
  });

  it('/props failing (vLLM has none; a backend down): stays auto', async () => {
    const vllm = await resolvedAgainst({ personality: 'vllm', scenario: 'demo', maxModelLen: 8192 });
    expect(vllm.defaults.audio).toBe('auto');
    expect(vllm.defaults.contextWindow).toBe(8192);
    const probe = await startStack({ sim: { personality: 'llama-server' } });
    try {
      const down = await resolveCapabilities(probe.app.toolproof.config, async () => undefined);
      expect(down.defaults.audio).toBe('auto');
      expect(down.defaults.vision).toBe('auto');
      expect(down.defaults.contextWindow).toBe(0);
      // A malformed field is not an answer either.
      const odd = await resolveCapabilities(probe.app.toolproof.config, async (url) =>
        url.endsWith('/props') ? { modalities: { audio: 'yes' } } : undefined,
      );
      expect(odd.defaults.audio).toBe('auto');
    } finally {
      await probe.close();
    }
  });

  it('an operator setting wins over /props', async () => {
    const probe = await startStack({
      sim: { personality: 'llama-server', audio: true },
      file: { defaults: { audio: false } },
    });
    try {
      expect((await resolveCapabilities(probe.app.toolproof.config)).defaults.audio).toBe(false);
    } finally {
      await probe.close();
    }
  });
});
