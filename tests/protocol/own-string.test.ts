import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { ownString } from '../../protocol/own-string.js';
import { seededRng } from '../server/test-utils.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

describe('ownString', () => {
  it('keeps nothing of the text it was cut from', () => {
    const heldAfter = (cut: (s: string) => string): number => {
      gc();
      gc();
      const before = process.memoryUsage().heapUsed;
      // Ten 1 MB texts (fresh each time: built, not literals), a 100-character head kept of each.
      const heads = Array.from({ length: 10 }, (_, i) =>
        cut(`${String(i)}${'x'.repeat(1_000_000)}`.slice(0, 100)),
      );
      gc();
      gc();
      expect(heads.every((h) => h.length === 100)).toBe(true);
      return process.memoryUsage().heapUsed - before;
    };
    expect(heldAfter((s) => s)).toBeGreaterThan(5_000_000); // a slice keeps its 1 MB parent
    expect(heldAfter(ownString)).toBeLessThan(500_000);
  });

  it('gives back exactly the characters it was given, lone surrogates and controls included', () => {
    const samples = [
      '',
      'short',
      'data: {"id":"chatcmpl-1","choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":',
      '\u0000\u0001\u001f"\\/\b\f\n\r\t',
      '\ud800 lone high, lone low \udc00, pair \ud83d\ude00, é, 中文, \u2028\u2029',
    ];
    const rng = seededRng(7);
    for (let i = 0; i < 200; i++) {
      let s = '';
      const n = Math.floor(rng() * 40);
      for (let j = 0; j < n; j++) s += String.fromCharCode(Math.floor(rng() * 0x10000));
      samples.push(s);
    }
    for (const s of samples) {
      const own = ownString(`${s}${s}`.slice(0, s.length));
      expect(own).toBe(s);
      expect(own.length).toBe(s.length);
    }
  });
});
