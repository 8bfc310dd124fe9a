/**
 * unknown-parts (request side): a content part of a type toolproof does not know (none of text,
 * image_url, input_audio, audio_url, video_url, input_video, file, refusal) goes upstream as it
 * came, since the backend may take it (vLLM reads `thinking` parts as text). Once the backend
 * refused one (refusal.ts: llama-server's "unsupported content[].type", vLLM's "Unknown part
 * type"), the request goes again with each such part as text, and the upstream and model
 * remember it for the route's fallbackTtlSeconds, so later turns go so from the start: a part
 * that carries a string `text` as that text, any other as
 * `[content part of type "<type>" left out: the model server does not take this type]`. Relayed,
 * the refusal came back on every later turn (the agent sends its history again): the session was
 * over. Each part's text is a function of the part alone, so every turn gets the same bytes
 * (docs/prefix.md).
 */
import type { ContentPart } from '../../protocol/openai.js';
import { EffectTally } from '../kit/effects.js';
import { rewriteParts } from '../kit/content-parts.js';
import type { Policy, PolicyContext } from '../types.js';
import {
  describeUnknownPartEffect,
  UNKNOWN_PARTS_POLICY,
  type UnknownPartEffect,
  type UnknownPartKind,
} from './effects.js';
import { isUnknownPart, refusedUnknownPart } from './refusal.js';

/** A part type as the note names it: printable, at most 64 characters. */
function typeName(type: unknown): string {
  if (typeof type !== 'string' || type === '') return 'none';
  return type.slice(0, 64).replace(/[^\w.:-]/g, '?');
}

/** The text a part of a type the backend refused goes as: its own text, or a note naming its type. */
export function unknownPartText(part: ContentPart): string {
  if (typeof part.text === 'string') return part.text;
  return `[content part of type "${typeName(part.type)}" left out: the model server does not take this type]`;
}

/** The refusal's fact: the upstream refused a part type its parser does not know. */
const UNKNOWN_FACT = 'unknown-part';

function refused(ctx: PolicyContext): boolean {
  const r = ctx.refused;
  return r !== undefined && (r.now.has(UNKNOWN_FACT) || r.remembered.has(UNKNOWN_FACT));
}

export const unknownPartsPolicy: Policy<UnknownPartEffect> = {
  name: UNKNOWN_PARTS_POLICY,
  // On for every model: no setting says which part types a backend's parser takes.
  enabled: () => true,
  describeEffect: describeUnknownPartEffect,
  refusal: {
    fact: UNKNOWN_FACT,
    decision: 'part-type-refused',
    refused: (status, body, sent) => refusedUnknownPart(status, body, sent),
    describe: (status) =>
      `the upstream refused a content part type its parser does not know (status ${status}): sent again with each such part as text`,
  },
  onRequest(request, ctx) {
    if (!refused(ctx) || !Array.isArray(request.messages))
      return { action: 'continue', request, effects: [] };
    const tally = new EffectTally<typeof UNKNOWN_PARTS_POLICY, UnknownPartKind>(UNKNOWN_PARTS_POLICY);
    const messages = rewriteParts(request.messages, (part) => {
      if (!isUnknownPart(part)) return part;
      tally.add('part-note');
      return { type: 'text', text: unknownPartText(part) };
    });
    if (!messages) return { action: 'continue', request, effects: [] };
    return { action: 'continue', request: { ...request, messages }, effects: tally.toEffects() };
  },
};
