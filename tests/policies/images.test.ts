import { describe, expect, it } from 'vitest';
import { imageNote, imagesPolicy } from '../../policies/images/index.js';
import { DEFAULT_MODEL_SETTINGS } from '../../protocol/settings.js';
import { ctxWith } from './helpers.js';

describe('images', () => {
  it('is on only for a model that cannot see', () => {
    expect(imagesPolicy.enabled({ ...DEFAULT_MODEL_SETTINGS, vision: false })).toBe(true);
    expect(imagesPolicy.enabled({ ...DEFAULT_MODEL_SETTINGS, vision: true })).toBe(false);
    expect(imagesPolicy.enabled(DEFAULT_MODEL_SETTINGS)).toBe(false);
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
});
