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
  const { kind, count } = effect;
  const what = count === 1 ? '1 document' : `${count} documents`;
  const its = count === 1 ? 'its' : 'their';
  const reason =
    kind === 'document-text'
      ? `${what} went upstream as ${its} extracted text`
      : kind === 'document-cut'
        ? `${what} went upstream as ${its} text, cut to fit the model's window`
        : `${what} went as ${count === 1 ? 'a note' : 'notes'}: unreadable, or no room left in the window`;
  return { type: 'degraded', kind, count, reason };
}
