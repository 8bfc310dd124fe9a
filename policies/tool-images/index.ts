/**
 * tool-images (request side): for a backend whose chat template renders no image of a tool
 * message (refusal.ts: vLLM's 500 "Failed to apply prompt replacement for mm_items['image'][N]"),
 * each image of a tool result goes in a user message right after that turn's tool results,
 * numbered, and the tool message keeps a line naming it in its place. Relayed, that 500 came back
 * on every later turn (the agent sends its screenshots again): the session was over. The image is
 * moved rather than noted, so a model that sees still sees it. Once refused, the upstream and
 * model remember it (fallbackTtlSeconds from the last turn that used it), so later turns go moved
 * from the start. The move is a function of the run of tool messages alone (their images, in
 * order), so every turn gets the same bytes (docs/prefix.md).
 */
import type { ChatMessage, ContentPart } from '../../protocol/openai.js';
import { isObject } from '../../protocol/is-object.js';
import { EffectTally } from '../kit/effects.js';
import { imageUrl } from '../kit/image-part.js';
import { type Policy, wasRefused } from '../types.js';
import {
  describeToolImagesEffect,
  TOOL_IMAGES_POLICY,
  type ToolImagesEffect,
  type ToolImagesKind,
} from './effects.js';
import { refusedToolImages } from './refusal.js';

/** The refusal's fact: the upstream's template renders no image of a tool message. */
const TOOL_IMAGES_FACT = 'tool-images';

/** The line left in the tool result where its image `k` (1-based, within the turn's results) was. */
export function movedLine(k: number): string {
  return `[image ${k}: in the user message after these tool results]`;
}

/** The user message's opening line. */
export const MOVED_HEAD =
  '[the images of the tool results above, in order: the model server takes no image in a tool result]';

const isImage = (p: unknown): p is ContentPart => isObject(p) && imageUrl(p as ContentPart) !== undefined;

/**
 * The messages with each run of tool messages' images moved to a user message after the run, or
 * undefined when no tool message holds an image. One pass; each part copied at most once.
 */
export function moveToolImages(
  messages: readonly ChatMessage[],
): { messages: ChatMessage[]; moved: number } | undefined {
  let out: ChatMessage[] | undefined;
  let moved = 0;
  let run: ContentPart[] = []; // the current run's images, with their number lines
  let k = 0;
  const flush = () => {
    if (run.length === 0) return;
    out!.push({ role: 'user', content: [{ type: 'text', text: MOVED_HEAD }, ...run] });
    run = [];
  };
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    if (m?.role !== 'tool') {
      if (out) flush();
      k = 0;
      out?.push(m);
      continue;
    }
    const content = m.content;
    if (!Array.isArray(content) || !content.some(isImage)) {
      out?.push(m);
      continue;
    }
    out ??= messages.slice(0, i);
    const parts: ContentPart[] = [];
    for (const p of content) {
      if (!isImage(p)) {
        parts.push(p);
        continue;
      }
      k++;
      moved++;
      parts.push({ type: 'text', text: movedLine(k) });
      run.push({ type: 'text', text: `[image ${k}]` }, p);
    }
    const allText = parts.every((p) => p.type === 'text' && typeof p.text === 'string');
    out.push({ ...m, content: allText ? parts.map((p) => p.text).join('\n\n') : parts });
  }
  if (!out) return undefined;
  flush();
  return { messages: out, moved };
}

export const toolImagesPolicy: Policy<ToolImagesEffect> = {
  name: TOOL_IMAGES_POLICY,
  // On for every model: any backend's template may drop a tool message's images.
  enabled: () => true,
  describeEffect: describeToolImagesEffect,
  refusal: {
    fact: TOOL_IMAGES_FACT,
    decision: 'tool-images-refused',
    refused: (status, body, sent) => refusedToolImages(status, body, sent),
    describe: (status) =>
      `the upstream's template renders no image of a tool message (status ${status}): sent again with each such image in a user message after the tool results`,
  },
  onRequest(request, ctx) {
    if (!wasRefused(ctx, TOOL_IMAGES_FACT) || !Array.isArray(request.messages))
      return { action: 'continue', request, effects: [] };
    const result = moveToolImages(request.messages);
    if (!result) return { action: 'continue', request, effects: [] };
    const tally = new EffectTally<typeof TOOL_IMAGES_POLICY, ToolImagesKind>(TOOL_IMAGES_POLICY);
    tally.add('tool-image-moved', result.moved);
    return {
      action: 'continue',
      request: { ...request, messages: result.messages },
      effects: tally.toEffects(),
    };
  },
};
