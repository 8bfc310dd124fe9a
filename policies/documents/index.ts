/**
 * documents (request side, runs first): every chat `file` part (a Messages `document`, a
 * Responses `input_file`, a chat client's own) becomes its text in a wrapper the model can read,
 * or a one-line note when toolproof cannot read it (encrypted, image-only, a file_id or URL it
 * must not fetch, malformed, over a cap). Never a 400: the agent keeps the turn in its history
 * and would send it again on every later turn. A document whose text a known window cannot hold
 * at all is cut to its head and tail, a quarter of the window, from its own text only (the same
 * bytes every turn). PDFs are extracted by the server off the event
 * loop before this runs (server/documents/) and handed over as PolicyContext.documents.
 *
 * Documents that each fit and together overflow a known window (three 12-page PDFs in one turn
 * of an 8k window): once the prompt is known over the window, the two ways tool-result-cap knows
 * it (the backend refused this prompt for its length, PROMPT_OVER_WINDOW; or its bytes are past
 * CERTAIN_BYTES_PER_TOKEN a token of the window, kit/prompt-bytes.ts), every read document is held
 * to its share: a quarter of the window split equally among the documents of its own message.
 * The share is a function of the message and the window only, so a document cut on one turn is
 * the same bytes on every later turn (the client sends it whole again, the prompt stays over, and
 * it is cut the same way); the prompt changes once, the first turn it is known over, from the
 * first document past its share (docs/prefix.md, exception 10). The older messages' documents
 * (before kit/overflow.ts' boundary) keep a sixty-fourth of the window each, and a sixteenth of it
 * together: past that, each is a one-line note (leftOutNote), decided in order.
 */
import { REQUEST_DOCUMENTS_MAX_CHARS } from '../../protocol/document-text.js';
import { fileFields } from '../../protocol/file-part.js';
import { EffectTally } from '../kit/effects.js';
import { rewriteParts } from '../kit/content-parts.js';
import { cutText, documentMarker, estimateTokens } from '../kit/cut.js';
import type { ChatMessage, ContentPart } from '../../protocol/openai.js';
import { BYTES_PER_TOKEN, CERTAIN_BYTES_PER_TOKEN, jsonBytes, messageBytes } from '../kit/prompt-bytes.js';
import { type Policy, PROMPT_OVER_WINDOW } from '../types.js';
import {
  DOCUMENTS_POLICY,
  type DocumentsEffect,
  type DocumentsKind,
  describeDocumentsEffect,
} from './effects.js';
import { renderDocument } from './render.js';
import { calibratedWindow, keptTokens, messagesBeforeBoundary } from '../kit/overflow.js';

export const documentsPolicy: Policy<DocumentsEffect> = {
  name: DOCUMENTS_POLICY,
  settingsSchema: Object.freeze({ documents: { type: 'boolean' } }),
  enabled: (settings) => settings.documents,
  describeEffect: describeDocumentsEffect,
  onRequest(request, ctx) {
    if (!Array.isArray(request.messages)) return { action: 'continue', request, effects: [] };
    const window = ctx.settings.contextWindow;
    // Each document in order: a note (null), or its text as rendered and as sent.
    const docs: Array<ReadDocument | null> = [];
    // What the request's documents may still add, in order: the same request reads the same ones.
    let room = REQUEST_DOCUMENTS_MAX_CHARS;
    // The read ones by their part (whole, or cut by itself), for the second pass.
    const read = new Map<ContentPart, ReadDocument>();
    // The others' notes by their part, for the second pass too.
    const notes = new Map<ContentPart, string>();
    const messages = rewriteParts(request.messages, (part) => {
      if (part.type !== 'file') return part;
      const rendered = renderDocument(fileFields(part) ?? {}, ctx.documents, room);
      if (!rendered.read) {
        docs.push(null);
        notes.set(part, rendered.text);
        return { type: 'text', text: rendered.text };
      }
      room -= rendered.text.length;
      // A document the known window cannot hold at all (its text estimated over the whole
      // window): its head and tail, a quarter of the window, as a tool result's backstop cut.
      // Whole, the backend refused every later turn, the agent's compaction request too.
      const whole = rendered.text;
      const sent =
        window > 0 && whole.length > window && estimateTokens(whole) > window
          ? cutText(whole, quarter(window), documentMarker)
          : whole;
      const doc = { whole, sent, label: rendered.label ?? 'document' };
      read.set(part, doc);
      docs.push(doc);
      return { type: 'text', text: sent };
    });
    if (!messages) return { action: 'continue', request, effects: [] };
    // Documents that together overflow the window: each held to its message's share, once the
    // prompt is known over it. The same parts again, from what the first pass rendered.
    const over = read.size > 0 && window > 0 && overWindow(request.tools, messages, window, ctx.refused?.now);
    // Documents of the older messages (those before the boundary the tool results are cut at,
    // kit/overflow.ts) keep a sixty-fourth of the window each: shares of many messages' documents
    // add up past the window all the same.
    // Placed as the backend counted the refused prompt, where it reported more than the estimate.
    const fit = over ? calibratedWindow(window, ctx.estimateScale) : window;
    const older = over ? messagesBeforeBoundary(request.tools, messages, window, true, fit) : 0;
    // Each message's share, counted once: counted again for each of its documents, a message of
    // 20,000 small ones cost 1.3 s of CPU (its parts read 20,000 times).
    const shares = new Map<ChatMessage, number>();
    // What the older messages' documents may still take together: a sixteenth of the window (the
    // last stretch, kept whole, may hold three quarters, and each left-out document's note and its
    // message take some too). At a sixty-fourth each, more than 64 of
    // them were past the window by themselves (every turn the backend's refusal). Spent in order, so a document's fate depends only on the documents
    // before it, which are older too (the boundary only moves on): the same bytes every turn.
    let olderRoom = Math.max(1, Math.floor(fit / 16));
    const out = over
      ? rewriteParts(request.messages, (part, m, i) => {
          const doc = read.get(part);
          // A document not read is its note here too: returned as it came, a file part toolproof
          // could not read (a file_id, a URL, an encrypted PDF) went upstream beside a read one
          // once the prompt was over the window, and a backend without file parts refused it.
          if (!doc) {
            const note = notes.get(part);
            return note === undefined ? part : { type: 'text', text: note };
          }
          let share = shares.get(m);
          if (share === undefined)
            shares.set(m, (share = Math.max(1, Math.floor(quarter(fit) / documentsIn(m)))));
          if (i >= older) {
            doc.sent = cutText(doc.whole, share, documentMarker);
            return { type: 'text', text: doc.sent };
          }
          const keep = Math.min(share, keptTokens(fit));
          const cut = cutText(doc.whole, keep, documentMarker);
          // What it takes of the room: what it keeps of its text (a short one, all of it).
          const cost = cut === doc.whole ? Math.min(estimateTokens(cut), keep) : keep;
          const note = cost > olderRoom ? leftOutNote(doc.label) : undefined;
          // A note about as long as what it replaces would save nothing: the text goes.
          if (note !== undefined && note.length * 2 <= cut.length) {
            olderRoom = 0;
            doc.sent = note;
            doc.left = true;
          } else {
            olderRoom = Math.max(0, olderRoom - cost);
            doc.sent = cut;
          }
          return { type: 'text', text: doc.sent };
        })
      : messages;
    const tally = new EffectTally<typeof DOCUMENTS_POLICY, DocumentsKind>(DOCUMENTS_POLICY);
    for (const doc of docs)
      tally.add(
        doc === null || doc.left
          ? 'document-note'
          : doc.sent === doc.whole
            ? 'document-text'
            : 'document-cut',
      );
    return {
      action: 'continue',
      request: { ...request, messages: out ?? messages },
      effects: tally.toEffects(),
    };
  },
};

const quarter = (window: number): number => Math.max(1, Math.floor(window / 4));

/** A read document: its text as rendered and as sent, and its label for a note in its place. */
interface ReadDocument {
  whole: string;
  sent: string;
  label: string;
  /** Sent as leftOutNote: the older documents before it hold their room. */
  left?: boolean;
}

/** One line in place of an older document past the room the older documents share. */
export function leftOutNote(label: string): string {
  return `[document left out: ${label}; to fit the model's context window]`;
}

/** The `file` parts of `m`: its documents split their share of the window. */
function documentsIn(m: ChatMessage): number {
  let n = 0;
  if (Array.isArray(m.content)) for (const p of m.content) if (p?.type === 'file') n++;
  return Math.max(1, n);
}

/**
 * Whether the prompt (the documents rendered) is known over `window` tokens: the backend refused
 * it for its length, or its bytes are past CERTAIN_BYTES_PER_TOKEN a token of the window. A tool
 * message counts at most BYTES_PER_TOKEN a token of the window: a result past that is estimated
 * over the window and cut by itself (tool-result-cap) before the prompt goes.
 */
function overWindow(
  tools: unknown,
  messages: readonly ChatMessage[],
  window: number,
  refused: ReadonlySet<string> | undefined,
): boolean {
  if (refused?.has(PROMPT_OVER_WINDOW)) return true;
  const limit = window * CERTAIN_BYTES_PER_TOKEN;
  let total = tools === undefined ? 0 : jsonBytes(tools);
  for (let i = 0; i < messages.length && total <= limit; i++) {
    const m = messages[i];
    if (!m) continue;
    const n = messageBytes(m);
    total += m.role === 'tool' ? Math.min(n, window * BYTES_PER_TOKEN) : n;
  }
  return total > limit;
}
