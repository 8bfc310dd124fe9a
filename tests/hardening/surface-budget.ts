/**
 * The surface budget tables' shared parts (not a test file): `budget` asserts that a surface fed
 * random inputs scaled 1x and 4x costs at most about 4x in CPU time and retained memory
 * (tests/support/cost-scaling.ts), over TOOLPROOF_FUZZ_RUNS seeds; `parserRows` is the table of
 * every registered parser, split in `of` parts so vitest spreads them over its workers
 * (tests/hardening/surface-budgets-parsers-*.test.ts).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createRecoveryStream } from '../../parsers/recover.js';
import { PARSERS } from '../../parsers/registry.js';
import type { DeclaredTool } from '../../parsers/types.js';
import { loadFixtures } from '../parsers/fixtures.js';
import { judge, measureScaling, prng, type Scaling } from '../support/cost-scaling.js';
import { loadFactor } from './loop-probe.js';

const RUNS = Number(process.env.TOOLPROOF_FUZZ_RUNS ?? 1);

/** Asserts the budget for a surface, over RUNS random seeds (fast-check draws them). */
export function budget<I>(
  name: string,
  make: (size: number, rnd: () => number) => I,
  run: (input: I) => unknown,
  opts: { from: number; max: number },
  seed: number,
): void {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 2 ** 31 - 1 }), (s) => {
      // the load probe costs ~60 ms of CPU: taken only when the time is over without it
      let load: number | undefined;
      const slackMs = () => (load ??= 5 * loadFactor());
      const measure = (): Scaling => measureScaling((size) => make(size, prng(s)), run, { ...opts, slackMs });
      let scaling = measure();
      let ok = judge(scaling, slackMs);
      // Over budget: measured once more from scratch. On a loaded box a worker's major GC or a
      // neighbour can land in the 4x runs of one measurement (a 13x reading of a linear rewrite
      // late in a full run); a quadratic is over budget in both.
      if (!ok.time || !ok.memory) {
        scaling = measure();
        ok = judge(scaling, slackMs);
      }
      const what = `${name} (seed ${s}, base ${scaling.base}): ${scaling.t1.toFixed(1)} -> ${scaling.t4.toFixed(1)} ms, ${(scaling.m1 / 1e6).toFixed(1)} -> ${(scaling.m4 / 1e6).toFixed(1)} MB`;
      expect(ok.time, what).toBe(true);
      expect(ok.memory, what).toBe(true);
    }),
    { numRuns: RUNS, seed, endOnFailure: true },
  );
}

export const pick = <T>(rnd: () => number, xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;

/**
 * Random text of at least `size` chars after `lead`: units drawn at random, a share `cut` of
 * them cut short (a marker or a call that never completes).
 */
export function soup(
  rnd: () => number,
  size: number,
  units: readonly string[],
  cut = 0.3,
  lead = '',
): string {
  let text = lead;
  while (text.length < size) {
    const u = pick(rnd, units);
    text += cut > 0 && rnd() < cut ? u.slice(0, Math.floor(rnd() * u.length)) : u;
  }
  return text;
}

// ---------------------------------------------------------------- parsers

/** Every registered parser whose index is `part` modulo `of`: output length x1 vs x4. */
export function parserRows(part: number, of: number): void {
  const FIXTURES = new Map(loadFixtures().map((f) => [f.file, f.cases]));
  // With the delimiters of quoted text (inline code, fences, `>` lines, HTML comments): every
  // parser's engine tracks them on every push (parsers/engine/quoted-text.ts).
  const PROSE = ['Sure, ', 'the answer is ', '42', '\n', ' ', '{', '"', ':', '<', '[', '(', 'done.'];
  const QUOTES = ['`', '```\n', '\n> ', '<!--', '-->'];

  describe('every registered parser: output length x1 vs x4', () => {
    PARSERS.forEach((p, k) => {
      if (k % of !== part) return;
      it(p.name, () => {
        const cases = FIXTURES.get(p.name) ?? [];
        const tools = new Map<string, DeclaredTool>();
        for (const c of cases) for (const t of c.tools) tools.set(t.name, t);
        if (tools.size === 0) tools.set('get_weather', { name: 'get_weather' });
        const texts = cases.map((c) => c.text);
        const markers = p.spec.markers;
        const units = [...texts, ...markers, ...PROSE, ...QUOTES, ...tools.keys()];
        budget(
          `parser ${p.name}`,
          (size, rnd) => soup(rnd, size, units),
          (text) => {
            let n = 0;
            const s = createRecoveryStream({ tools, parsers: [p.name], newId: () => `c${n++}` });
            const events = [];
            for (let i = 0; i < text.length; i += 64)
              events.push(...s.push({ content: text.slice(i, i + 64) }));
            events.push(...s.finish());
            return events;
          },
          { from: 2000, max: 256_000 },
          1000 + k,
        );
      }, 120_000);
    });
  });
}
