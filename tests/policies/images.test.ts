import { describe, expect, it } from 'vitest';
import { imageNote, imagesPolicy } from '../../policies/images/index.js';
import { DEFAULT_MODEL_SETTINGS } from '../../protocol/settings.js';
import { ctxWith } from './helpers.js';

describe('images', () => {
  it('notes images for a model that cannot see, or whose backend refused them', () => {
    const img = { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } };
    const req = { model: 'm', messages: [{ role: 'user', content: [img] }] };
    const noted = (ctx: ReturnType<typeof ctxWith>) =>
      (imagesPolicy.onRequest!(req as never, ctx, req as never) as { effects: unknown[] }).effects.length > 0;
    const refused = (now: string[], remembered: string[]) => ({
      refused: { now: new Set(now), remembered: new Set(remembered) },
    });
    expect(imagesPolicy.enabled(DEFAULT_MODEL_SETTINGS)).toBe(true);
    expect(noted(ctxWith({}, { vision: false }))).toBe(true);
    expect(noted(ctxWith({}, { vision: true }))).toBe(false);
    expect(noted(ctxWith({}, { vision: 'auto' }))).toBe(false);
    // Refused by this request's backend: whatever the configuration said.
    expect(noted(ctxWith(refused(['images'], []), { vision: true }))).toBe(true);
    expect(noted(ctxWith(refused(['images'], []), { vision: 'auto' }))).toBe(true);
    // Remembered from an earlier request: only where toolproof could not know (auto).
    expect(noted(ctxWith(refused([], ['images']), { vision: 'auto' }))).toBe(true);
    expect(noted(ctxWith(refused([], ['images']), { vision: true }))).toBe(false);
    expect(noted(ctxWith(refused(['schema-keywords'], []), { vision: 'auto' }))).toBe(false);
  });

  it('replaces every image with the same note, a 0-byte one included', () => {
    const img = `data:image/png;base64,${Buffer.alloc(3000).toString('base64')}`;
    const req = {
      model: 'm',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'look' },
            { type: 'image_url', image_url: { url: img } },
          ],
        },
        {
          role: 'tool',
          tool_call_id: 'c',
          content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,' } }],
        },
        { role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x.test/shots/a.png' } }] },
      ],
    };
    const d = imagesPolicy.onRequest!(req, ctxWith({}, { vision: false }), req);
    if (d.action !== 'continue') throw new Error('rejected');
    expect(d.request.messages.map((m) => m.content)).toEqual([
      'look\n\n[image omitted: image/png, 2.9 KB; this model cannot read images]',
      '[image omitted: image/png, 0 B; this model cannot read images]',
      '[image omitted: a.png, size unknown; this model cannot read images]',
    ]);
    expect(d.effects).toEqual([{ policy: 'images', kind: 'image-note', count: 3 }]);
    expect(imageNote(img)).toBe(imageNote(img));
  });

  it('a prompt refused for its length: the images of the older messages as notes, the newest whole', () => {
    const shot = { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } };
    const messages = [
      { role: 'user', content: 'Click through.' },
      ...Array.from({ length: 12 }, () => ({ role: 'user', content: [shot] })),
    ];
    const req = { model: 'm', messages };
    const run = (refused: boolean, window = 8192) =>
      imagesPolicy.onRequest!(
        req as never,
        ctxWith(refused ? { refused: { now: new Set(['prompt-over-window']), remembered: new Set() } } : {}, {
          vision: true,
          contextWindow: window,
        }),
        req as never,
      );
    // not known over (images alone never make it certain): as they are
    expect(run(false)).toMatchObject({ request: req, effects: [] });
    const d = run(true);
    if (d.action !== 'continue') throw new Error('rejected');
    const noted = d.request.messages.filter(
      (m) => typeof m.content === 'string' && m.content.includes('left out'),
    );
    // twelve at IMAGE_TOKENS (1,024) each, 8k window: all but the last half window's noted
    expect(noted.length).toBeGreaterThan(0);
    expect(d.request.messages.at(-1)!.content).toEqual([shot]);
    expect(noted[0]!.content).toBe(
      "[image omitted: image/png, 3 B; left out to fit the model's context window]",
    );
    expect(d.effects).toEqual([{ policy: 'images', kind: 'image-overflow-note', count: noted.length }]);
    // the same request, the same bytes
    expect(JSON.stringify(run(true))).toBe(JSON.stringify(d));
  });
});
