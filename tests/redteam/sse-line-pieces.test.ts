/**
 * An upstream's event stream, read as it arrives (server/sse.ts SseParser): a line not yet ended
 * is kept as the pieces its reads brought, joined once when it ends, and bounded by the event
 * size (16 MiB). The bound counted a piece at its characters alone, and each piece also costs its
 * slot in the list and its string: a line sent two bytes a read (a TCP segment each, as an
 * upstream can send it) held ~13x its bytes before the bound (2 MB of line: +26 MB of heap; at the
 * 16 MiB bound ~210 MB, for each stream the upstream's slots let open). Now a piece weighs its
 * characters plus LINE_WEIGHT, as a data line does (a line read in pieces of a few KB is
 * unaffected), and what a parser holds stays within a few times its bound.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { SseEventTooLargeError, SseParser } from '../../server/sse.js';

setFlagsFromString('--expose_gc');
const gc = runInNewContext('gc') as () => void;
const heapAfterGc = () => {
  gc();
  return process.memoryUsage().heapUsed;
};

const MAX = 1024 * 1024;

describe('an upstream line read a few bytes at a time', () => {
  it('a parser holds at most a few times its event bound before it refuses the line', () => {
    const parser = new SseParser({ maxEventSize: MAX });
    parser.push('data: ');
    const piece = Buffer.from('xy');
    const before = heapAfterGc();
    let held = 0;
    let refused: unknown;
    try {
      for (let i = 0; i < MAX; i++) {
        parser.push(piece);
        held = i + 1;
      }
    } catch (e) {
      refused = e;
    }
    // Measured with the parser alive and holding its line (the bytes pushed before the throw).
    const kept = heapAfterGc() - before;
    expect(refused).toBeInstanceOf(SseEventTooLargeError);
    expect(parser.pending()).toBe(true);
    expect(kept, `${held} pieces held`).toBeLessThan(4 * MAX);
  });

  it('a line of the same size in reads of a few KB still passes whole', () => {
    const parser = new SseParser({ maxEventSize: MAX });
    const line = `data: ${'x'.repeat(MAX - 64 * 1024)}`;
    const out: string[] = [];
    for (let i = 0; i < line.length; i += 4096)
      out.push(...parser.push(Buffer.from(line.slice(i, i + 4096))));
    out.push(...parser.push('\n\n'));
    expect(out).toEqual([line.slice(6)]);
  });
});
