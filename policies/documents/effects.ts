/** documents' effects: documents written into the prompt as their text, and those left as a note. */
import type { TallyEffect } from '../kit/effects.js';
import type { EffectRecord } from '../types.js';

export const DOCUMENTS_POLICY = 'documents';

/**
 * `document-text`: its text went upstream; `document-cut`: its text went upstream cut to a quarter
 * of a window it would not fit, or to its share of a window the prompt was known over;
 * `document-note`: a one-line note saying why not.
 */
export type DocumentsKind = 'document-text' | 'document-cut' | 'document-note';

export type DocumentsEffect = TallyEffect<typeof DOCUMENTS_POLICY, DocumentsKind>;

/** Each is degraded content: the trace's `degraded` and toolproof_degraded_content_total. */
export function describeDocumentsEffect(effect: DocumentsEffect): EffectRecord {
  return { type: 'degraded', kind: effect.kind, count: effect.count };
}
