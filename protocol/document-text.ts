/**
 * What reading a document gave: its text page by page, or why it could not be read. The server
 * extracts PDFs off the event loop (server/documents/) before the request policies run and hands
 * the results to the documents policy by the document's bytes (PolicyContext.documents); the
 * policy writes them into the prompt. A leaf type both sides share.
 */

/** Characters of a document's text the prompt gets at most (about 50k tokens); the rest is cut. */
export const DOCUMENT_MAX_CHARS = 200_000;

/**
 * Characters of document text one request's prompt gets at most, over all its documents (ten at
 * the cap, about 500k tokens: past any model's window); a document past it becomes a note. A
 * 4 KB PDF can hold a cap's worth of compressed text, so without it 1,000 copies of one (a 5.7 MB
 * body) sent 200 MB upstream.
 */
export const REQUEST_DOCUMENTS_MAX_CHARS = 10 * DOCUMENT_MAX_CHARS;

export function isPdfType(mediaType: string): boolean {
  return mediaType === 'application/pdf' || mediaType === 'application/x-pdf';
}

/**
 * Distinct PDFs one request gets read at most, in its order (the rest: a note). Each read is a
 * worker of its own (~0.2 s of CPU for a tiny one): 50 distinct one-line PDFs (a 44 KB body) took
 * 8.9 s of CPU, and a body limit's worth would have kept both readers busy for an hour.
 */
export const REQUEST_MAX_PDFS = 16;

/** Why a document was not read (a closed set: the note's wording and a metric's kind). */
export type UnreadableReason =
  | 'too-many'
  | 'encrypted'
  | 'no-text'
  | 'malformed'
  | 'too-large'
  | 'timeout'
  | 'memory'
  | 'busy'
  | 'unsupported-type';

export type DocumentText =
  | {
      kind: 'text';
      /** The document's page count. */
      pages: number;
      /** Each page read, in order (at most the page cap). */
      text: readonly string[];
      /** Text past the character cap was left out (the last page kept is cut). */
      truncated: boolean;
    }
  | { kind: 'unreadable'; reason: UnreadableReason };

/** Looks a document up by its `file_data` (the data URL as sent); undefined: not extracted. */
export type DocumentLookup = (fileData: string) => DocumentText | undefined;
