/**
 * image-urls (request side): an image whose URL the backend could not fetch (an expired signed
 * URL: refusal.ts) becomes a one-line note, so the agent's later turns, which carry that URL
 * again, are not refused one after another. The backend's refusal names the URLs (refusal.ts);
 * the server sends the request once more with their notes, and remembers each URL per upstream,
 * model and key (UpstreamRefusal.values), so later turns go with the same notes from the start:
 * the note is a function of the URL alone, the same bytes every turn (docs/prefix.md). Images
 * the backend fetched go on as they are.
 */
import { EffectTally } from '../kit/effects.js';
import { refusedPartsAsNotes } from '../kit/content-parts.js';
import { imageLabel, imageUrl } from '../kit/image-part.js';
import type { ContentPart } from '../../protocol/openai.js';
import type { Policy } from '../types.js';
import {
  describeImageUrlsEffect,
  IMAGE_URLS_POLICY,
  type ImageUrlsEffect,
  type ImageUrlsKind,
} from './effects.js';
import { bareServerError, remoteImageUrls, unfetchedUrls } from './refusal.js';

/** `[image not available: <file name>, size unknown; the model server could not fetch its URL ...]`. */
export function unfetchedNote(url: string): string {
  if (/^file:/i.test(url))
    return `[image not available: ${imageLabel(url)}; the model server does not read local file URLs]`;
  return `[image not available: ${imageLabel(url)}; the model server could not fetch its URL (expired or no longer reachable)]`;
}

/** An image part's URL when it is no data URL (the values image-urls notes), else undefined. */
function remoteUrl(part: ContentPart): string | undefined {
  const url = imageUrl(part);
  return url === undefined || url.startsWith('data:') ? undefined : url;
}

export const imageUrlsPolicy: Policy<ImageUrlsEffect> = {
  name: IMAGE_URLS_POLICY,
  // On for every model: any backend that fetches URLs may fail to.
  enabled: () => true,
  describeEffect: describeImageUrlsEffect,
  refusal: {
    fact: 'image-fetch',
    decision: 'image-fetch-refused',
    refused: (status, body, sent) => unfetchedUrls(status, body, sent).length > 0,
    describe: (status) =>
      `the upstream could not fetch an image URL (status ${status}): sent again with a note for each image it could not fetch`,
    values: { named: unfetchedUrls, candidates: remoteImageUrls, unsure: bareServerError },
  },
  onRequest(request, ctx) {
    // An inline image's value is image-decode's (the values refused share one set).
    const notes = refusedPartsAsNotes(request, ctx.refused?.values, remoteUrl, (_part, url) =>
      unfetchedNote(url),
    );
    if (!notes) return { action: 'continue', request, effects: [] };
    const tally = new EffectTally<typeof IMAGE_URLS_POLICY, ImageUrlsKind>(IMAGE_URLS_POLICY);
    tally.add('image-unfetched', notes.count);
    return {
      action: 'continue',
      request: { ...request, messages: notes.messages },
      effects: tally.toEffects(),
    };
  },
};
