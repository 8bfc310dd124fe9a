/**
 * images (request side): for a model that cannot see (`vision: false`, or `auto` resolved to
 * false from the backend), every image part (user content and tool results, all three front
 * doors: they all arrive as chat `image_url` parts) becomes a one-line note. A text-only
 * backend refuses an image outright (vLLM: the model does not support multimodal input;
 * llama-server without --mmproj: image input is not supported), and the agent would send that
 * image again on every later turn. The note is a pure function of the image part, so every turn
 * gets the same bytes. A model that can see gets its images unchanged (the policy is off).
 */
import { base64Size, splitDataUrl } from '../../protocol/file-part.js';
import type { ContentPart } from '../../protocol/openai.js';
import { isObject } from '../../protocol/is-object.js';
import { EffectTally } from '../kit/effects.js';
import { rewriteParts } from '../kit/content-parts.js';
import { formatBytes } from '../kit/sizes.js';
import type { Policy } from '../types.js';
import { describeImagesEffect, IMAGES_POLICY, type ImagesEffect, type ImagesKind } from './effects.js';

/** The part's image URL, when it is an image part (`image_url` as an object or a bare string). */
function imageUrl(part: ContentPart): string | undefined {
  if (part.type !== 'image_url' && part.type !== 'input_image') return undefined;
  const v = part.image_url;
  if (typeof v === 'string') return v;
  if (isObject(v) && typeof v.url === 'string') return v.url;
  return '';
}

/** `[image omitted: <name or media type>, <size>; this model cannot read images]`. */
export function imageNote(url: string): string {
  const data = splitDataUrl(url);
  let what: string;
  if (data) what = `${data.mediaType}, ${formatBytes(base64Size(data.base64))}`;
  else if (url === '') what = 'no URL, 0 B';
  else {
    // A remote image: its file name (never fetched, so its size is not known).
    let name = url.startsWith('data:') ? 'data URL' : url;
    try {
      const path = new URL(url).pathname;
      name = decodeURIComponent(path.slice(path.lastIndexOf('/') + 1)) || new URL(url).host;
    } catch {
      // not a URL: its own (bounded) text
    }
    what = `${name.replace(/[\r\n[\]]+/g, ' ').slice(0, 120)}, size unknown`;
  }
  return `[image omitted: ${what}; this model cannot read images]`;
}

export const imagesPolicy: Policy<ImagesEffect> = {
  name: IMAGES_POLICY,
  settingsSchema: Object.freeze({ vision: { enum: [true, false, 'auto'] } }),
  enabled: (settings) => settings.vision === false,
  describeEffect: describeImagesEffect,
  onRequest(request) {
    if (!Array.isArray(request.messages)) return { action: 'continue', request, effects: [] };
    const tally = new EffectTally<typeof IMAGES_POLICY, ImagesKind>(IMAGES_POLICY);
    const messages = rewriteParts(request.messages, (part) => {
      const url = imageUrl(part);
      if (url === undefined) return part;
      tally.add('image-note');
      return { type: 'text', text: imageNote(url) };
    });
    if (!messages) return { action: 'continue', request, effects: [] };
    return { action: 'continue', request: { ...request, messages }, effects: tally.toEffects() };
  },
};
