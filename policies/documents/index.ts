/**
 * documents (request side, runs first): every chat `file` part (a Messages `document`, a
 * Responses `input_file`, a chat client's own) becomes its text in a wrapper the model can read,
 * or a one-line note when toolproof cannot read it (encrypted, image-only, a file_id or URL it
 * must not fetch, malformed, over a cap). Never a 400: the agent keeps the turn in its history
 * and would send it again on every later turn. A document whose text a known window cannot hold
 * at all is cut to its head and tail, a quarter of the window, from its own text only (the same
 * bytes every turn). PDFs are extracted by the server off the event
 * loop before this runs (server/documents/) and handed over as PolicyContext.documents.
 */
import { REQUEST_DOCUMENTS_MAX_CHARS } from '../../protocol/document-text.js';
import { fileFields } from '../../protocol/file-part.js';
import { EffectTally } from '../kit/effects.js';
import { rewriteParts } from '../kit/content-parts.js';
import { cutText, documentMarker, estimateTokens } from '../kit/cut.js';
import type { Policy } from '../types.js';
import {
  DOCUMENTS_POLICY,
  type DocumentsEffect,
  type DocumentsKind,
  describeDocumentsEffect,
} from './effects.js';
import { renderDocument } from './render.js';

export const documentsPolicy: Policy<DocumentsEffect> = {
  name: DOCUMENTS_POLICY,
  settingsSchema: Object.freeze({ documents: { type: 'boolean' } }),
  enabled: (settings) => settings.documents,
  describeEffect: describeDocumentsEffect,
  onRequest(request, ctx) {
    if (!Array.isArray(request.messages)) return { action: 'continue', request, effects: [] };
    const tally = new EffectTally<typeof DOCUMENTS_POLICY, DocumentsKind>(DOCUMENTS_POLICY);
    // What the request's documents may still add, in order: the same request reads the same ones.
    let room = REQUEST_DOCUMENTS_MAX_CHARS;
    const messages = rewriteParts(request.messages, (part) => {
      if (part.type !== 'file') return part;
      const rendered = renderDocument(fileFields(part) ?? {}, ctx.documents, room);
      if (!rendered.read) {
        tally.add('document-note');
        return { type: 'text', text: rendered.text };
      }
      room -= rendered.text.length;
      // A document the known window cannot hold at all (its text estimated over the whole
      // window): its head and tail, a quarter of the window, as a tool result's backstop cut.
      // Whole, the backend refused every later turn, the agent's compaction request too.
      const window = ctx.settings.contextWindow;
      const text =
        window > 0 && rendered.text.length > window && estimateTokens(rendered.text) > window
          ? cutText(rendered.text, Math.max(1, Math.floor(window / 4)), documentMarker)
          : rendered.text;
      tally.add(text === rendered.text ? 'document-text' : 'document-cut');
      return { type: 'text', text };
    });
    if (!messages) return { action: 'continue', request, effects: [] };
    return { action: 'continue', request: { ...request, messages }, effects: tally.toEffects() };
  },
};
