/**
 * A reused PDF worker (server/documents/pdf-worker.ts) must read the next key's document as a
 * fresh worker does, whatever the read before it left. pdf.js keeps every name, ref and command
 * its parser meets in module-wide caches, emptied only when a document is destroyed; a document
 * that failed to load was never destroyed, so a malformed PDF of many distinct names left its
 * caches on the worker's heap for the next read. Here two such PDFs on one worker whose heap
 * holds one of them: the second (another key's) read 'memory' where a fresh worker reads it as
 * 'malformed'; at the default 256 MB a 10 MB one kept ~115 MB into the next key's read.
 */
import { describe, expect, it } from 'vitest';
import { createDocumentReader } from '../../server/documents/document-reader.js';
import { namesPdf } from '../support/pdf.js';

const url = (b: Buffer) => `data:application/pdf;base64,${b.toString('base64')}`;
const requestOf = (u: string) => ({
  model: 'm',
  messages: [{ role: 'user' as const, content: [{ type: 'file' as const, file: { file_data: u } }] }],
});

describe('PDF worker reuse: nothing of one read reaches the next', () => {
  it("a malformed PDF's parser caches are gone before another key's read on the same worker", async () => {
    // A heap that holds one document's names with room to spare (~10 MB of 24), not two.
    const limits = { maxPages: 10, maxChars: 10_000, timeoutMs: 60_000, heapMb: 24 };
    const reader = createDocumentReader({ concurrency: 1, limits });
    const attacker = url(namesPdf(80_000, 'a'));
    const victim = url(namesPdf(80_000, 'b'));
    expect((await reader.prepare(requestOf(attacker), undefined, 'attacker'))?.(attacker)).toEqual({
      kind: 'unreadable',
      reason: 'malformed',
    });
    expect((await reader.prepare(requestOf(victim), undefined, 'victim'))?.(victim)).toEqual({
      kind: 'unreadable',
      reason: 'malformed',
    });
    // Both on one worker: a reused one, not a fresh one per read.
    expect(reader.workersStarted).toBe(1);
  }, 60_000);
});
