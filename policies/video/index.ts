/**
 * video (request side): for a model that cannot take video (`vision: false`: a text-only model
 * takes no video either; or its backend refused this request's video, or an earlier one's within
 * the route's fallbackTtlSeconds), every video part (vLLM's chat `video_url`, llama-server's
 * `input_video`) becomes a one-line note. Passed through before: vLLM's "is not a multimodal
 * model", llama-server's "unsupported content[].type" or "video input is not supported" came back
 * on that turn and every later one, since the agent sends its history again. The note is a pure
 * function of the part (its media type and size, or that it is a URL), so every turn gets the
 * same bytes. The audio policy's twin (policies/audio/), with its own fact: a model may see
 * pictures and not video.
 */
import type { ContentPart } from '../../protocol/openai.js';
import { isObject } from '../../protocol/is-object.js';
import { EffectTally } from '../kit/effects.js';
import { rewriteParts } from '../kit/content-parts.js';
import { mediaWhat } from '../kit/media-note.js';
import type { Policy, PolicyContext } from '../types.js';
import { describeVideoEffect, VIDEO_POLICY, type VideoEffect, type VideoKind } from './effects.js';
import { refusedVideo, VIDEO_PARTS } from './refusal.js';

/** `[video omitted: <media type, size | a URL>; this model cannot take video]`. */
export function videoNote(part: ContentPart): string {
  const inner = part.type === 'video_url' ? part.video_url : part.input_video;
  const url = typeof inner === 'string' ? inner : isObject(inner) ? (inner.url ?? inner.data) : undefined;
  return `[video omitted: ${mediaWhat(url, 'video')}; this model cannot take video]`;
}

/** The refusal's fact: the upstream refused video because its model cannot take it. */
const VIDEO_FACT = 'video';

/**
 * Whether this request's video goes as notes: the model is configured without vision, or its
 * backend refused video, this request's or an earlier one's (no setting says a model takes
 * video: every refusal teaches).
 */
function blind(ctx: PolicyContext): boolean {
  if (ctx.settings.vision === false) return true;
  const refused = ctx.refused;
  return refused !== undefined && (refused.now.has(VIDEO_FACT) || refused.remembered.has(VIDEO_FACT));
}

export const videoPolicy: Policy<VideoEffect> = {
  name: VIDEO_POLICY,
  // On for every model: one toolproof was not told about may still have its video refused.
  enabled: () => true,
  describeEffect: describeVideoEffect,
  refusal: {
    fact: VIDEO_FACT,
    decision: 'video-refused',
    refused: (status, body, sent) => refusedVideo(status, body, sent),
    describe: (status) =>
      `the upstream refused the video (status ${status}: its model cannot take it): sent again with a note for each`,
  },
  onRequest(request, ctx) {
    if (!blind(ctx) || !Array.isArray(request.messages)) return { action: 'continue', request, effects: [] };
    const tally = new EffectTally<typeof VIDEO_POLICY, VideoKind>(VIDEO_POLICY);
    const messages = rewriteParts(request.messages, (part) => {
      if (!VIDEO_PARTS.has(part.type)) return part;
      tally.add('video-note');
      return { type: 'text', text: videoNote(part) };
    });
    if (!messages) return { action: 'continue', request, effects: [] };
    return { action: 'continue', request: { ...request, messages }, effects: tally.toEffects() };
  },
};
