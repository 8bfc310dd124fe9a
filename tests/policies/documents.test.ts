import { describe, expect, it } from 'vitest';
import {
  DOCUMENT_MAX_CHARS,
  type DocumentText,
  REQUEST_DOCUMENTS_MAX_CHARS,
} from '../../protocol/document-text.js';
import { documentsPolicy } from '../../policies/documents/index.js';
import { PROMPT_OVER_WINDOW } from '../../policies/types.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';
import { ctxWith } from './helpers.js';

const pdfUrl = 'data:application/pdf;base64,JVBERi0xLjQK';
const run = (content: unknown[], docs?: Record<string, DocumentText>) =>
  documentsPolicy.onRequest!(
    { model: 'm', messages: [{ role: 'user', content: content as never }] },
    ctxWith(docs ? { documents: (d) => docs[d] } : {}),
    { model: 'm', messages: [] },
  );
const text = (d: ReturnType<typeof run>) => (d.action === 'continue' ? d.request.messages[0]!.content : null);

describe('documents', () => {
  it('writes a PDF as its pages in a wrapper naming it and saying the proxy extracted it', () => {
    const d = run([{ type: 'file', file: { filename: 'r.pdf', file_data: pdfUrl } }], {
      [pdfUrl]: { kind: 'text', pages: 3, text: ['one 4711', 'two'], truncated: false },
    });
    expect(text(d)).toBe(
      '[document: r.pdf (PDF, 3 pages, 9 B); text extracted by the proxy]\n--- page 1 ---\none 4711\n--- page 2 ---\ntwo\n[pages 3-3 not read: the proxy reads the first 2 pages]\n[end of document: r.pdf]',
    );
    expect(d.effects).toEqual([{ policy: 'documents', kind: 'document-text', count: 1 }]);
  });

  it('passes plain text as text, and gives one-line notes for what it cannot read', () => {
    const plain = `data:text/plain;base64,${Buffer.from('hello').toString('base64')}`;
    expect(text(run([{ type: 'file', file: { filename: 'a.txt', file_data: plain } }]))).toContain(
      '\nhello\n',
    );
    const notes = run(
      [
        { type: 'file', file: { file_id: 'file_1', filename: 'x.pdf' } },
        { type: 'file', file: { file_url: 'https://example.com/a.pdf' } },
        { type: 'file', file: { file_data: pdfUrl } },
        { type: 'file', file: { file_data: 'data:application/zip;base64,AAAA' } },
      ],
      { [pdfUrl]: { kind: 'unreadable', reason: 'encrypted' } },
    );
    const out = String(text(notes)).split('\n\n');
    expect(out).toEqual([
      '[document not read: x.pdf: it is a file_id, and the proxy has no file store]',
      '[document not read: document: it is a URL, which the proxy does not fetch]',
      '[document not read: application/pdf (application/pdf, 9 B): it is encrypted]',
      '[document not read: application/zip (application/zip, 3 B): the proxy reads the text of PDF and plain-text documents only, not application/zip]',
    ]);
    expect(notes.effects).toEqual([{ policy: 'documents', kind: 'document-note', count: 4 }]);
  });

  it('cuts a document a known window cannot hold to its head and tail, a quarter of the window, the same every time', () => {
    const pages = Array.from({ length: 40 }, (_, p) => `page ${p}\n${'words of the report\n'.repeat(40)}`);
    const docs: Record<string, DocumentText> = {
      [pdfUrl]: { kind: 'text', pages: 40, text: pages, truncated: false },
    };
    const req = {
      model: 'm',
      messages: [
        {
          role: 'user',
          content: [{ type: 'file', file: { filename: 'a.pdf', file_data: pdfUrl } }] as never,
        },
      ],
    };
    const cut = (window: number) =>
      documentsPolicy.onRequest!(req, ctxWith({ documents: (d) => docs[d] }, { contextWindow: window }), req);
    const small = cut(2048);
    const out = String(small.action === 'continue' && small.request.messages[0]!.content);
    expect(
      out.startsWith('[document: a.pdf (PDF, 40 pages, 9 B); text extracted by the proxy]\n--- page 1 ---'),
    ).toBe(true);
    expect(out.endsWith('[end of document: a.pdf]')).toBe(true);
    expect(out).toMatch(
      /\[\.\.\. toolproof left out \d+ of this document's \d+ characters of text \(\d+ lines\) to fit the model's context window; send the pages needed on their own to see them \.\.\.\]/,
    );
    // a quarter of 2,048 tokens at 3 characters a token, and the marker
    expect(out.length).toBeLessThan(512 * 3 + 300);
    expect(small.effects).toEqual([{ policy: 'documents', kind: 'document-cut', count: 1 }]);
    expect(JSON.stringify(cut(2048))).toBe(JSON.stringify(small));
    // a window that holds it, or none known: whole
    for (const window of [0, 32768])
      expect(cut(window).effects).toEqual([{ policy: 'documents', kind: 'document-text', count: 1 }]);
  });

  it('leaves a request without documents untouched (same object)', () => {
    const req = { model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }] };
    const d = documentsPolicy.onRequest!(req, ctxWith(), req);
    expect(d.action === 'continue' && d.request).toBe(req);
  });

  it("bounds the text one request's documents add: past it each document is a note, in order", () => {
    // One PDF whose text is a whole cap's worth (a 4 KB PDF of compressed text can be), sent 40
    // times: 8M characters of prompt before (1,000 copies of a 5.7 MB body sent 200 MB upstream).
    const page = 'A'.repeat(DOCUMENT_MAX_CHARS);
    const copies = Array.from({ length: 40 }, () => ({ type: 'file', file: { file_data: pdfUrl } }));
    const d = run(copies, { [pdfUrl]: { kind: 'text', pages: 1, text: [page], truncated: false } });
    const parts = String(text(d)).split('\n\n');
    const read = parts.filter((p) => p.startsWith('[document: '));
    expect(read.length).toBe(9); // 10 at the cap, less the wrappers' own characters
    expect(parts.slice(0, 9)).toEqual(read); // the first ones
    expect(read.join('').length).toBeLessThanOrEqual(REQUEST_DOCUMENTS_MAX_CHARS);
    expect(parts[9]).toBe(
      `[document not read: application/pdf (application/pdf, 9 B): the documents before it in this request already hold what the proxy adds to one prompt (${REQUEST_DOCUMENTS_MAX_CHARS} characters)]`,
    );
    expect(parts).toHaveLength(40);
    expect(d.effects).toEqual([
      { policy: 'documents', kind: 'document-text', count: 9 },
      { policy: 'documents', kind: 'document-note', count: 31 },
    ]);
    // text documents count too, bounded before they are decoded
    const plain = `data:text/plain;base64,${Buffer.from(page).toString('base64')}`;
    const mixed = run(
      Array.from({ length: 12 }, () => ({ type: 'file', file: { file_data: plain } })),
      {},
    );
    expect(String(text(mixed)).match(/\[document: /g)).toHaveLength(9);
  });
});

describe('documents that each fit and together overflow a known window', () => {
  const WINDOW = 8192;
  /** 12 pages, 8,329 characters: ~2,800 tokens estimated, the window holds one. */
  const report = (r: number): DocumentText => ({
    kind: 'text',
    pages: 12,
    text: Array.from({ length: 12 }, (_, p) =>
      Array.from({ length: 25 }, (_, l) => `report ${r} page ${p} line ${l}: up`).join('\n'),
    ),
    truncated: false,
  });
  const url = (r: number) => `data:application/pdf;base64,JVBERi0xLjQK${'A'.repeat(4 * (r + 1))}`;
  const docs: Record<string, DocumentText> = Object.fromEntries(
    Array.from({ length: 12 }, (_, r) => [url(r), report(r)]),
  );
  const user = (rs: number[]) => ({
    role: 'user',
    content: [
      ...rs.map((r) => ({ type: 'file', file: { filename: `r${r}.pdf`, file_data: url(r) } })),
      { type: 'text', text: 'Compare them.' },
    ] as never,
  });
  const ctx = (refused: boolean) =>
    ctxWith(
      {
        documents: (d) => docs[d],
        ...(refused
          ? { refused: { now: new Set([PROMPT_OVER_WINDOW]), remembered: new Set<string>() } }
          : {}),
      },
      { contextWindow: WINDOW },
    );
  const send = (messages: unknown[], refused: boolean) => {
    const req = { model: 'm', messages } as never;
    const d = documentsPolicy.onRequest!(req, ctx(refused), req);
    if (d.action !== 'continue') throw new Error('continue expected');
    return d;
  };

  it('over the window, a document it could not read beside one it read is still its note', () => {
    // Before, the second pass rewrote the client's parts and returned the unread one as it came:
    // a `file` part upstream, which a text-only backend refuses on every later turn too.
    const mixed = {
      role: 'user',
      content: [
        { type: 'file', file: { filename: 'r0.pdf', file_data: url(0) } },
        { type: 'file', file: { file_id: 'file-xyz' } },
        { type: 'file', file: { file_url: 'https://example.com/c.pdf' } },
        { type: 'text', text: 'Compare them.' },
      ] as never,
    };
    for (const refused of [false, true]) {
      const d = send([mixed, { role: 'assistant', content: 'ok' }, user([1, 2, 3])], refused);
      expect(JSON.stringify(d.request.messages)).not.toContain('"type":"file"');
    }
  });

  it("once the prompt is known over the window, each is cut to its message's share; the same bytes on later turns", () => {
    const turn1 = [user([0, 1, 2])];
    // Not known over (~25,000 bytes, under 6 a token of the window): whole, to let the backend judge.
    expect(send(turn1, false).effects).toEqual([{ policy: 'documents', kind: 'document-text', count: 3 }]);
    // Refused for its length: each cut to a third of a quarter of the window, with the note.
    const cut = send(turn1, true);
    expect(cut.effects).toEqual([{ policy: 'documents', kind: 'document-cut', count: 3 }]);
    const parts = String(cut.request.messages[0]!.content).split('\n\n');
    expect(parts).toHaveLength(4);
    for (const [r, part] of parts.slice(0, 3).entries()) {
      expect(part.startsWith(`[document: r${r}.pdf (PDF, 12 pages`)).toBe(true);
      expect(part).toContain("of this document's");
      expect(part.endsWith(`[end of document: r${r}.pdf]`)).toBe(true);
      expect(part.length).toBeLessThan(Math.floor(WINDOW / 4 / 3) * 3 + 300);
    }
    // Later turns: the first message the same bytes, refused again or not yet.
    const turn3 = [
      ...turn1,
      { role: 'assistant', content: 'ok' },
      user([3]),
      { role: 'assistant', content: 'ok' },
    ];
    expect(send(turn3, true).request.messages[0]).toEqual(cut.request.messages[0]);
    // Past 6 bytes a token of the window (~50,000 bytes), over whatever the tokenizer: cut ahead,
    // the same bytes as after a refusal.
    const far = [user([0, 1, 2]), { role: 'assistant', content: 'ok' }, user([4, 5, 6])];
    const ahead = send(far, false);
    // all six in older messages: four keep a sixty-fourth of the window each, and the last two,
    // past the sixteenth the older ones share, are notes
    expect(ahead.effects).toEqual([
      { policy: 'documents', kind: 'document-cut', count: 4 },
      { policy: 'documents', kind: 'document-note', count: 2 },
    ]);
    expect(String(ahead.request.messages[2]!.content)).toContain(
      "[document left out: r5.pdf (PDF, 12 pages, 27 B); to fit the model's context window]",
    );
    expect(ahead.request.messages).toEqual(send(far, true).request.messages);
    expect(ahead.request.messages[0]).toEqual(cut.request.messages[0]);
  });

  it("costs about linear time over one message's documents (x4 input, at most ~x4)", () => {
    // n one-byte text documents among 32n short text parts, in one message of a prompt over an
    // 8k window: each held to the message's share. The share was counted again for each document
    // (its message's parts read once per document): 20,000 such documents took 1.3 s of CPU.
    const dot = { type: 'text', text: '.' };
    const make = (n: number) =>
      Array.from({ length: 33 * n }, (_, i) =>
        i % 33 === 0 ? { type: 'file', file: { file_data: 'data:text/plain;base64,QQ==' } } : dot,
      );
    const one = (content: unknown[]) =>
      documentsPolicy.onRequest!(
        { model: 'm', messages: [{ role: 'user', content: content as never }] },
        ctxWith({}, { contextWindow: 8192 }),
        { model: 'm', messages: [] },
      );
    const s = measureScaling(make, one, { from: 1024, max: 4096 });
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
    // Held to a share smaller than the cut's own marker, a short document stays whole: cut, each
    // of them was ~2.5x as long as it came.
    const out = one(make(1024));
    expect(out.effects).toEqual([{ policy: 'documents', kind: 'document-text', count: 1024 }]);
  });

  it("the older messages' documents are bounded together, whatever their count, the same bytes each turn", () => {
    // a report a message, an answer after each: at a sixty-fourth of the window each, 64 or more
    // older ones were past the window by themselves
    const session = (n: number) =>
      Array.from({ length: n }, (_, i) => [user([i % 12]), { role: 'assistant', content: `ok ${i}` }]).flat();
    const documentsText = (messages: unknown[]) =>
      (send(messages, false).request.messages as Array<{ role: string; content: unknown }>)
        .filter((m) => m.role === 'user')
        .reduce((sum, m) => sum + String(m.content).length, 0);
    const at100 = documentsText(session(100));
    const at400 = documentsText(session(400));
    // four times the messages: the notes of the left-out ones grow (a line each), the text does not.
    // Past the request's documents cap (REQUEST_DOCUMENTS_MAX_CHARS) a document is that cap's note,
    // a longer line (before, it went upstream as its file part, counted here as a few characters).
    const noteLength = 160;
    expect(at400 - at100).toBeLessThan(300 * noteLength);
    expect(at100).toBeLessThan((WINDOW / 16) * 3 * 2 + 100 * noteLength + 30_000);
    // the next turn (within the same quarter window of growth): each earlier message the same bytes
    const t1 = send(session(100), false).request.messages;
    const t2 = send([...session(100), { role: 'user', content: 'go on' }], false).request.messages;
    expect(t2.slice(0, t1.length)).toEqual(t1);
    // the turn that moves the boundary a step: the messages already older stay the same bytes
    const grown = [...session(100), user([3]), { role: 'assistant', content: 'ok' }, user([4])];
    const t3 = send(grown, false).request.messages as Array<{ content: unknown }>;
    const older =
      (t1 as Array<{ content: unknown }>).findLastIndex((m) =>
        String(m.content).includes('[document left out:'),
      ) + 1;
    expect(older).toBeGreaterThan(100);
    expect(t3.slice(0, older)).toEqual(t1.slice(0, older));
  });

  it('costs about linear time and memory over the messages (x4 input, at most ~x4)', () => {
    // n characters of documents: one report a message, before a refusal (the prompt's bytes
    // counted) and after one (every document held to its share).
    const make = (n: number) =>
      Array.from({ length: Math.max(1, Math.round(n / 12_000)) }, (_, i) => user([i % 12]));
    const both = (messages: unknown[]) => [send(messages, false), send(messages, true)];
    const s = measureScaling(make, both, { from: 24_000, max: 1 << 21 });
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});
