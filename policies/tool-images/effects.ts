/** tool-images' effects: images of tool results moved to a user message after them. */
import type { TallyEffect } from '../kit/effects.js';
import type { EffectRecord } from '../types.js';

export const TOOL_IMAGES_POLICY = 'tool-images';

export type ToolImagesKind = 'tool-image-moved';

export type ToolImagesEffect = TallyEffect<typeof TOOL_IMAGES_POLICY, ToolImagesKind>;

/** Degraded content: the trace's `degraded` and toolproof_degraded_content_total. */
export function describeToolImagesEffect(effect: ToolImagesEffect): EffectRecord {
  const { kind, count } = effect;
  const went =
    count === 1
      ? '1 image of a tool result went in a user message after the results'
      : `${count} images of tool results went in user messages after the results`;
  return {
    type: 'degraded',
    kind,
    count,
    reason: `${went}: the backend's template renders no image in a tool message`,
  };
}
