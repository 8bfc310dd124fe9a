import { describe, expect, it } from 'vitest';
import { audioDecodePolicy, undecodedAudioNote } from '../../policies/audio-decode/index.js';
import { undecodedAudio } from '../../policies/audio-decode/refusal.js';
import { undecodedImages } from '../../policies/image-decode/refusal.js';
import { inlineAudio, unreadableAudio } from '../../policies/kit/audio-part.js';
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';
import { ctxWith } from './helpers.js';

const b64 = (bytes: string) => Buffer.from(bytes, 'latin1').toString('base64');
const WAV = b64('RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00');
const MP3 = b64('ID3\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00');
const FRAME = b64('\xff\xfb\x90\x64\x00\x00\x00\x00\x00\x00\x00\x00');
const FLAC = b64('fLaC\x00\x00\x00\x22\x00\x00\x00\x00');
/** An Ogg Opus voice note, as browsers and phones record one. */
const OGG = b64('OggS\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00');
const PNG = `data:image/png;base64,${b64('\x89PNG\r\n\x1a\n....')}`;
const WEBP = `data:image/webp;base64,${b64('RIFF\x1a\x00\x00\x00WEBPVP8L')}`;
const clip = (data: string, format = 'wav') => ({
  type: 'input_audio' as const,
  input_audio: { data, format },
});
const img = (url: string) => ({ type: 'image_url' as const, image_url: { url } });
const req = (...parts: unknown[]): ChatCompletionRequest =>
  ({
    model: 'm',
    messages: [{ role: 'user', content: [{ type: 'text', text: 'listen' }, ...parts] }],
  }) as never;
/** llama-server's refusal (tools/server/server-common.cpp, process_mtmd_prompt). */
const refusal = {
  error: { code: 400, message: 'Failed to load image or audio file', type: 'invalid_request_error' },
};

describe('audio-decode', () => {
  it('reads the first bytes as mtmd-helper does: WAV, MP3 and FLAC are audio, the rest is not', () => {
    expect([WAV, MP3, FRAME, FLAC].map(unreadableAudio)).toEqual([false, false, false, false]);
    expect([OGG, 'UklGRg==', `data:audio/wav;base64,${WAV}`, ''].map(unreadableAudio)).toEqual([
      true,
      true,
      true,
      true,
    ]);
  });

  it('a refusal names the unreadable clips, else all of them where no image could be the one', () => {
    expect(undecodedAudio(400, refusal, req(clip(WAV), clip(OGG, 'mp3')))).toEqual([OGG]);
    expect(undecodedAudio(500, refusal, req(clip(WAV), clip(MP3, 'mp3')))).toEqual([WAV, MP3]);
    // a readable clip beside an image: the image may be the one (image-decode notes images first)
    expect(undecodedAudio(400, refusal, req(clip(WAV), img(PNG)))).toEqual([]);
    expect(undecodedAudio(400, refusal, req(clip(OGG), img(PNG)))).toEqual([OGG]);
    // no clip, another error, a success: none
    expect(undecodedAudio(400, refusal, req(img(WEBP)))).toEqual([]);
    const format = { error: { code: 400, message: "input_audio.format must be either 'wav' or 'mp3'" } };
    expect(undecodedAudio(400, format, req(clip(OGG, 'ogg')))).toEqual([]);
    expect(undecodedAudio(200, refusal, req(clip(OGG)))).toEqual([]);
  });

  it('image-decode leaves a readable image alone when a clip is what could not be loaded', () => {
    expect(undecodedImages(400, refusal, req(clip(OGG), img(PNG)))).toEqual([]);
    expect(undecodedImages(400, refusal, req(clip(WAV), img(PNG)))).toEqual([PNG]);
    expect(undecodedImages(400, refusal, req(clip(OGG), img(WEBP), img(PNG)))).toEqual([WEBP]);
  });

  it('notes the refused clips only, the same bytes each time; the others stay as they are', () => {
    const sent = req(clip(WAV), clip(OGG));
    const plain = audioDecodePolicy.onRequest!(sent, ctxWith({}, {}), sent);
    expect(plain.action === 'continue' && plain.request).toBe(sent);
    const ctx = {
      ...ctxWith({}, {}),
      refused: {
        now: new Set(['audio-decode']),
        remembered: new Set<string>(),
        values: new Set([OGG, WEBP]),
      },
    };
    const d = audioDecodePolicy.onRequest!(sent, ctx as never, sent);
    if (d.action !== 'continue') throw new Error('continue expected');
    expect(d.request.messages[0]!.content).toEqual([
      { type: 'text', text: 'listen' },
      clip(WAV),
      { type: 'text', text: '[audio not available: wav, 14 B; the model server could not decode it]' },
    ]);
    expect(undecodedAudioNote(clip(OGG, '<b>x</b>') as never)).toBe(
      '[audio not available: audio, 14 B; the model server could not decode it]',
    );
    expect(d.effects).toEqual([
      { policy: 'audio-decode', kind: 'audio-undecodable', count: 1, clips: ['wav, 14 B'] },
    ]);
    expect(audioDecodePolicy.onRequest!(sent, ctx as never, sent)).toEqual(d);
  });

  it('costs in proportion to the clips, x1 vs x4', () => {
    const make = (n: number): ChatCompletionRequest =>
      ({
        model: 'm',
        messages: Array.from({ length: n }, (_, i) => ({
          role: 'user' as const,
          content: [clip(i % 2 ? WAV : `${OGG}${'A'.repeat(i % 7)}`)],
        })),
      }) as never;
    const ctx = (r: ChatCompletionRequest) => ({
      ...ctxWith({}, {}),
      refused: {
        now: new Set(['audio-decode']),
        remembered: new Set<string>(),
        values: new Set(inlineAudio(r)),
      },
    });
    const run = (r: ChatCompletionRequest) => [
      undecodedAudio(400, refusal, r),
      audioDecodePolicy.onRequest!(r, ctx(r) as never, r),
    ];
    const s = measureScaling(make, run, { from: 256, max: 1 << 16 });
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});
