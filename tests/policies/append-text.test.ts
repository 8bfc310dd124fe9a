/**
 * appendText: the same string as `+`, and text grown a token at a time costs about a byte per
 * character of heap instead of a rope node and a small string per token (an open stream's
 * accumulated arguments and content, policies/<name>/stream.ts).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { appendText } from '../../policies/kit/append-text.js';
import { seededRng } from '../server/test-utils.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

describe('appendText', () => {
  it('is `+`, whatever the pieces', () => {
    const rng = seededRng(3);
    for (let run = 0; run < 50; run++) {
      let plain = '';
      let acc = '';
      const n = Math.floor(rng() * 3000);
      for (let i = 0; i < n; i++) {
        const len = Math.floor(rng() * (rng() < 0.05 ? 5000 : 12));
        // the piece's code units in one call (a string grown a character at a time was half
        // the test's CPU)
        const codes: number[] = [];
        for (let j = 0; j < len; j++) codes.push(Math.floor(rng() * 0x10000));
        const piece = String.fromCharCode(...codes);
        plain += piece;
        acc = appendText(acc, piece);
      }
      expect(acc).toBe(plain);
    }
  });

  it('text grown token by token keeps about a byte per character, not a rope', () => {
    const grow = (append: (a: string, b: string) => string) => {
      let s = '';
      for (let i = 0; i < 20_000; i++) s = append(s, `ab${i % 10}de`); // 100,000 characters
      return s;
    };
    const kept = (append: (a: string, b: string) => string): number => {
      gc();
      gc();
      const before = process.memoryUsage().heapUsed;
      const keep = Array.from({ length: 10 }, () => grow(append));
      gc();
      gc();
      const bytes = (process.memoryUsage().heapUsed - before) / keep.length;
      expect(keep[0]!.length).toBe(100_000);
      return bytes;
    };
    const rope = kept((a, b) => a + b);
    const flat = kept(appendText);
    expect(flat).toBeLessThan(300_000);
    expect(rope).toBeGreaterThan(3 * flat);
  });
});
