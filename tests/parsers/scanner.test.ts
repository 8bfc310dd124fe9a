/**
 * The scan plan's literal alternatives (scanner.ts): markers whose first char is common in prose
 * (' ', '\n', 'A', 'f', ...) are found by the regex as whole literals, not per first char. So a
 * literal cut by the end of a push is no regex hit, and the scanner must hold it back itself.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { defineFamily } from '../../parsers/engine/define.js';
import {
  buildScanPlan,
  EnvelopeScanner,
  type ScanEvent,
  type ScanPlan,
} from '../../parsers/engine/scanner.js';
import { createRecoveryStream, planFor, recoverMessage } from '../../parsers/recover.js';
import { PARSERS } from '../../parsers/registry.js';

/** A family that takes exactly its marker as a (broken) envelope: only the scan is under test. */
const probe = defineFamily({
  name: 'probe',
  markers: [' to=', ' to=functions.', '\ncall:', 'Action:', 'functools[', '<probe>', '[', '[[call]]'],
  priority: 0,
  backend: {},
  match: ({ start, marker }) => ({ end: start + marker.length, calls: [], error: 'probe' }),
});

type Seen = { text: string } | { envelope: string; family: string };

/** Events with adjacent text merged (how text is cut into events may differ between splits). */
function seen(events: readonly ScanEvent[]): Seen[] {
  const out: Seen[] = [];
  for (const e of events) {
    if (e.type === 'text') {
      const last = out.at(-1);
      if (last && 'text' in last) last.text += e.text;
      else out.push({ text: e.text });
    } else if (e.type === 'envelope') out.push({ envelope: e.raw, family: e.family.name });
  }
  return out;
}

function scanPieces(plan: ScanPlan, pieces: readonly string[]): { events: ScanEvent[]; first: ScanEvent[] } {
  const s = new EnvelopeScanner(plan, { tools: new Map() }, { whole: false });
  const first = s.push(pieces[0] ?? '');
  const events = [...first];
  for (const p of pieces.slice(1)) events.push(...s.push(p));
  events.push(...s.finish());
  return { events, first };
}

const emitted = (events: readonly ScanEvent[]) =>
  events.map((e) => (e.type === 'text' ? e.text : e.type === 'envelope' ? e.raw : '')).join('');

/** Markers the plan finds as literal alternatives (their first char is not in the class). */
function literalMarkers(plan: ScanPlan): string[] {
  return [...plan.byFirst.values()]
    .flat()
    .map((e) => e.marker)
    .filter((m) => plan.literalFirst[m.charCodeAt(0)] === 1);
}

describe('scan plan', () => {
  it('common first chars are literal alternatives, not class chars', () => {
    const plan = buildScanPlan(PARSERS);
    const literals = literalMarkers(plan);
    for (const m of [' to=', ' to=functions.', '\ncall:', 'Action:', 'functools[', '<tool_call>']) {
      expect(literals).toContain(m);
    }
    // one regex hit per candidate: prose with none of the markers has no hit at all
    plan.starts.lastIndex = 0;
    expect(plan.starts.exec('A fox, a <b>tool</b> to fix it.\nfunctools is fine; call: Map<T>')).toBeNull();
  });
});

describe('scan plans for pinned parser lists', () => {
  it('are built once per list, not per request', () => {
    const plan = planFor(['hermes', 'gpt-oss']);
    expect(planFor(['hermes', 'gpt-oss'])).toBe(plan);
    expect(planFor(['gpt-oss'])).not.toBe(plan);
    expect(plan.families.map((f) => f.name).sort()).toEqual(['gpt-oss', 'hermes']);
    expect(planFor('all')).toBe(planFor(undefined));
  });
});

describe('a literal marker split across two pushes', () => {
  const plan = buildScanPlan([probe]);
  const before = 'a b\nc A f ';
  const after = 'x y';

  for (const marker of probe.markers.filter((m) => !/^[<[]/.test(m))) {
    it(`${JSON.stringify(marker)} is found at every split, its start held until it completes`, () => {
      const text = before + marker + after;
      // ' to=' alone may still become ' to=functions.': the longer marker wins when both fit
      const expected = [{ text: before }, { envelope: marker, family: 'probe' }, { text: after }];
      for (let k = 0; k <= text.length; k++) {
        const { events, first } = scanPieces(plan, [text.slice(0, k), text.slice(k)]);
        expect(seen(events), `split at ${k}`).toEqual(expected);
        if (k > before.length && k < before.length + marker.length) {
          // the cut marker is held back, and nothing before it is
          expect(emitted(first), `split at ${k}`).toBe(before);
        }
      }
      const oneByOne = scanPieces(plan, [...text]);
      expect(seen(oneByOne.events)).toEqual(expected);
    });
  }

  it('" to=" is held while " to=functions." can still complete, then found alone', () => {
    const text = `${before} to=fun${after}`;
    for (let k = 0; k <= text.length; k++) {
      const { events } = scanPieces(plan, [text.slice(0, k), text.slice(k)]);
      expect(seen(events), `split at ${k}`).toEqual([
        { text: before },
        { envelope: ' to=', family: 'probe' },
        { text: `fun${after}` },
      ]);
    }
  });

  it('literals and a class char (a one-char marker) next to and inside each other', () => {
    const text = '<probe> to=\ncall:functools[<probe>Action:[[call]][x[[call';
    const whole = seen(scanPieces(plan, [text]).events);
    expect(whole.filter((e) => 'envelope' in e).map((e) => ('envelope' in e ? e.envelope : ''))).toEqual([
      '<probe>',
      ' to=',
      '\ncall:',
      'functools[',
      '<probe>',
      'Action:',
      '[[call]]',
      '[',
      '[',
      '[',
    ]);
    fc.assert(
      fc.property(fc.array(fc.nat({ max: text.length }), { maxLength: 8 }), (cuts) => {
        const at = [...new Set([0, ...cuts, text.length])].sort((a, b) => a - b);
        const pieces = at.slice(1).map((end, j) => text.slice(at[j], end));
        expect(seen(scanPieces(plan, pieces).events)).toEqual(whole);
      }),
    );
  });

  it('every literal marker of the registered families, cut at every position, scans as unsplit', () => {
    const all = buildScanPlan(PARSERS);
    const literals = literalMarkers(all);
    expect(literals.length).toBeGreaterThan(5);
    for (const marker of literals) {
      const text = `Well, here: ${marker} and more.`;
      const start = text.indexOf(marker);
      const expected = seen(scanPieces(all, [text]).events);
      for (let k = start + 1; k < start + marker.length; k++) {
        const { events, first } = scanPieces(all, [text.slice(0, k), text.slice(k)]);
        expect(seen(events), `${JSON.stringify(marker)} split at ${k}`).toEqual(expected);
        expect(emitted(first), `${JSON.stringify(marker)} split at ${k}`).toBe(text.slice(0, start));
      }
    }
  });
});

describe('prose full of literal markers’ first chars passes byte for byte', () => {
  const tools = new Map([['get_weather', { name: 'get_weather', parameters: { type: 'object' } }]]);
  const opts = () => {
    let n = 0;
    return { tools, newId: () => `call_${n++}` };
  };
  // near misses of every common-first marker, with spaces, newlines, 'A' and 'f' everywhere
  const prose = [
    'A fox went to town. After a while, a friend asked: "to= what?"\n',
    'call me maybe;\ncall\n calls: few. Action plan: none. Actions: fine. ACTION: no.\n',
    'from functools import reduce; functools.partial(f) and functools [x].\n',
    '-> tool/function call; -- >> quote, ** bold ** and *Tool Call:* and ```js\n',
    ' to =functions. and  to functions and \tto=\n\n  f A f A  \n',
  ].join('');

  it('recoverMessage returns it unchanged with no leak', () => {
    const r = recoverMessage({ content: prose, reasoning: null }, opts());
    expect(r.content).toBe(prose);
    expect(r.calls).toEqual([]);
    expect(r.leaks).toEqual([]);
  });

  it('streams unchanged in 1-char chunks and in random chunks', () => {
    const run = (pieces: readonly string[]) => {
      const s = createRecoveryStream(opts());
      let out = '';
      for (const p of pieces) for (const e of s.push({ content: p })) if (e.type === 'content') out += e.text;
      for (const e of s.finish()) if (e.type === 'content') out += e.text;
      return out;
    };
    expect(run([...prose])).toBe(prose);
    fc.assert(
      fc.property(fc.array(fc.nat({ max: prose.length }), { maxLength: 30 }), (cuts) => {
        const at = [...new Set([0, ...cuts, prose.length])].sort((a, b) => a - b);
        expect(run(at.slice(1).map((end, j) => prose.slice(at[j], end)))).toBe(prose);
      }),
    );
  });
});
