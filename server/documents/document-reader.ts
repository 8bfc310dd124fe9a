/**
 * The PDFs of a request, read before its request policies run: each chat `file` part holding a
 * PDF data URL is extracted off the event loop (pdf-worker.ts) and its result kept by the
 * content's hash, so later turns of the session, which send the same document again, get the
 * same result without reading it again (the documents policy then writes the same bytes: the
 * prompt's prefix holds). The cache is bounded in entries and in characters held; what it drops
 * is read again when it comes back (same library, same result, except after a timeout).
 */
import { createHash } from 'node:crypto';
import {
  DOCUMENT_MAX_CHARS,
  type DocumentLookup,
  type DocumentText,
  isPdfType,
  REQUEST_MAX_PDFS,
} from '../../protocol/document-text.js';
import { base64Size, fileFields, splitDataUrl } from '../../protocol/file-part.js';
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { extractPdf, type PdfLimits } from './pdf-worker.js';

/** What every PDF of a request past its first REQUEST_MAX_PDFS reads as. */
const TOO_MANY: DocumentText = Object.freeze({ kind: 'unreadable', reason: 'too-many' });

/** A PDF larger than this (decoded) is not read: a note says so. */
export const MAX_PDF_BYTES = 20 * 1024 * 1024;

export const DEFAULT_PDF_LIMITS: PdfLimits = Object.freeze({
  maxPages: 100,
  maxChars: DOCUMENT_MAX_CHARS,
  timeoutMs: 20_000,
  heapMb: 256,
});

export interface DocumentReaderOptions {
  limits?: PdfLimits;
  /** Documents read at once, process-wide (each is a worker thread). */
  concurrency?: number;
  /** Results kept (by content hash). */
  cacheEntries?: number;
  /** Characters of text the cache holds at most, over all entries. */
  cacheChars?: number;
}

export interface DocumentReader {
  /** The lookup for this request's PDFs, once each is read (or known unreadable); undefined when it has none. */
  prepare(request: ChatCompletionRequest): Promise<DocumentLookup | undefined>;
  /** Documents actually read (cache misses), for tests and the bench. */
  readonly reads: number;
}

function textSize(doc: DocumentText): number {
  return doc.kind === 'text' ? doc.text.reduce((n, t) => n + t.length, 0) + 64 : 64;
}

/** Every PDF data URL of the request's messages, once. */
function pdfDataUrls(request: ChatCompletionRequest): string[] {
  const out = new Set<string>();
  if (!Array.isArray(request.messages)) return [];
  for (const m of request.messages) {
    if (!Array.isArray(m?.content)) continue;
    for (const part of m.content) {
      if (part?.type !== 'file') continue;
      const data = fileFields(part)?.file_data;
      const split = data ? splitDataUrl(data) : undefined;
      if (data && split && isPdfType(split.mediaType)) out.add(data);
    }
  }
  return [...out];
}

export function createDocumentReader(options: DocumentReaderOptions = {}): DocumentReader {
  const limits = options.limits ?? DEFAULT_PDF_LIMITS;
  const concurrency = options.concurrency ?? 2;
  const maxEntries = options.cacheEntries ?? 256;
  const maxChars = options.cacheChars ?? 64 * 1024 * 1024;
  // Insertion order is recency: a hit is deleted and set again.
  const cache = new Map<string, DocumentText>();
  let cachedChars = 0;
  const inFlight = new Map<string, Promise<DocumentText>>();
  let running = 0;
  const waiting: Array<() => void> = [];
  let reads = 0;

  const remember = (key: string, doc: DocumentText): void => {
    cache.set(key, doc);
    cachedChars += textSize(doc);
    for (const [k, v] of cache) {
      if (cache.size <= maxEntries && cachedChars <= maxChars) break;
      cache.delete(k);
      cachedChars -= textSize(v);
    }
  };

  const slot = async (): Promise<void> => {
    if (running < concurrency) {
      running++;
      return;
    }
    await new Promise<void>((resolve) => waiting.push(resolve));
  };
  const release = (): void => {
    const next = waiting.shift();
    if (next) next();
    else running--;
  };

  const read = async (dataUrl: string): Promise<DocumentText> => {
    const { base64 } = splitDataUrl(dataUrl)!;
    if (base64Size(base64) > MAX_PDF_BYTES) return { kind: 'unreadable', reason: 'too-large' };
    await slot();
    try {
      reads++;
      const bytes = Buffer.from(base64, 'base64');
      // A view on its own copy of the bytes: the worker gets them by structured clone.
      return await extractPdf(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length), limits);
    } finally {
      release();
    }
  };

  const resolveOne = async (dataUrl: string): Promise<DocumentText> => {
    const key = createHash('sha256').update(dataUrl).digest('hex');
    const hit = cache.get(key);
    if (hit) {
      cache.delete(key);
      cache.set(key, hit);
      return hit;
    }
    let pending = inFlight.get(key);
    if (!pending) {
      pending = read(dataUrl).then((doc) => {
        inFlight.delete(key);
        remember(key, doc);
        return doc;
      });
      inFlight.set(key, pending);
    }
    return pending;
  };

  return {
    get reads() {
      return reads;
    },
    async prepare(request) {
      const urls = pdfDataUrls(request);
      if (urls.length === 0) return undefined;
      // The first REQUEST_MAX_PDFS distinct ones, in the request's order (the same ones on every
      // turn, cached or not); the others are not read at all.
      const read = urls.slice(0, REQUEST_MAX_PDFS);
      const results = await Promise.all(read.map(resolveOne));
      const byUrl = new Map<string, DocumentText>();
      read.forEach((u, i) => {
        byUrl.set(u, results[i]!);
      });
      for (let i = read.length; i < urls.length; i++) byUrl.set(urls[i]!, TOO_MANY);
      return (fileData) => byUrl.get(fileData);
    },
  };
}
