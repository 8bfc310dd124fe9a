/**
 * SseDoneScan: where a stream relayed as bytes ends (just past its [DONE] event), wherever the
 * reads split it, agreeing with SseParser on which event is [DONE]; and x1 vs x4 in cost.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SseParser } from '../../server/sse.js';
import { SseDoneScan } from '../../server/sse-done.js';
import { budget, pick } from '../hardening/surface-budget.js';

/** The bytes a client gets: the reads up to the cut. */
function relayed(stream: string, cuts: number[]): string {
  const bytes = Buffer.from(stream, 'latin1');
  const scan = new SseDoneScan();
  let out = '';
  let from = 0;
  for (const to of [...cuts, bytes.length]) {
    const read = bytes.subarray(from, to);
    from = to;
    const end = scan.push(read);
    out += read.subarray(0, end < 0 ? read.length : end).toString('latin1');
    if (scan.done) break;
  }
  return out;
}

/**
 * The reference: the shortest prefix on which SseParser has read a [DONE] payload. A CR ending
 * its blank line takes the LF after it along, unless a read ends between them (the cut is not
 * held back waiting for a byte that may never come).
 */
function reference(stream: string, cuts: number[] = []): string {
  const parser = new SseParser();
  for (let i = 0; i < stream.length; i++) {
    if (parser.push(stream[i]!).includes('[DONE]')) {
      const lf = stream[i] === '\r' && stream[i + 1] === '\n' && !cuts.includes(i + 1);
      return stream.slice(0, lf ? i + 2 : i + 1);
    }
  }
  return stream;
}

describe('SseDoneScan', () => {
  it.each([
    ['LF', 'data: {"a":1}\n\ndata: [DONE]\n\ndata: MORE\n\n', 'data: {"a":1}\n\ndata: [DONE]\n\n'],
    ['CRLF', 'data: 1\r\n\r\ndata: [DONE]\r\n\r\ndata: MORE\r\n\r\n', 'data: 1\r\n\r\ndata: [DONE]\r\n\r\n'],
    ['CR', 'data: [DONE]\r\rMORE', 'data: [DONE]\r\r'],
    ['no space', 'data:[DONE]\n\nMORE', 'data:[DONE]\n\n'],
    [
      'comments and fields between',
      ': ping\nevent: x\ndata: [DONE]\n: p\n\nMORE',
      ': ping\nevent: x\ndata: [DONE]\n: p\n\n',
    ],
  ])('%s: the [DONE] event ends the bytes', (_name, stream, want) => {
    expect(relayed(stream, [])).toBe(want);
    for (let i = 1; i < stream.length; i++) expect(relayed(stream, [i])).toBe(reference(stream, [i]));
    expect(reference(stream)).toBe(want);
  });

  it.each([
    ['two spaces', 'data:  [DONE]\n\nMORE'],
    ['a second data line', 'data: [DONE]\ndata: x\n\nMORE'],
    ['a data line before', 'data: x\ndata: [DONE]\n\nMORE'],
    ['not a data line', 'event: [DONE]\n\nMORE'],
    ['quoted in a payload', 'data: {"t":"data: [DONE]\\n\\n"}\n\nMORE'],
    ['a longer line', 'data: [DONE] \n\nMORE'],
    ['no blank line yet', 'data: [DONE]\nMORE'],
  ])('%s: not the end', (_name, stream) => {
    expect(relayed(stream, [])).toBe(stream);
  });

  it('agrees with SseParser for any stream, split anywhere', () => {
    const units = ['data: ', 'data:', '[DONE]', 'x', '{"a":1}', '\n', '\r', '\r\n', ': c', 'event: e', ' '];
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...units), { maxLength: 40 }),
        fc.array(fc.nat(), { maxLength: 6 }),
        (parts, rawCuts) => {
          const stream = parts.join('');
          const cuts = [...new Set(rawCuts.map((c) => c % (stream.length + 1)))].sort((a, b) => a - b);
          expect(relayed(stream, cuts)).toBe(reference(stream, cuts));
        },
      ),
      { numRuns: 2000, seed: 7 },
    );
  });
});

describe('SseDoneScan.events', () => {
  it('counts the events SseParser reads a payload of, never a comment or a blank line alone', () => {
    const units = ['data: ', 'data:', 'x', '{"a":1}', '\n', '\r', '\r\n', ': c', 'event: e', ' '];
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...units), { maxLength: 40 }),
        fc.array(fc.nat(), { maxLength: 6 }),
        (parts, rawCuts) => {
          const bytes = Buffer.from(parts.join(''), 'latin1');
          const cuts = [...new Set(rawCuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
          const scan = new SseDoneScan();
          let from = 0;
          for (const to of [...cuts, bytes.length]) {
            scan.push(bytes.subarray(from, to));
            from = to;
          }
          expect(scan.events).toBe(new SseParser().push(bytes).length);
        },
      ),
      { numRuns: 2000, seed: 11 },
    );
    const pings = new SseDoneScan();
    pings.push(Buffer.from(': ping\n\n\n\r\n: ping\n\nevent: e\n\n'));
    expect(pings.events).toBe(0);
  });
});

describe('SseDoneScan: x1 vs x4', () => {
  it('stream length, in reads of any size (long lines, many short ones)', () => {
    const UNITS = [
      'data: {"choices":[]}\n\n',
      'data: ',
      'x'.repeat(200),
      '\n',
      '\r\n',
      ': ping\n',
      'data: [DONE',
      '\n\n',
    ];
    budget(
      'SseDoneScan, stream length',
      (size, rnd) => {
        let s = '';
        while (s.length < size) s += pick(rnd, UNITS);
        const bytes = Buffer.from(s.replaceAll('[DONE]', '[DONE'), 'latin1');
        const reads: Buffer[] = [];
        for (let at = 0; at < bytes.length; ) {
          const n = 1 + Math.floor(rnd() * (rnd() < 0.5 ? 8 : 4096));
          reads.push(bytes.subarray(at, at + n));
          at += n;
        }
        return reads;
      },
      (reads) => {
        const scan = new SseDoneScan();
        for (const r of reads) scan.push(r);
        return scan;
      },
      { from: 16_000, max: 16_000_000 },
      4201,
    );
  }, 120_000);
});
