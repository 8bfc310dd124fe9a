/**
 * Fuzz: random and mutated fixture texts never throw and never hang; 1 MB hostile inputs
 * (repeated markers, unclosed envelopes, deep brackets) finish in bounded time. The bound is
 * generous on purpose: this guards against quadratic blow-ups, it is not a benchmark.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { processCpuMs } from '../hardening/loop-probe.js';
import { collectEvents, createRecoveryStream, recoverMessage } from '../../parsers/recover.js';
import { PARSERS } from '../../parsers/registry.js';
import { loadFixtures, view } from './fixtures.js';

const cases = loadFixtures().flatMap((f) => f.cases);
const MB = 1 << 20;
const rep = (s: string) => s.repeat(Math.ceil(MB / s.length)).slice(0, MB);

/** Every fixture's tools by name, read once (recomputed per call it was over half this file's CPU). */
const TOOLS = [...new Map(cases.flatMap((c) => c.tools).map((t) => [t.name, t]))];

function allOptions() {
  const tools = new Map(TOOLS);
  let n = 0;
  return { tools, newId: () => `id_${n++}` };
}

describe('fuzz: never throws', () => {
  it('mutated fixtures (cut, duplicated, spliced, with markers inserted)', () => {
    const markers = PARSERS.flatMap((p) => p.markers);
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: cases.length - 1 }),
        fc.integer({ min: 0, max: cases.length - 1 }),
        fc.nat(),
        fc.nat(),
        fc.nat(),
        fc.array(fc.nat(), { maxLength: 6 }),
        (a, b, x, y, m, cuts) => {
          const s = cases[a]!.text;
          const t = cases[b]!.text;
          const marker = markers[m % Math.max(1, markers.length)] ?? '';
          const mutated =
            s.slice(0, x % (s.length + 1)) +
            marker +
            t.slice(y % (t.length + 1)) +
            s.slice(0, y % (s.length + 1));
          const r = recoverMessage({ content: mutated, reasoning: null }, allOptions());
          for (const c of r.calls) expect(typeof JSON.parse(c.arguments)).toBe('object');
          // and streaming still equals non-streaming on these unplanned mixes of formats
          const st = createRecoveryStream(allOptions());
          const events = [];
          let prev = 0;
          for (const cut of [...cuts.map((k) => k % (mutated.length + 1))].sort((p, q) => p - q)) {
            events.push(...st.push({ content: mutated.slice(prev, cut) }));
            prev = cut;
          }
          events.push(...st.push({ content: mutated.slice(prev) }), ...st.finish());
          expect(view(collectEvents(events, st)), JSON.stringify({ mutated, cuts })).toEqual(view(r));
        },
      ),
      { numRuns: 400, seed: 7 },
    );
    // ~5 s alone; every fixture's tools declared, so held tails are read: slow beside other files
  }, 60_000);

  it('random strings over marker alphabets', () => {
    const alphabet = fc.constantFrom(
      ...new Set(
        PARSERS.flatMap((p) => p.markers).concat([
          '{',
          '}',
          '[',
          ']',
          '"',
          '\\',
          ':',
          ',',
          '\n',
          ' ',
          'a',
          '😀',
          '</tool_call>',
          '<think>',
          '</think>',
        ]),
      ),
    );
    fc.assert(
      fc.property(fc.array(alphabet, { maxLength: 40 }), (parts) => {
        const text = parts.join('');
        const r = recoverMessage({ content: text, reasoning: text }, allOptions());
        expect(r.content === null || typeof r.content === 'string').toBe(true);
      }),
      { numRuns: 200, seed: 11 },
    );
  });
});

describe('fuzz: 1 MB hostile inputs finish in bounded time', () => {
  const hostile: Record<string, string> = {
    prose: rep('The quick brown fox jumps over the lazy dog. '),
    angles: rep('<<<<< a < b > c '),
    'repeated <tool_call>{': rep('<tool_call>{'),
    'repeated <tool_call>x': rep('<tool_call>x'),
    'repeated <function=': rep('<function=x>'),
    'qwen3 parameters without end': rep('<tool_call><function=x><parameter=a>'),
    'repeated [TOOL_CALLS]': rep('[TOOL_CALLS]'),
    'harmony headers': rep('<|channel|>'),
    'python tags': rep('<|python_tag|>{'),
    'deep brackets': rep('['),
    'deep braces': rep('{'),
    'fence then JSON': '```json\n' + rep('{"a":'),
    'valid calls': rep('<tool_call>{"name":"now","arguments":{}}</tool_call>\n'),
  };
  for (const [name, text] of Object.entries(hostile)) {
    it(name, () => {
      const t0 = processCpuMs();
      recoverMessage({ content: text, reasoning: null }, allOptions());
      const t1 = processCpuMs();
      expect(t1 - t0, `${name}: ${(t1 - t0).toFixed(0)} ms`).toBeLessThan(5000);
    });
  }
  it('streaming 1 MB of prose in 8-char chunks', () => {
    const text = hostile['prose']!;
    const s = createRecoveryStream(allOptions());
    const t0 = processCpuMs();
    let out = 0;
    for (let i = 0; i < text.length; i += 8)
      for (const e of s.push({ content: text.slice(i, i + 8) }))
        if (e.type === 'content') out += e.text.length;
    for (const e of s.finish()) if (e.type === 'content') out += e.text.length;
    expect(out).toBe(text.trimEnd().length + (text.length - text.trimEnd().length));
    expect(processCpuMs() - t0).toBeLessThan(5000);
  });
});
