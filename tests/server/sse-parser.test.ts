/**
 * Hardening (issue 8): the SSE framer runs on the shared event loop for every upstream read.
 * It used to rescan its buffer for each line (16k events in one read: 2.1 s; one 4 MB event in
 * 1 KiB reads: 6.5 s) and to buffer a line with no newline without bound.
 */
import { describe, expect, it } from 'vitest';
import { processCpuMs } from '../hardening/loop-probe.js';
import { MAX_SSE_EVENT_SIZE, SseEventTooLargeError, SseParser } from '../../server/sse.js';

const encoder = new TextEncoder();

function chunks(bytes: Uint8Array, size: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.subarray(i, i + size));
  return out;
}

function elapsedMs(fn: () => void): number {
  const start = processCpuMs();
  fn();
  return processCpuMs() - start;
}

describe('SseParser stays linear', () => {
  it('32k events in one read: well under a second (quadratic before: 8 s+)', () => {
    const bytes = encoder.encode('data: {"choices":[{"delta":{"content":"hello"}}]}\n\n'.repeat(32_768));
    let events = 0;
    const ms = elapsedMs(() => {
      const p = new SseParser();
      events = p.push(bytes).length + p.finish().length;
    });
    expect(events).toBe(32_768);
    expect(ms).toBeLessThan(1000);
  });

  it('one 4 MB event in 1 KiB reads: well under a second (quadratic before: 6.5 s)', () => {
    const payload = JSON.stringify({ content: 'x'.repeat(4_000_000) });
    const reads = chunks(encoder.encode(`data: ${payload}\r\n\r\n`), 1024);
    const out: string[] = [];
    const ms = elapsedMs(() => {
      const p = new SseParser();
      for (const r of reads) out.push(...p.push(r));
      out.push(...p.finish());
    });
    expect(out).toEqual([payload]);
    expect(ms).toBeLessThan(1000);
  });

  it('a "\\r\\n" split across reads is one line ending, whatever the split', () => {
    const text = 'data: a\r\n\r\ndata: b\rdata: c\r\r\ndata: d\n\n';
    for (let cut = 0; cut <= text.length; cut++) {
      const p = new SseParser();
      const out = [...p.push(text.slice(0, cut)), ...p.push(text.slice(cut)), ...p.finish()];
      expect(out, `cut at ${cut}`).toEqual(['a', 'b\nc', 'd']);
    }
  });
});

describe('SseParser bounds what it holds', () => {
  it('a line with no newline throws once it passes the bound, instead of buffering forever', () => {
    const p = new SseParser({ maxEventSize: 1000 });
    const piece = 'x'.repeat(100);
    p.push('data: ');
    let thrown: unknown;
    try {
      for (let i = 0; i < 100; i++) p.push(piece);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(SseEventTooLargeError);
    expect(thrown).toMatchObject({ code: 'TP_ERR_UPSTREAM_BAD_RESPONSE', status: 502, limit: 1000 });
  });

  it('an event of many small data lines is bounded too', () => {
    const p = new SseParser({ maxEventSize: 1000 });
    expect(() => p.push('data: 0123456789\n'.repeat(200))).toThrow(SseEventTooLargeError);
  });

  it('events under the bound pass, one after another', () => {
    const p = new SseParser({ maxEventSize: 1000 });
    const event = `data: ${'y'.repeat(900)}\n\n`;
    expect(p.push(event.repeat(50))).toHaveLength(50);
  });

  it('the default bound is 16 MiB', () => {
    expect(MAX_SSE_EVENT_SIZE).toBe(16 * 1024 * 1024);
  });
});
