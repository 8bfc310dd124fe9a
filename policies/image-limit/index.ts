/**
 * image-limit (request side): vLLM started with `--limit-mm-per-prompt '{"image": N}'` refuses a
 * request carrying more than N images with its 400 "At most N image(s) may be provided in one
 * prompt." (vllm/entrypoints/chat_utils.py, the multimodal item tracker; N = 0 is a model that
 * cannot see: policies/images). An agent's screenshots pile up in its history: from the turn that
 * brings the N+1th, every turn was refused and the session was over. Once refused (UpstreamRefusal
 * .values: the limit, remembered per upstream, model and key), the oldest images become one-line
 * notes and the latest go as they are, at most N. Which images become notes is a function of the
 * request's image count alone, in steps of half the limit (at least one): the count of images
 * noted grows only when the images past the limit fill another step, so the turns between send
 * the same bytes and the prompt changes once a step, from the first newly noted image
 * (docs/prefix.md, exception 7).
 */
import { rewriteParts } from '../kit/content-parts.js';
import { imageLabel, imageUrl } from '../kit/image-part.js';
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { isObject } from '../../protocol/is-object.js';
import { refusalSays } from '../kit/media-refusal.js';
import type { Policy } from '../types.js';
import { describeImageLimitEffect, IMAGE_LIMIT_POLICY, type ImageLimitEffect } from './effects.js';
import { errorMessageHead } from '../kit/error-text.js';

const LIMIT = /\bAt most (\d{1,6}) image\(s\) may be provided in one prompt\b/;
const VALUE = 'image-limit:';

/** The image parts of a request, counted. */
export function imageCount(request: ChatCompletionRequest): number {
  let n = 0;
  const messages: unknown = request.messages;
  if (!Array.isArray(messages)) return 0;
  for (const m of messages) {
    const content = isObject(m) ? m.content : undefined;
    if (!Array.isArray(content)) continue;
    for (const p of content) if (isObject(p) && imageUrl(p as never) !== undefined) n++;
  }
  return n;
}

/** The limit a refusal names (at least 1), when `sent` carries more images than it. */
export function refusedLimit(status: number, body: unknown, sent: ChatCompletionRequest): number | undefined {
  if (!refusalSays([LIMIT], status, body)) return undefined;
  const n = Number(LIMIT.exec(errorMessageHead(body, 1000))?.[1]);
  return n >= 1 && imageCount(sent) > n ? n : undefined;
}

/** How many of `count` images, the oldest, become notes under `limit`: in steps of half the limit. */
export function notedImages(count: number, limit: number): number {
  if (count <= limit) return 0;
  const step = Math.max(1, Math.floor(limit / 2));
  return Math.ceil((count - limit) / step) * step;
}

/** `[image not available: image/png, 31 KB; left out: the model server takes at most 4 images a prompt]`. */
export function limitNote(url: string, limit: number): string {
  return `[image not available: ${imageLabel(url)}; left out: the model server takes at most ${limit} image${limit === 1 ? '' : 's'} a prompt, and this one is older]`;
}

export const imageLimitPolicy: Policy<ImageLimitEffect> = {
  name: IMAGE_LIMIT_POLICY,
  // On for every model: any vLLM may be started with a limit.
  enabled: () => true,
  describeEffect: describeImageLimitEffect,
  refusal: {
    fact: 'image-limit',
    decision: 'image-limit-refused',
    refused: (status, body, sent) => refusedLimit(status, body, sent) !== undefined,
    describe: (status) =>
      `the upstream takes fewer images a prompt than the request carries (status ${status}): sent again with the oldest images as notes`,
    values: {
      named: (status, body, sent) => {
        const n = refusedLimit(status, body, sent);
        return n === undefined ? [] : [`${VALUE}${n}`];
      },
      // Every limit the request's images could be over: one lookup per image, at most.
      candidates: (request) => {
        const count = imageCount(request);
        return Array.from({ length: Math.max(0, count - 1) }, (_, i) => `${VALUE}${i + 1}`);
      },
    },
  },
  onRequest(request, ctx) {
    const values = ctx.refused?.values;
    if (!values || values.size === 0 || !Array.isArray(request.messages))
      return { action: 'continue', request, effects: [] };
    let limit = Number.POSITIVE_INFINITY;
    for (const v of values) if (v.startsWith(VALUE)) limit = Math.min(limit, Number(v.slice(VALUE.length)));
    if (!(limit >= 1 && limit < Number.POSITIVE_INFINITY))
      return { action: 'continue', request, effects: [] };
    const of = imageCount(request);
    let noted = notedImages(of, limit);
    if (noted === 0) return { action: 'continue', request, effects: [] };
    let count = 0;
    const messages = rewriteParts(request.messages, (part) => {
      const url = imageUrl(part);
      if (url === undefined || noted === 0) return part;
      noted--;
      count++;
      return { type: 'text', text: limitNote(url, limit) };
    });
    if (!messages || count === 0) return { action: 'continue', request, effects: [] };
    const effect: ImageLimitEffect = {
      policy: IMAGE_LIMIT_POLICY,
      kind: 'image-limit-note',
      count,
      of,
      limit,
    };
    return { action: 'continue', request: { ...request, messages }, effects: [effect] };
  },
};
