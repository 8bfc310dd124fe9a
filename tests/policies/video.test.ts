/**
 * video (policies/video): vLLM's `video_url` and llama-server's `input_video` parts as notes for a
 * model that cannot take video (`vision: false`, or a refusal of it, now or remembered), the same
 * bytes each time; the refusals read from their words and only for a request carrying video.
 */
import { describe, expect, it } from 'vitest';
import { refusedAudio } from '../../policies/audio/refusal.js';
import { videoNote, videoPolicy } from '../../policies/video/index.js';
import { refusedVideo } from '../../policies/video/refusal.js';
import { judge, measureScaling } from '../support/cost-scaling.js';
import { ctxWith } from './helpers.js';

const video = (url: string) => ({ type: 'video_url', video_url: { url } });
const withParts = (...parts: unknown[]) => ({ model: 'm', messages: [{ role: 'user', content: parts }] });

describe('video', () => {
  it('notes video for a model without vision, or whose backend refused video, now or before', () => {
    const req = withParts(video('https://example.com/a.mp4'));
    const noted = (ctx: ReturnType<typeof ctxWith>) =>
      (videoPolicy.onRequest!(req as never, ctx, req as never) as { effects: unknown[] }).effects.length > 0;
    const refused = (now: string[], remembered: string[]) => ({
      refused: { now: new Set(now), remembered: new Set(remembered) },
    });
    expect(noted(ctxWith({}, { vision: false }))).toBe(true);
    expect(noted(ctxWith({}, { vision: true }))).toBe(false);
    expect(noted(ctxWith({}, { vision: 'auto' }))).toBe(false);
    expect(noted(ctxWith(refused(['video'], []), { vision: true }))).toBe(true);
    expect(noted(ctxWith(refused([], ['video']), { vision: true }))).toBe(true);
    // A model that cannot take images or audio may take video: their facts are not this one.
    expect(noted(ctxWith(refused(['images', 'audio'], ['images']), { vision: 'auto' }))).toBe(false);
  });

  it('names the media type and size of a data URL, or that it is a URL; the client text never', () => {
    const mp4 = `data:video/mp4;base64,${Buffer.alloc(3000).toString('base64')}`;
    expect(videoNote(video(mp4) as never)).toBe(
      '[video omitted: video/mp4, 2.9 KB; this model cannot take video]',
    );
    expect(videoNote(video('https://x/y.mp4') as never)).toBe(
      '[video omitted: video by URL; this model cannot take video]',
    );
    expect(videoNote(video('data:x]\n[evil/mp4;base64,AAAA') as never)).toBe(
      '[video omitted: video, 3 B; this model cannot take video]',
    );
    expect(videoNote({ type: 'input_video', input_video: { data: 'AAAA' } } as never)).toBe(
      '[video omitted: video, 3 B; this model cannot take video]',
    );
    const req = withParts({ type: 'text', text: 'look' }, video(mp4), {
      type: 'input_video',
      input_video: {},
    });
    const d = videoPolicy.onRequest!(req as never, ctxWith({}, { vision: false }), req as never);
    if (d.action !== 'continue') throw new Error('rejected');
    expect(d.effects).toEqual([{ policy: 'video', kind: 'video-note', count: 2 }]);
    expect(d.request.messages[0]!.content).toBe(
      'look\n\n[video omitted: video/mp4, 2.9 KB; this model cannot take video]\n\n[video omitted: video; this model cannot take video]',
    );
  });

  it("reads the backends' refusals of video, only for a request carrying it", () => {
    const v = withParts(video('https://x/y.mp4')) as never;
    const iv = withParts({ type: 'input_video', input_video: { data: 'AAAA' } }) as never;
    const none = withParts({ type: 'text', text: 'hi' }) as never;
    const say = (message: string) => ({ error: { message } });
    expect(refusedVideo(400, say('m is not a multimodal model None'), v)).toBe(true);
    expect(refusedVideo(400, say('At most 0 video(s) may be provided in one prompt.'), v)).toBe(true);
    expect(refusedVideo(400, say('video input is not supported - hint: ...'), iv)).toBe(true);
    expect(refusedVideo(400, say('unsupported content[].type'), v)).toBe(true);
    // llama-server takes input_video with a video mmproj: an unknown type is some other part.
    expect(refusedVideo(400, say('unsupported content[].type'), iv)).toBe(false);
    expect(refusedVideo(400, say('m is not a multimodal model None'), none)).toBe(false);
    expect(refusedVideo(400, say('boom'), v)).toBe(false);
    expect(refusedVideo(200, say('m is not a multimodal model None'), v)).toBe(false);
    // The audio twin: an unknown type is its audio_url's, not an input_audio's.
    const au = withParts({ type: 'audio_url', audio_url: { url: 'https://x/a.wav' } }) as never;
    const ia = withParts({ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }) as never;
    expect(refusedAudio(400, say('unsupported content[].type'), au)).toBe(true);
    expect(refusedAudio(400, say('unsupported content[].type'), ia)).toBe(false);
  });

  it('budget: noting 4x the video parts costs about 4x', () => {
    const ctx = ctxWith({}, { vision: false });
    const url = `data:video/mp4;base64,${'A'.repeat(4000)}`;
    const make = (n: number) => ({
      model: 'm',
      messages: Array.from({ length: n }, () => ({
        role: 'user',
        content: [{ type: 'text', text: 'x' }, video(url)],
      })),
    });
    const measure = () =>
      measureScaling(make, (r) => videoPolicy.onRequest!(r as never, ctx, r as never), {
        from: 16,
        max: 8_000,
      });
    let s = measure();
    if (!judge(s, 5).time || !judge(s, 5).memory) s = measure();
    expect(judge(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});
