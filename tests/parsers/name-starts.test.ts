/**
 * The whole-output starts made of declared names (engine/name-starts.ts, issue 27 item 2): the
 * same verdicts as spelling `before + name + after` out for every declared name and comparing
 * each (what the scanner did before), for any names and any growth of the output; and a
 * request's catalogue costs memory once, not per stream (4,096 tools x 4,000-character names x
 * n: 32 ran the process out of heap).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { processCpuMs } from '../hardening/loop-probe.js';
import { type NameFrame, NameStartMatcher, type StartVerdict } from '../../parsers/engine/name-starts.js';
import { createRecoveryStream } from '../../parsers/recover.js';
import type { DeclaredTool } from '../../parsers/types.js';
import { options } from './engine-helpers.js';

const FRAMES: NameFrame[] = [
  { before: '', after: ['(', ' (', '{', ':', ' :'] },
  { before: '<', after: ['>', ' '] },
  { before: '[', after: [']'] },
  { before: '<|t|>', after: [''] },
];

/** What the scanner did before: every start spelled out, each compared. */
function spelled(names: readonly string[], rest: string): StartVerdict {
  let prefix = false;
  for (const f of FRAMES)
    for (const n of names) {
      if (n === '') continue;
      for (const a of f.after) {
        const s = f.before + n + a;
        if (rest.startsWith(s)) return 'yes';
        if (s.startsWith(rest)) prefix = true;
      }
    }
  return prefix ? 'prefix' : 'no';
}

const toolsOf = (names: readonly string[]) =>
  new Map<string, DeclaredTool>(names.map((name) => [name, { name }]));

describe('name starts', () => {
  it('give the verdicts of the spelled-out starts, for any names and any growth', () => {
    const char = fc.constantFrom('a', 'b', 'c', '(', ' ', ':', '<', '>', '[', ']', '|', 't', '{');
    const word = fc.string({ unit: char, minLength: 0, maxLength: 6 });
    fc.assert(
      fc.property(
        fc.array(word, { maxLength: 12 }),
        word,
        word,
        fc.array(fc.nat(3), { maxLength: 12 }),
        (names, head, tail, steps) => {
          // outputs that often begin like a name: a name's start, then anything
          const text = `${names[0] ?? ''}${head}${tail}`.slice(0, 24) || head;
          if (text === '') return;
          const m = new NameStartMatcher(toolsOf(names), FRAMES);
          let len = 0;
          for (const step of [...steps, 24]) {
            len = Math.min(text.length, len + step + 1);
            const rest = text.slice(0, len);
            const want = spelled(names, rest);
            expect(m.verdict(rest)).toBe(want);
            // the scanner asks again only while the answer is 'prefix'
            if (want !== 'prefix' || len === text.length) break;
          }
        },
      ),
      { numRuns: 3000, seed: 27 },
    );
  });

  it('a case-folding frame gives the verdicts of every start spelled out in every ASCII case', () => {
    const FOLD: NameFrame[] = [{ before: '', after: ['('], foldCase: true }];
    const foldedSpelled = (names: readonly string[], rest: string): StartVerdict => {
      const low = rest.replace(/[A-Z]/g, (c) => c.toLowerCase());
      let prefix = false;
      for (const n of names) {
        if (n === '') continue;
        const s = `${n.replace(/[A-Z]/g, (c) => c.toLowerCase())}(`;
        if (low.startsWith(s)) return 'yes';
        if (s.startsWith(low)) prefix = true;
      }
      return prefix ? 'prefix' : 'no';
    };
    const char = fc.constantFrom('a', 'A', 'b', 'B', '_', '(', ' ', 'é', 'É');
    const word = fc.string({ unit: char, minLength: 0, maxLength: 6 });
    fc.assert(
      fc.property(
        fc.array(word, { maxLength: 12 }),
        word,
        fc.array(fc.nat(3), { maxLength: 12 }),
        (names, tail, steps) => {
          // outputs that often begin like a name in another case
          const flip = (w: string) =>
            [...w].map((c, i) => (i % 2 ? c.toUpperCase() : c.toLowerCase())).join('');
          const text = `${flip(names[0] ?? '')}${tail}`.slice(0, 24) || tail;
          if (text === '') return;
          const m = new NameStartMatcher(toolsOf(names), FOLD);
          let len = 0;
          for (const step of [...steps, 24]) {
            len = Math.min(text.length, len + step + 1);
            const rest = text.slice(0, len);
            const want = foldedSpelled(names, rest);
            expect(m.verdict(rest)).toBe(want);
            if (want !== 'prefix' || len === text.length) break;
          }
        },
      ),
      { numRuns: 3000, seed: 28 },
    );
  });

  it('4,096 names sharing a 512-character prefix: an answer of that prefix decides in linear time', () => {
    const prefix = 'a'.repeat(512);
    const names = Array.from({ length: 4096 }, (_, i) => `${prefix}${i}`);
    const m = new NameStartMatcher(toolsOf(names), FRAMES);
    const t0 = processCpuMs();
    let v: StartVerdict = 'prefix';
    for (let i = 1; i <= prefix.length && v === 'prefix'; i++) v = m.verdict(prefix.slice(0, i));
    expect(v).toBe('prefix');
    expect(m.verdict(`${prefix}17(`)).toBe('yes');
    // 512 one-character pushes: ~1 ms; spelled out, 45k starts compared per push (seconds)
    expect(processCpuMs() - t0).toBeLessThan(1000);
  });

  it('32 streams over 1,024 tools with 1,000-character names hold no per-tool strings', () => {
    const names = Array.from({ length: 1024 }, (_, i) => `${'n'.repeat(996)}${String(i).padStart(4, '0')}`);
    const tools = toolsOf(names);
    const streams = [];
    const before = process.memoryUsage().heapUsed;
    for (let k = 0; k < 32; k++) {
      const s = createRecoveryStream(options(tools));
      // a first push that could begin a framed name: every start was spelled and flattened here
      s.push({ content: '<nnnn' });
      streams.push(s);
    }
    const grown = (process.memoryUsage().heapUsed - before) / 1e6;
    // spelled out: 32 x 11 x 1,024 x ~1,000 characters = ~360 MB retained by the streams
    expect(grown).toBeLessThan(64);
    expect(streams).toHaveLength(32);
  });
});
