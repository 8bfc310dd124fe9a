import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SseParser } from '../../server/sse.js';

const encoder = new TextEncoder();

function feed(bytes: Uint8Array, cuts: number[]): string[] {
  const p = new SseParser();
  const out: string[] = [];
  let prev = 0;
  for (const cut of [...cuts, bytes.length]) {
    out.push(...p.push(bytes.subarray(prev, cut)));
    prev = cut;
  }
  out.push(...p.finish());
  return out;
}

describe('SseParser', () => {
  it('parses data events, ignores comments and other fields, handles CRLF', () => {
    const text = ': ping\n\ndata: {"a":1}\n\nevent: x\ndata: two\ndata: lines\n\r\ndata: [DONE]\r\n\r\n';
    expect(feed(encoder.encode(text), [])).toEqual(['{"a":1}', 'two\nlines', '[DONE]']);
  });

  it('reads data lines without a space, empty data lines and fields named like data', () => {
    const text = 'data:x\n\ndata:\ndata: \n\ndatum: no\n\ndata:  two spaces\n\n';
    // Every split point: a line read in place and a line joined from pieces read the same.
    for (let cut = 0; cut <= text.length; cut++) {
      expect(feed(encoder.encode(text), [cut])).toEqual(['x', '\n', ' two spaces']);
    }
  });

  it('an unterminated last event still counts at end of stream', () => {
    expect(feed(encoder.encode('data: {"x":1}\n\ndata: tail'), [])).toEqual(['{"x":1}', 'tail']);
  });

  it('any byte-level split gives the same events (multi-byte characters included)', () => {
    const payloads = fc.array(
      fc.oneof(
        fc.string({ unit: 'grapheme', maxLength: 40 }),
        fc.constantFrom('日本語 ✓ 🎉', 'a\\nb', '{"k":"v"}'),
      ),
      { minLength: 1, maxLength: 8 },
    );
    fc.assert(
      fc.property(payloads, fc.boolean(), fc.array(fc.nat(), { maxLength: 20 }), (items, crlf, rawCuts) => {
        const clean = items.map((s) => s.replace(/[\r\n]/g, ' '));
        const nl = crlf ? '\r\n' : '\n';
        const text = clean.map((s) => `data: ${s}${nl}${nl}`).join('');
        const bytes = encoder.encode(text);
        const cuts = [...new Set(rawCuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
        expect(feed(bytes, cuts)).toEqual(clean);
      }),
      { numRuns: 300 },
    );
  });

  it('decodes any bytes split anywhere as a TextDecoder over the whole stream (invalid UTF-8, BOM)', () => {
    const piece = fc.oneof(
      fc.uint8Array({ maxLength: 12 }),
      fc.constantFrom(
        encoder.encode('data: é😀日\n\n'),
        Uint8Array.of(0xef, 0xbb, 0xbf),
        Uint8Array.of(0xf0, 0x9f, 0x98),
        Uint8Array.of(0xe0, 0x80, 0x80),
        Uint8Array.of(0xed, 0xa0, 0x80),
        Uint8Array.of(0xc3),
        Uint8Array.of(0x80, 0x80, 0x80, 0x80),
        encoder.encode('\n\ndata: '),
      ),
    );
    fc.assert(
      fc.property(
        fc.array(piece, { maxLength: 12 }),
        fc.array(fc.nat(), { maxLength: 12 }),
        (pieces, rawCuts) => {
          const bytes = Buffer.concat([encoder.encode('data: '), ...pieces, encoder.encode('\n\n')]);
          const cuts = [...new Set(rawCuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
          const reference = new SseParser();
          const expected = [...reference.push(new TextDecoder('utf-8').decode(bytes)), ...reference.finish()];
          expect(feed(bytes, cuts)).toEqual(expected);
        },
      ),
      { numRuns: 500 },
    );
  });
});
