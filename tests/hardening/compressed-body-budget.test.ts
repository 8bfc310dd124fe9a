/**
 * The x1 vs x4 budget of a compressed request body (server/content-encoding.ts), which the surface
 * tables could not measure: its work is asynchronous, in zlib's thread pool
 * (`measureScalingAsync`, tests/support/cost-scaling.ts: the process's CPU, every thread's).
 * Each coding toolproof decodes, a JSON body of `size` lines compressed, decoded whole at 1x and
 * 4x: linear. A bomb (`size` x 64 KiB of zeros) costs what the limit lets through at any size.
 */
import { Readable } from 'node:stream';
import * as zlib from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { decodedBody } from '../../server/content-encoding.js';
import { measureScalingAsync, prng, withinBudget } from '../support/cost-scaling.js';

const LIMIT = 64 * 1024 * 1024;

const bodies = new Map<number, string>();

/**
 * `size` JSON lines of words drawn from a fixed seed: compressible as a real body, not trivially
 * (built once a size: each coding's row reads the same ones).
 */
function body(size: number): string {
  const known = bodies.get(size);
  if (known !== undefined) return known;
  const next = prng(size);
  const words = ['get_weather', 'city', 'Paris', '"arguments"', '{"type":"string"}', 'tool', 'user', '42'];
  const lines: string[] = [];
  for (let i = 0; i < size; i++) {
    let line = '';
    for (let w = 0; w < 12; w++)
      line += `${words[Math.floor(next() * words.length)]}${Math.floor(next() * 1e6)} `;
    lines.push(JSON.stringify({ role: 'user', content: line }));
  }
  const text = `{"messages":[${lines.join(',')}]}`;
  bodies.set(size, text);
  return text;
}

const zstdCompress = (zlib as unknown as { zstdCompressSync?: (b: string | Buffer) => Buffer })
  .zstdCompressSync;

/**
 * The fastest level of each coding: the rows time the decoding, and a body is built at every size
 * of the calibration and once at 4x. At gzip's default level 6 compressing a body cost ~9x its
 * decoding (1.7 MB: ~50 ms against ~6), at level 1 ~2.3x (~13 ms); brotli at quality 1 ~9 ms,
 * at 4 ~32-40. The stream is as real (LZ77 matches, Huffman-coded blocks), a little larger.
 */
const gzip = (b: string | Buffer) => zlib.gzipSync(b, { level: 1 });

const CODINGS: Array<[string, string, (b: string | Buffer) => Buffer]> = [
  ['gzip', 'gzip', gzip],
  ['deflate (zlib)', 'deflate', (b) => zlib.deflateSync(b, { level: 1 })],
  ['deflate (raw)', 'deflate', (b) => zlib.deflateRawSync(b, { level: 1 })],
  ['gzip (transfer coding)', 'gzip, chunked', gzip],
  ['br', 'br', (b) => zlib.brotliCompressSync(b, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 1 } })],
  ...(zstdCompress
    ? [['zstd', 'zstd', zstdCompress] as [string, string, (b: string | Buffer) => Buffer]]
    : []),
];

const packs = new Map<(b: string | Buffer) => Buffer, Map<number, Buffer>>();

/** `body(size)` packed (once a coding and size: gzip's two rows read the same ones). */
function packed(pack: (b: string | Buffer) => Buffer, size: number): Buffer {
  let sizes = packs.get(pack);
  if (!sizes) packs.set(pack, (sizes = new Map()));
  let out = sizes.get(size);
  if (!out) sizes.set(size, (out = pack(body(size))));
  return out;
}

// A worker runs the next files in the same heap (vitest.config.ts isolate: false): the bodies
// (tens of MB at 4x) are not kept for them.
afterAll(() => {
  bodies.clear();
  packs.clear();
});

/**
 * Decodes `encoded` as the preParsing hook does and reads it to its end (or its error). A coding
 * ending in `chunked` is a transfer coding (`gzip, chunked`), else a content coding.
 */
async function decode(encoding: string, encoded: Buffer, limit = LIMIT): Promise<number> {
  const headers: Record<string, string> = encoding.endsWith('chunked')
    ? { 'transfer-encoding': encoding }
    : { 'content-encoding': encoding, 'content-length': String(encoded.length) };
  const out = await decodedBody(headers, Readable.from([encoded]), limit);
  if (!(out instanceof Readable)) throw out;
  let n = 0;
  try {
    for await (const chunk of out) n += (chunk as Buffer).length;
  } catch (err) {
    if ((err as { code?: string }).code !== 'TP_ERR_BODY_TOO_LARGE') throw err;
  }
  return n;
}

describe('a compressed request body costs about 4x at 4x its size', () => {
  it('the async measure flags quadratic work', async () => {
    const quadratic = async (n: number) => {
      let h = 0;
      for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) h = (h * 31 + j) | 0;
      return h;
    };
    const s = await measureScalingAsync((n) => n, quadratic, { from: 64, max: 1024 });
    expect(withinBudget(s, 5).time, JSON.stringify(s)).toBe(false);
  }, 60_000);

  it.each(CODINGS)(
    '%s',
    async (_name, encoding, pack) => {
      const s = await measureScalingAsync(
        (size) => packed(pack, size),
        (encoded) => decode(encoding, encoded),
        { from: 256, max: 1 << 15 },
      );
      expect(withinBudget(s, 5).time, JSON.stringify(s)).toBe(true);
    },
    60_000,
  );

  // zstd where node:zlib has it (Node 22.15+): on Node 20 it is the 415, no decoder runs.
  it.each(CODINGS.filter(([name]) => name === 'gzip' || name === 'zstd'))(
    'a %s bomb is cut at the limit whatever its size (1 MiB limit, 64 KiB of zeros a unit)',
    async (_name, encoding, pack) => {
      const bomb = (size: number) => pack(Buffer.alloc(size * 64 * 1024));
      let out = 0;
      const s = await measureScalingAsync(
        bomb,
        async (encoded) => {
          out = await decode(encoding, encoded, 1024 * 1024);
        },
        { from: 32, max: 32, targetMs: 1 },
      );
      expect(out).toBeLessThanOrEqual(1024 * 1024);
      expect(withinBudget(s, 5).time, JSON.stringify(s)).toBe(true);
    },
    60_000,
  );
});
