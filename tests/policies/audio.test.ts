import { describe, expect, it } from 'vitest';
import { audioNote, audioPolicy } from '../../policies/audio/index.js';
import { carriesAudio, refusesAudio } from '../../policies/audio/refusal.js';
import { DEFAULT_MODEL_SETTINGS } from '../../protocol/settings.js';
import { ctxWith } from './helpers.js';

const audio = (data: unknown, format: unknown) => ({ type: 'input_audio', input_audio: { data, format } });

describe('audio', () => {
  it('notes audio for a model configured without it, or whose backend refused it', () => {
    const req = { model: 'm', messages: [{ role: 'user', content: [audio('AAAA', 'wav')] }] };
    const noted = (ctx: ReturnType<typeof ctxWith>) =>
      (audioPolicy.onRequest!(req as never, ctx, req as never) as { effects: unknown[] }).effects.length > 0;
    const refused = (now: string[], remembered: string[]) => ({
      refused: { now: new Set(now), remembered: new Set(remembered) },
    });
    expect(DEFAULT_MODEL_SETTINGS.audio).toBe('auto');
    expect(noted(ctxWith({}, { audio: false }))).toBe(true);
    expect(noted(ctxWith({}, { audio: true }))).toBe(false);
    expect(noted(ctxWith({}, { audio: 'auto' }))).toBe(false);
    expect(noted(ctxWith(refused(['audio'], []), { audio: true }))).toBe(true);
    expect(noted(ctxWith(refused([], ['audio']), { audio: 'auto' }))).toBe(true);
    expect(noted(ctxWith(refused([], ['audio']), { audio: true }))).toBe(false);
    // A model that cannot see may still hear: the images fact is not this one.
    expect(noted(ctxWith(refused(['images'], ['images']), { audio: 'auto' }))).toBe(false);
  });

  it('replaces every audio part with a note naming its format and size, the same each time', () => {
    const wav = Buffer.alloc(3000).toString('base64');
    const req = {
      model: 'm',
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'listen' }, audio(wav, 'wav')] },
        { role: 'user', content: [audio(undefined, 'mp3'), audio('AAAA', 'x]\n[evil')] },
      ],
    };
    const d = audioPolicy.onRequest!(req as never, ctxWith({}, { audio: false }), req as never);
    if (d.action !== 'continue') throw new Error('rejected');
    expect(d.request.messages.map((m) => m.content)).toEqual([
      'listen\n\n[audio omitted: wav, 2.9 KB; this model cannot take audio]',
      '[audio omitted: mp3, 0 B; this model cannot take audio]\n\n[audio omitted: audio, 3 B; this model cannot take audio]',
    ]);
    expect(d.effects).toEqual([{ policy: 'audio', kind: 'audio-note', count: 3 }]);
    expect(audioNote(audio(wav, 'wav') as never)).toBe(audioNote(audio(wav, 'wav') as never));
  });

  it("reads the backends' refusals of audio, never a status alone", () => {
    const llama = {
      error: {
        code: 500,
        message:
          'audio input is not supported - hint: if this is unexpected, you may need to provide the mmproj',
        type: 'server_error',
      },
    };
    expect(refusesAudio(500, llama)).toBe(true);
    expect(
      refusesAudio(400, { error: { message: 'At most 0 audio(s) may be provided in one prompt.' } }),
    ).toBe(true);
    expect(refusesAudio(400, { message: 'm is not a multimodal model None' })).toBe(true);
    expect(refusesAudio(500, { error: { message: 'image input is not supported' } })).toBe(false);
    expect(refusesAudio(500, { error: { message: 'boom' } })).toBe(false);
    expect(refusesAudio(200, llama)).toBe(false);
    expect(
      carriesAudio({ model: 'm', messages: [{ role: 'user', content: [audio('A', 'wav')] }] } as never),
    ).toBe(true);
    expect(carriesAudio({ model: 'm', messages: [{ role: 'user', content: 'hi' }] } as never)).toBe(false);
  });
});
