/**
 * images (request side): for a model that cannot see (`vision: false`, or `auto` resolved to
 * false from the backend), every image part (user content and tool results, all three front
 * doors: they all arrive as chat `image_url` parts) becomes a one-line note. A text-only
 * backend refuses an image outright (vLLM: the model does not support multimodal input;
 * llama-server without --mmproj: image input is not supported), and the agent would send that
 * image again on every later turn. The note is a pure function of the image part, so every turn
 * gets the same bytes. A model that can see gets its images unchanged. One toolproof was told
 * could see (or could not know about: vLLM does not say) may still have them refused: the
 * policy's refusal (refusal.ts) reads that error, and the server sends the request once more
 * with the notes and remembers the model as text-only (PolicyContext.refused).
 */
import { EffectTally } from '../kit/effects.js';
import { rewriteParts } from '../kit/content-parts.js';
import { imageLabel, imageUrl } from '../kit/image-part.js';
import { calibratedWindow, messagesBeforeBoundary } from '../kit/overflow.js';
import { type Policy, type PolicyContext, PROMPT_OVER_WINDOW } from '../types.js';
import { carriesImages, refusesImages } from './refusal.js';
import { describeImagesEffect, IMAGES_POLICY, type ImagesEffect, type ImagesKind } from './effects.js';

/** `[image omitted: <name or media type>, <size>; this model cannot read images]`. */
export function imageNote(url: string): string {
  return `[image omitted: ${imageLabel(url)}; this model cannot read images]`;
}

/** `[image omitted: <name or media type>, <size>; left out to fit the model's context window]`. */
export function overflowNote(url: string): string {
  return `[image omitted: ${imageLabel(url)}; left out to fit the model's context window]`;
}

/** The refusal's fact: the upstream refused an image because its model cannot see. */
const IMAGES_FACT = 'images';

/**
 * Whether this request's images go as notes: the model is configured text-only; or its backend
 * refused this request's images; or, with `vision: auto` or a `true` that was the backend's word
 * (llama-server's /props saying vision while no projector answers: ModelSettings.fromBackend), an
 * earlier request's within the route's fallbackTtlSeconds (a model configured `vision: true` is
 * the operator's word for every request but the one refused: the backend may be restarted with a
 * vision model or --mmproj).
 */
function textOnly(ctx: PolicyContext): boolean {
  const v = ctx.settings.vision;
  if (v === false) return true;
  const refused = ctx.refused;
  if (refused === undefined) return false;
  const learns = v === 'auto' || ctx.settings.fromBackend?.includes('vision') === true;
  return refused.now.has(IMAGES_FACT) || (learns && refused.remembered.has(IMAGES_FACT));
}

export const imagesPolicy: Policy<ImagesEffect> = {
  name: IMAGES_POLICY,
  settingsSchema: Object.freeze({ vision: { enum: [true, false, 'auto'] } }),
  // On for every model: one that can see may still have its images refused by its backend.
  enabled: () => true,
  describeEffect: describeImagesEffect,
  refusal: {
    fact: IMAGES_FACT,
    decision: 'vision-refused',
    refused: (status, body, sent, ctx) =>
      ctx.settings.vision !== false && refusesImages(status, body) && carriesImages(sent),
    describe: (status) =>
      `the upstream refused the images (status ${status}: its model cannot read them): sent again with a note for each`,
  },
  onRequest(request, ctx) {
    if (!Array.isArray(request.messages)) return { action: 'continue', request, effects: [] };
    const all = textOnly(ctx);
    // A prompt over a known window (refused for its length, or its text far past it): the images
    // of the older messages (kit/overflow.ts) as notes. Each costs the backend hundreds of tokens
    // or more, and a history of screenshots overflowed every later turn.
    const window = ctx.settings.contextWindow;
    const older =
      all || window <= 0
        ? 0
        : messagesBeforeBoundary(
            request.tools,
            request.messages,
            window,
            ctx.refused?.now.has(PROMPT_OVER_WINDOW) === true,
            calibratedWindow(window, ctx.estimateScale),
          );
    if (!all && older === 0) return { action: 'continue', request, effects: [] };
    const tally = new EffectTally<typeof IMAGES_POLICY, ImagesKind>(IMAGES_POLICY);
    const messages = rewriteParts(request.messages, (part, _m, i) => {
      const url = imageUrl(part);
      if (url === undefined || (!all && i >= older)) return part;
      tally.add(all ? 'image-note' : 'image-overflow-note');
      return { type: 'text', text: all ? imageNote(url) : overflowNote(url) };
    });
    if (!messages) return { action: 'continue', request, effects: [] };
    return { action: 'continue', request: { ...request, messages }, effects: tally.toEffects() };
  },
};
