/**
 * Issue 8 (A2): held text was unbounded. An output starting with `{` was held to the end of
 * the stream (300 MB: 1.4 GB RSS, first byte after 12.7 s); an unclosed `<tool_call>` was held
 * forever. Now at most `maxHeldBytes` is held: past it the text is released as content, byte
 * for byte, with an 'unrecovered' / 'too-long' leak record, the same for every chunking.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createRecoveryStream } from '../../parsers/recover.js';
import { chunks, options, streamed, toolsOf, view, whole } from './engine-helpers.js';

const tools = toolsOf({ name: 'f' }, { name: 'get_weather' });
const MB = 1024 * 1024;

/** Pushes `text` in `size` chunks; returns how much content had come out before finish(). */
function emittedBeforeFinish(text: string, size: number, maxHeldBytes?: number) {
  const s = createRecoveryStream(options(tools, maxHeldBytes ? { maxHeldBytes } : {}));
  let live = 0;
  let all = '';
  for (const c of chunks(text, size)) {
    for (const e of s.push({ content: c })) {
      if (e.type === 'content') {
        live += e.text.length;
        all += e.text;
      }
    }
  }
  for (const e of s.finish()) if (e.type === 'content') all += e.text;
  return { live, all, leaks: s.leaks() };
}

describe('held text is capped (default 1 MiB)', () => {
  it('an output starting with { streams out past the cap, nothing lost', () => {
    const text = `{"note": "${'x'.repeat(3 * MB)}`;
    const r = emittedBeforeFinish(text, 64 * 1024);
    // before the fix: 0 bytes before finish (all held)
    expect(r.live).toBeGreaterThan(text.length - MB - 64 * 1024);
    expect(r.all).toBe(text);
    expect(r.leaks).toEqual([
      { format: 'llama3-json', source: 'content', outcome: 'unrecovered', reason: 'too-long' },
    ]);
  });

  it('an unclosed <tool_call> is released past the cap, nothing lost', () => {
    const text = `Sure.\n<tool_call>{"name": "f", "arguments": {"a": "${'y'.repeat(3 * MB)}`;
    const r = emittedBeforeFinish(text, 64 * 1024);
    expect(r.live).toBeGreaterThan(text.length - MB - 64 * 1024);
    expect(r.all).toBe(text);
    expect(r.leaks.map((l) => `${l.outcome}:${l.reason}`)).toContain('unrecovered:too-long');
  });

  it('non-streamed gives the same content and records', () => {
    const text = `{"note": "${'x'.repeat(2 * MB)}"}`;
    const r = whole(text, options(tools));
    expect(r.content).toBe(text);
    expect(view(streamed(chunks(text, 100_000), options(tools)))).toEqual(view(r));
  });

  it('a call under the cap is still recovered, the same call over a small cap stays content', () => {
    const call = `<tool_call>{"name": "f", "arguments": {"a": "${'z'.repeat(5000)}"}}</tool_call>`;
    expect(whole(call, options(tools)).calls).toHaveLength(1);
    const capped = whole(call, options(tools, { maxHeldBytes: 4096 }));
    expect(capped.calls).toEqual([]);
    expect(capped.content).toBe(call);
    expect(capped.leaks.map((l) => l.reason)).toEqual(['too-long']);
    expect(view(streamed(chunks(call, 7), options(tools, { maxHeldBytes: 4096 })))).toEqual(view(capped));
  });

  it('a long blank run is not held either (content sink and think splitter)', () => {
    const text = `Hello${' '.repeat(10_000)}<tool_call>{"name": "f", "arguments": {}}</tool_call>`;
    const s = createRecoveryStream(options(tools, { maxHeldBytes: 2048 }));
    let live = 0;
    for (const c of chunks(text, 100))
      for (const e of s.push({ content: c })) if (e.type === 'content') live += e.text.length;
    expect(live).toBeGreaterThan(8000);
    const r = whole(text, options(tools, { maxHeldBytes: 2048 }));
    // the run was longer than the cap: it stays (whitespace touching a call is dropped only when held)
    expect(r.content).toBe(`Hello${' '.repeat(10_000)}`);
    expect(r.calls).toHaveLength(1);
  });
});

describe('streaming equals non-streaming around the cap, for any split', () => {
  const token = fc.constantFrom(
    '<tool_call>',
    '</tool_call>',
    '{"name": "f", "arguments": {"a": 1}}',
    '[f(a=1)]',
    '{',
    '[',
    '```json\n',
    '```',
    '<think>',
    '</think>',
    ' ',
    '\n\n',
    'xxxxxxxx',
    'text ',
    '<',
    '"',
  );
  it('the character before a marker is the same for every split (found by the property below)', () => {
    // the scanner used to trim its buffer up to the scan position, so after a cut a pythonic
    // list looked like it opened the output: streamed "x=y" + "[f(a=1)]" gave a call (and a
    // capped "<tool_call>" + "[f(a=1)]" a 'too-long' record) that the whole text did not
    for (const [text, cap] of [
      ['x=y[f(a=1)]', undefined],
      ['<tool_call>[f(a=1)]', 1],
    ] as const) {
      const o = () => options(tools, cap ? { maxHeldBytes: cap } : {});
      const w = view(whole(text, o()));
      expect(w.calls).toEqual([]);
      expect(w.content).toBe(text);
      for (let cut = 0; cut <= text.length; cut++)
        expect(view(streamed([text.slice(0, cut), text.slice(cut)], o()))).toEqual(w);
      expect(view(streamed(chunks(text, 1), o()))).toEqual(w);
    }
  });

  it('random outputs, random caps, random chunkings', () => {
    fc.assert(
      fc.property(
        fc.array(token, { maxLength: 30 }),
        fc.integer({ min: 1, max: 120 }),
        fc.array(fc.nat(), { maxLength: 10 }),
        (tokens, cap, cuts) => {
          const text = tokens.join('');
          const o = () => options(tools, { maxHeldBytes: cap });
          const pts = [...new Set(cuts.map((x) => x % (text.length + 1)))].sort((a, b) => a - b);
          const pieces: string[] = [];
          let prev = 0;
          for (const p of pts) {
            pieces.push(text.slice(prev, p));
            prev = p;
          }
          pieces.push(text.slice(prev));
          expect(view(streamed(pieces, o()))).toEqual(view(whole(text, o())));
          expect(view(streamed(chunks(text, 1), o()))).toEqual(view(whole(text, o())));
        },
      ),
      { numRuns: 400, seed: 8 },
    );
  });
});
