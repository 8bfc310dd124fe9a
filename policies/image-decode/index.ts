/**
 * image-decode (request side): an inline image its backend could not decode (a WebP screenshot
 * on llama-server: refusal.ts) becomes a one-line note, so the agent's later turns, which carry
 * that image again, are not refused one after another. The server sends the refused request
 * once more with the notes, and remembers each image per upstream, model and key
 * (UpstreamRefusal.values; a long value is kept as its hash), so later turns go with the same
 * notes from the start: the note is a function of the image alone, the same bytes every turn
 * (docs/prefix.md). Images the backend decoded go on as they are.
 */
import { refusedPartsAsNotes } from '../kit/content-parts.js';
import { imageLabel, imageUrl } from '../kit/image-part.js';
import type { ContentPart } from '../../protocol/openai.js';
import type { Policy } from '../types.js';
import {
  describeImageDecodeEffect,
  IMAGE_DECODE_POLICY,
  type ImageDecodeEffect,
  NAMED_IMAGES,
} from './effects.js';
import { inlineImages, undecodedImages } from './refusal.js';

/** `[image not available: image/webp, 31 KB; the model server could not decode it]`. */
export function undecodedNote(url: string): string {
  return `[image not available: ${imageLabel(url)}; the model server could not decode it]`;
}

/** An inline image's URL (a data URL: the values image-decode notes), else undefined. */
function inlineUrl(part: ContentPart): string | undefined {
  const url = imageUrl(part);
  return url?.startsWith('data:') ? url : undefined;
}

export const imageDecodePolicy: Policy<ImageDecodeEffect> = {
  name: IMAGE_DECODE_POLICY,
  // On for every model: any backend may meet an image format its decoder does not read.
  enabled: () => true,
  describeEffect: describeImageDecodeEffect,
  refusal: {
    fact: 'image-decode',
    decision: 'image-decode-refused',
    refused: (status, body, sent) => undecodedImages(status, body, sent).length > 0,
    describe: (status) =>
      `the upstream could not decode an inline image (status ${status}): sent again with a note for each image it could not decode`,
    values: { named: undecodedImages, candidates: inlineImages },
  },
  onRequest(request, ctx) {
    const notes = refusedPartsAsNotes(
      request,
      ctx.refused?.values,
      inlineUrl,
      (_part, url) => undecodedNote(url),
      {
        named: NAMED_IMAGES,
        label: (_part, url) => imageLabel(url),
      },
    );
    if (!notes) return { action: 'continue', request, effects: [] };
    const effect: ImageDecodeEffect = {
      policy: IMAGE_DECODE_POLICY,
      kind: 'image-undecodable',
      count: notes.count,
      images: notes.labels,
    };
    return { action: 'continue', request: { ...request, messages: notes.messages }, effects: [effect] };
  },
};
