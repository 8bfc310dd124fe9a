/**
 * A document as the text the model reads: its text in a wrapper that names it and says the proxy
 * extracted it, or a one-line note saying why it was not read. A pure function of the document's
 * bytes (and of its extraction, itself a function of those bytes): the same document gives the
 * same text on every turn, so the prompt's prefix holds (docs/prefix.md).
 */
import {
  DOCUMENT_MAX_CHARS,
  type DocumentLookup,
  REQUEST_DOCUMENTS_MAX_CHARS,
  REQUEST_MAX_PDFS,
  type DocumentText,
  isPdfType,
  type UnreadableReason,
} from '../../protocol/document-text.js';
import { base64Size, type FileFields, splitDataUrl } from '../../protocol/file-part.js';
import { formatBytes } from '../kit/sizes.js';

/** Media types read as text, besides text/*. */
const TEXT_TYPES = new Set([
  'application/json',
  'application/xml',
  'application/x-yaml',
  'application/yaml',
  'application/javascript',
  'application/x-sh',
  'application/sql',
]);

export function isTextType(mediaType: string): boolean {
  return mediaType.startsWith('text/') || TEXT_TYPES.has(mediaType);
}

const REASONS: Readonly<Record<UnreadableReason, string>> = {
  'too-many': `the request holds more PDFs than the proxy reads in one (${REQUEST_MAX_PDFS}); this one is past them`,
  encrypted: 'it is encrypted',
  'no-text': 'it holds no text layer (scanned pages or images only)',
  malformed: 'it is not a readable PDF',
  'too-large': 'it is larger than the proxy reads',
  timeout: 'reading it took longer than the proxy allows',
  memory: 'reading it needed more memory than the proxy allows',
  busy: 'the proxy had too many documents waiting to be read; it reads this one when it comes again',
  'unsupported-type': 'the proxy reads the text of PDF and plain-text documents only',
};

export interface Rendered {
  text: string;
  /** false: a note saying why the document was not read. */
  read: boolean;
  /** A read document's name and what it is (`r.pdf (PDF, 2 pages, 1.2 KB)`), for a note in its place. */
  label?: string;
}

/** One line: the document was not read, and why. Square brackets never nest, so it stays one line. */
function note(label: string, why: string): Rendered {
  return { text: `[document not read: ${label}: ${why}]`, read: false };
}

/** A name for the wrapper and notes: the file name, else the media type; one line, bounded. */
function nameOf(file: FileFields, mediaType: string | undefined): string {
  const raw = file.filename ?? mediaType ?? 'document';
  return raw.replace(/[\r\n[\]]+/g, ' ').slice(0, 200);
}

function wrap(name: string, what: string, body: string, tail: string[]): Rendered {
  const lines = [
    `[document: ${name} (${what}); text extracted by the proxy]`,
    body,
    ...tail,
    `[end of document: ${name}]`,
  ];
  return { text: lines.join('\n'), read: true, label: `${name} (${what})` };
}

/** Decodes at most what DOCUMENT_MAX_CHARS needs (a UTF-8 character is at most 4 bytes). */
function decodeText(base64: string): { text: string; truncated: boolean } {
  const need = Math.ceil((DOCUMENT_MAX_CHARS * 4) / 3) * 4;
  const head = base64.length > need ? base64.slice(0, need) : base64;
  const full = Buffer.from(head, 'base64').toString('utf8');
  if (full.length <= DOCUMENT_MAX_CHARS && head === base64) return { text: full, truncated: false };
  return { text: full.slice(0, DOCUMENT_MAX_CHARS), truncated: true };
}

function pdfText(name: string, size: string, doc: Extract<DocumentText, { kind: 'text' }>): Rendered {
  const body = doc.text.map((t, i) => `--- page ${i + 1} ---\n${t}`).join('\n');
  const tail: string[] = [];
  if (doc.truncated) tail.push(`[text cut at ${DOCUMENT_MAX_CHARS} characters by the proxy]`);
  if (doc.text.length < doc.pages)
    tail.push(
      `[pages ${doc.text.length + 1}-${doc.pages} not read: the proxy reads the first ${doc.text.length} pages]`,
    );
  const pages = `${doc.pages} page${doc.pages === 1 ? '' : 's'}`;
  return wrap(name, `PDF, ${pages}, ${size}`, body, tail);
}

/** The note of a document whose text would take the request past REQUEST_DOCUMENTS_MAX_CHARS. */
function overBudget(label: string): Rendered {
  return note(
    label,
    `the documents before it in this request already hold what the proxy adds to one prompt (${REQUEST_DOCUMENTS_MAX_CHARS} characters)`,
  );
}

/**
 * The note of a document whose `file_data` is no base64 data URL: a data URL of another encoding,
 * or bare base64 that neither its first bytes nor its file name typed (protocol/file-part.ts
 * fileDataUrl: a PDF's, or plain text's): said as such, not as a data URL it never claimed to be.
 */
function undataed(file: FileFields, fileData: string): Rendered {
  const name = nameOf(file, undefined);
  if (fileData.startsWith('data:'))
    return note(name, 'its file_data is a data URL that is not base64 (the proxy reads base64 data URLs)');
  return note(
    `${name} (${formatBytes(base64Size(fileData))})`,
    `its file_data is bare base64 with no media type, and neither its first bytes (a PDF's %PDF-) nor its file name (.pdf, .txt, .md, .csv, .json) say it is a PDF or plain text, the only documents the proxy reads`,
  );
}

/**
 * The text a chat `file` part becomes. `lookup` holds the PDFs the server extracted; `room`: the
 * characters of text the request's documents may still add (REQUEST_DOCUMENTS_MAX_CHARS less
 * what the ones before took), checked before any text is decoded or joined.
 */
export function renderDocument(
  file: FileFields,
  lookup: DocumentLookup | undefined,
  room = Number.POSITIVE_INFINITY,
): Rendered {
  if (file.file_data === undefined || file.file_data === '') {
    const name = nameOf(file, undefined);
    if (file.file_url !== undefined) return note(name, 'it is a URL, which the proxy does not fetch');
    if (file.file_id !== undefined) return note(name, 'it is a file_id, and the proxy has no file store');
    return note(name, 'it has no content');
  }
  const data = splitDataUrl(file.file_data);
  if (!data) return undataed(file, file.file_data);
  const name = nameOf(file, data.mediaType);
  const size = formatBytes(base64Size(data.base64));
  const label = `${name} (${data.mediaType}, ${size})`;
  if (isTextType(data.mediaType)) {
    // At most one character per byte: a bound known before decoding.
    if (Math.min(base64Size(data.base64), DOCUMENT_MAX_CHARS) > room) return overBudget(label);
    const { text, truncated } = decodeText(data.base64);
    const tail = truncated ? [`[text cut at ${DOCUMENT_MAX_CHARS} characters by the proxy]`] : [];
    return wrap(name, `${data.mediaType}, ${size}`, text, tail);
  }
  if (!isPdfType(data.mediaType)) return note(label, `${REASONS['unsupported-type']}, not ${data.mediaType}`);
  const doc = lookup?.(file.file_data);
  if (!doc) return note(label, 'it was not extracted');
  if (doc.kind === 'unreadable') return note(label, REASONS[doc.reason]);
  if (doc.text.every((t) => t.trim() === '')) return note(label, REASONS['no-text']);
  if (doc.text.reduce((n, t) => n + t.length, 0) > room) return overBudget(label);
  return pdfText(name, size, doc);
}
