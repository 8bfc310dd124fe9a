import { describe, expect, it } from 'vitest';
import { imageDecodePolicy, undecodedNote } from '../../policies/image-decode/index.js';
import {
  inlineImages,
  undecodedImages,
  unidentifiableImage,
  unreadableImage,
} from '../../policies/image-decode/refusal.js';
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';
import { ctxWith } from './helpers.js';

const b64 = (bytes: string) => Buffer.from(bytes, 'latin1').toString('base64');
const PNG = `data:image/png;base64,${b64('\x89PNG\r\n\x1a\n....')}`;
const JPEG = `data:image/jpeg;base64,${b64('\xff\xd8\xff\xe0....')}`;
const WEBP = `data:image/webp;base64,${b64('RIFF\x1a\x00\x00\x00WEBPVP8L')}`;
const SVG = `data:image/svg+xml;base64,${b64('<svg xmlns="http://www.w3.org/2000/svg"/>')}`;
const TIFF = `data:image/tiff;base64,${b64('II*\x00\x08\x00\x00\x00')}`;
const HEIC = `data:image/heic;base64,${b64('\x00\x00\x00\x18ftypheic\x00\x00\x00\x00')}`;
const img = (url: string) => ({ type: 'image_url' as const, image_url: { url } });
const req = (...urls: string[]): ChatCompletionRequest => ({
  model: 'm',
  messages: [
    { role: 'user', content: [{ type: 'text', text: 'look' }, ...urls.map(img)] },
    { role: 'tool', tool_call_id: 'c', content: [img(WEBP)] } as never,
  ],
});
/** llama-server's refusal (field reports; policies/image-decode/refusal.ts). */
const refusal = {
  error: { code: 400, message: 'Failed to load image or audio file', type: 'invalid_request_error' },
};

describe('image-decode', () => {
  it('reads the first bytes: what stb_image reads, and what it does not', () => {
    expect([PNG, JPEG].map(unreadableImage)).toEqual([false, false]);
    expect([WEBP, SVG, 'data:image/png,notbase64', 'data:image/png;base64,'].map(unreadableImage)).toEqual([
      true,
      true,
      true,
      true,
    ]);
  });

  it('reads the first bytes as PIL does: WebP and TIFF it opens, SVG and HEIC it does not', () => {
    expect([PNG, JPEG, WEBP, TIFF].map(unidentifiableImage)).toEqual([false, false, false, false]);
    expect(
      [SVG, HEIC, 'data:image/png,notbase64', 'data:image/png;base64,'].map(unidentifiableImage),
    ).toEqual([true, true, true, true]);
  });

  it("PIL's refusal (vLLM) names the images of no format PIL identifies, else none", () => {
    // vllm/multimodal/media/connector.py turns PIL's UnidentifiedImageError into a 400 in its words
    const pil = {
      error: {
        message: 'cannot identify image file <_io.BytesIO object at 0x7f2b3c4d5e60>',
        type: 'BadRequestError',
        param: null,
        code: 400,
      },
    };
    const sent = req(PNG, HEIC, SVG, 'https://x.example/a.png');
    expect(undecodedImages(400, pil, sent)).toEqual([HEIC, SVG]); // not the WebP: PIL reads it
    const readable: ChatCompletionRequest = {
      model: 'm',
      messages: [{ role: 'user', content: [img(PNG), img(WEBP), img(TIFF)] }],
    };
    expect(undecodedImages(400, pil, readable)).toEqual([]); // none could be the one: relayed
    expect(
      undecodedImages(
        400,
        { error: { message: 'Failed to load image: cannot identify image file <_io.BytesIO object>' } },
        sent,
      ),
    ).toEqual([HEIC, SVG]);
    expect(undecodedImages(200, pil, sent)).toEqual([]);
  });

  it('a refusal names the unreadable inline images, else all of them; nothing else is one', () => {
    const sent = req(PNG, SVG, 'https://x.example/a.png');
    expect(inlineImages(sent)).toEqual([PNG, SVG, WEBP]);
    expect(undecodedImages(400, refusal, sent)).toEqual([SVG, WEBP]);
    expect(undecodedImages(500, refusal, sent)).toEqual([SVG, WEBP]);
    // every image looks readable (a corrupt PNG): which one failed cannot be told
    const readable: ChatCompletionRequest = {
      model: 'm',
      messages: [{ role: 'user', content: [img(PNG), img(JPEG)] }],
    };
    expect(undecodedImages(400, refusal, readable)).toEqual([PNG, JPEG]);
    // another error about an image is not one (tests/e2e/vision-refused.test.ts relays it)
    expect(
      undecodedImages(400, { error: { message: 'Invalid image: this image is not allowed here' } }, sent),
    ).toEqual([]);
    expect(undecodedImages(400, { error: { message: 'Failed to download image' } }, sent)).toEqual([]);
    expect(undecodedImages(200, refusal, sent)).toEqual([]);
    expect(
      undecodedImages(400, refusal, { model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    ).toEqual([]);
  });

  it('notes the refused images only, the same bytes each time; the others stay as they are', () => {
    const sent = req(PNG);
    const plain = imageDecodePolicy.onRequest!(sent, ctxWith({}, {}), sent);
    expect(plain.action === 'continue' && plain.request).toBe(sent);
    const ctx = {
      ...ctxWith({}, {}),
      refused: { now: new Set(['image-decode']), remembered: new Set<string>(), values: new Set([WEBP]) },
    };
    const d = imageDecodePolicy.onRequest!(sent, ctx as never, sent);
    if (d.action !== 'continue') throw new Error('continue expected');
    expect(d.request.messages[0]).toBe(sent.messages[0]);
    expect(d.request.messages[1]!.content).toBe(undecodedNote(WEBP));
    expect(undecodedNote(WEBP)).toBe(
      '[image not available: image/webp, 16 B; the model server could not decode it]',
    );
    expect(d.effects).toEqual([
      { policy: 'image-decode', kind: 'image-undecodable', count: 1, images: ['image/webp, 16 B'] },
    ]);
    expect(imageDecodePolicy.onRequest!(sent, ctx as never, sent)).toEqual(d);
  });

  it('costs in proportion to the images, x1 vs x4', () => {
    const make = (n: number): ChatCompletionRequest => ({
      model: 'm',
      messages: Array.from({ length: n }, (_, i) => ({
        role: 'user' as const,
        content: [img(i % 2 ? PNG : `${i % 4 ? WEBP : SVG}${'A'.repeat(i % 7)}`)],
      })),
    });
    const ctx = (r: ChatCompletionRequest) => ({
      ...ctxWith({}, {}),
      refused: {
        now: new Set(['image-decode']),
        remembered: new Set<string>(),
        values: new Set(inlineImages(r)),
      },
    });
    const pil = { error: { message: 'cannot identify image file <_io.BytesIO object at 0x7f00>' } };
    const run = (r: ChatCompletionRequest) => [
      undecodedImages(400, refusal, r),
      undecodedImages(400, pil, r),
      imageDecodePolicy.onRequest!(r, ctx(r) as never, r),
    ];
    const s = measureScaling(make, run, { from: 256, max: 1 << 16 });
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});
