/**
 * Minimal PDFs written byte by byte for tests (no tool, no library): text pages in Helvetica,
 * an encrypted one, an image-only one, a Flate bomb, many pages. Each is a valid PDF 1.4 file
 * with a correct cross-reference table, except where a test wants it broken.
 */
import { deflateSync } from 'node:zlib';

type Obj = string | Buffer;

function build(objects: Obj[], trailerExtra = ''): Buffer {
  const chunks: Buffer[] = [Buffer.from('%PDF-1.4\n%\xe2\xe3\xcf\xd3\n', 'latin1')];
  let size = chunks[0]!.length;
  const offsets: number[] = [];
  objects.forEach((o, i) => {
    offsets.push(size);
    const body = typeof o === 'string' ? Buffer.from(o, 'latin1') : o;
    const chunk = Buffer.concat([Buffer.from(`${i + 1} 0 obj\n`), body, Buffer.from('\nendobj\n')]);
    chunks.push(chunk);
    size += chunk.length;
  });
  const xref =
    `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n` +
    offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('') +
    `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R ${trailerExtra}>>\nstartxref\n${size}\n%%EOF\n`;
  chunks.push(Buffer.from(xref, 'latin1'));
  return Buffer.concat(chunks);
}

function escapePdf(text: string): string {
  return text.replace(/[()\\]/g, (c) => `\\${c}`);
}

function stream(dict: string, data: Buffer): Buffer {
  return Buffer.concat([
    Buffer.from(`<< ${dict} /Length ${data.length} >>\nstream\n`, 'latin1'),
    data,
    Buffer.from('\nendstream', 'latin1'),
  ]);
}

/** Objects 1 (catalog), 2 (pages), 3 (font), then per page its content and the page. */
function pageObjects(contents: Buffer[], resources = '/Font << /F1 3 0 R >>'): Obj[] {
  const objects: Obj[] = ['', '', '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>'];
  const kids: number[] = [];
  for (const c of contents) {
    objects.push(c);
    const contentId = objects.length;
    objects.push(
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << ${resources} >> /Contents ${contentId} 0 R >>`,
    );
    kids.push(objects.length);
  }
  objects[0] = '<< /Type /Catalog /Pages 2 0 R >>';
  objects[1] = `<< /Type /Pages /Kids [${kids.map((k) => `${k} 0 R`).join(' ')}] /Count ${kids.length} >>`;
  return objects;
}

function textContent(lines: string[], flate = false): Buffer {
  const ops = Buffer.from(
    lines.map((l, i) => `BT /F1 12 Tf 72 ${720 - i * 16} Td (${escapePdf(l)}) Tj ET`).join('\n'),
    'latin1',
  );
  return flate ? stream('/Filter /FlateDecode', deflateSync(ops)) : stream('', ops);
}

/**
 * A PDF whose pages hold these texts (each page's text split into lines on \n); `flate`: each
 * page's content stream Flate-compressed, as most PDF writers leave it.
 */
export function textPdf(pages: string[], { flate = false } = {}): Buffer {
  return build(pageObjects(pages.map((p) => textContent(p.split('\n'), flate))));
}

/** A PDF with `count` pages, page i saying "Page i of count". */
export function manyPagesPdf(count: number): Buffer {
  const pages = Array.from({ length: count }, (_, i) => `Page ${i + 1} of ${count}`);
  return textPdf(pages);
}

/**
 * An encrypted PDF (standard security handler, RC4 40-bit) whose user password is not empty:
 * the O and U entries match no password a reader could try, so it cannot be opened.
 */
export function encryptedPdf(): Buffer {
  const objects = pageObjects([textContent(['secret'])]);
  objects.push(`<< /Filter /Standard /V 1 /R 2 /O <${'ab'.repeat(32)}> /U <${'cd'.repeat(32)}> /P -44 >>`);
  const id = '0123456789abcdef0123456789abcdef';
  return build(objects, `/Encrypt ${objects.length} 0 R /ID [<${id}> <${id}>] `);
}

/** A page that only paints an image (a scanned page): no text layer. */
export function imageOnlyPdf(): Buffer {
  const pixels = Buffer.alloc(8 * 8 * 3, 0x80);
  const objects = pageObjects(
    [stream('', Buffer.from('q 200 0 0 200 72 500 cm /Im1 Do Q', 'latin1'))],
    '/XObject << /Im1 4 0 R >>',
  );
  // The image goes after the page: renumber by appending and pointing /Im1 at it.
  objects.push(
    stream(
      '/Type /XObject /Subtype /Image /Width 8 /Height 8 /ColorSpace /DeviceRGB /BitsPerComponent 8',
      pixels,
    ),
  );
  const imageId = objects.length;
  objects[4] = String(objects[4]).replace('/Im1 4 0 R', `/Im1 ${imageId} 0 R`);
  return build(objects);
}

/**
 * A decompression bomb: one page whose content stream inflates from a few MB to `inflatedMb`
 * megabytes of text-showing operators (deflate compresses the repetition about 1000:1).
 */
export function bombPdf(inflatedMb: number): Buffer {
  // Built once per size and process, a copy handed out: 200 MB deflated at level 9 costs ~1 s of
  // CPU, and nine tests in five files (five in document-reader alone) ask for the same bytes.
  let pdf = bombs.get(inflatedMb);
  if (!pdf) {
    pdf = buildBomb(inflatedMb);
    bombs.set(inflatedMb, pdf);
  }
  return Buffer.from(pdf);
}

/** bombPdf's PDFs by inflated size (a worker runs file after file: vitest.config.ts isolate). */
const bombs = new Map<number, Buffer>();

function buildBomb(inflatedMb: number): Buffer {
  const unit = Buffer.from(
    'BT /F1 12 Tf 72 720 Td (AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA) Tj ET\n',
  );
  // The unit over and over, by doubling what is filled (a copy per unit took ~1 s of CPU for 200 MB).
  const raw = Buffer.alloc(inflatedMb * 1024 * 1024);
  let filled = unit.copy(raw, 0);
  while (filled < raw.length) filled += raw.copy(raw, filled, 0, Math.min(filled, raw.length - filled));
  const packed = deflateSync(raw, { level: 9 });
  return build(pageObjects([stream('/Filter /FlateDecode', packed)]));
}

/**
 * A bomb outside the heap: one page in a TrueType font whose font file is Flate then RunLength
 * encoded, `inflatedGb` GB once decoded (each RunLength pair is 128 bytes; deflate packs the
 * pairs about 1000:1: 2 GB in 33 KB). pdf.js decodes a font file whole into one typed array that
 * doubles as it grows, and an ArrayBuffer's bytes are not on the worker's limited heap.
 */
export function fontBombPdf(inflatedGb: number): Buffer {
  // 2 bytes of RunLength (257 - 0x81 = 128 copies of 'A') per 128 decoded
  const pairs = Buffer.alloc(Math.ceil((inflatedGb * 1024 ** 3) / 64), Buffer.from([0x81, 0x41]));
  const packed = deflateSync(pairs, { level: 9 });
  const objects: Obj[] = pageObjects([textContent(['hello'])]);
  objects[2] =
    '<< /Type /Font /Subtype /TrueType /BaseFont /Bomb /FirstChar 32 /LastChar 32 /Widths [500] /FontDescriptor 6 0 R >>';
  objects.push(
    '<< /Type /FontDescriptor /FontName /Bomb /Flags 32 /FontBBox [0 0 1000 1000] /ItalicAngle 0 /Ascent 800 /Descent -200 /CapHeight 700 /StemV 80 /FontFile2 7 0 R >>',
    stream('/Filter [/FlateDecode /RunLengthDecode]', packed),
  );
  return build(objects);
}

/**
 * A malformed PDF that fills pdf.js's module-wide caches: one object, a dictionary of `count`
 * distinct names (each `/<prefix><n>`), no catalog (its trailer names an object that is not
 * there), so the load fails after the parser met every name.
 */
export function namesPdf(count: number, prefix: string): Buffer {
  const parts = ['%PDF-1.4\n1 0 obj\n<< '];
  for (let i = 0; i < count; i++) parts.push(`/${prefix}${i.toString(36)} 1 `);
  parts.push('>>\nendobj\ntrailer\n<< /Root 9 0 R >>\n%%EOF\n');
  return Buffer.from(parts.join(''), 'latin1');
}
