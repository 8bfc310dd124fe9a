/**
 * Issue 30, a bare `</think>` before a call: with `startsInReasoning: 'maybe'` (the prompt may
 * have opened the reasoning) the output is held from its start until a close of the marker
 * table ends within maxHeldBytes (the text before it is reasoning, split as a paired tag would
 * split it) or until the end / the cap (content, byte for byte). Streamed equals whole for any
 * split, and the hold costs at most about 4x for 4x the output.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PARSERS } from '../../parsers/registry.js';
import { collectThinkMarkers } from '../../parsers/engine/think-split.js';
import { budget, pick } from '../hardening/surface-budget.js';
import { chunks, options, streamed, toolsOf, whole } from './engine-helpers.js';

const tools = toolsOf({
  name: 'get_weather',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
});
const CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
const maybe = (extra = {}) => options(tools, { startsInReasoning: 'maybe', ...extra });

function both(text: string, opts = maybe()) {
  const r = whole(text, opts);
  for (const size of [1, 3, 17]) {
    const s = streamed(chunks(text, size), { ...opts, newId: options(tools).newId });
    expect(s.reasoning).toBe(r.reasoning);
    expect(s.content).toBe(r.content);
    expect(s.calls.map((c) => [c.name, c.arguments])).toEqual(r.calls.map((c) => [c.name, c.arguments]));
  }
  return r;
}

describe("startsInReasoning 'maybe': a bare close splits reasoning from content", () => {
  const closes = collectThinkMarkers(PARSERS).closes;

  it('the marker table has every family close (</think> and the families’ own)', () => {
    expect(closes).toContain('</think>');
    expect(closes.length).toBeGreaterThan(1);
  });

  for (const close of closes) {
    it(`${close} before a call: reasoning before it, the call read, no content`, () => {
      const r = both(`I need the weather.\n${close}\n${CALL}`);
      expect(r.reasoning).toBe('I need the weather.\n');
      expect(r.calls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([
        ['get_weather', { city: 'Paris' }],
      ]);
      expect(r.content).toBeNull();
    });
  }

  it('without the option the same output keeps the reasoning in content (as before)', () => {
    const text = `I need the weather.\n</think>\n${CALL}`;
    const r = whole(text, options(tools));
    expect(r.reasoning).toBeNull();
    expect(r.content).toBe('I need the weather.\n</think>');
  });

  it('no close: everything is content, byte for byte, and a call in it is read', () => {
    expect(both('Just an answer.').content).toBe('Just an answer.');
    const r = both(`Checking.\n${CALL}`);
    expect(r.reasoning).toBeNull();
    expect(r.content).toBe('Checking.');
    expect(r.calls).toHaveLength(1);
  });

  it('a call before the close was reasoning (a draft), the one after it is the call', () => {
    const draft = CALL.replace('Paris', 'Draft');
    const r = both(`${draft}\nno, Paris.\n</think>\n${CALL}`);
    expect(r.reasoning).toBe(`${draft}\nno, Paris.\n`);
    expect(r.calls.map((c) => JSON.parse(c.arguments))).toEqual([{ city: 'Paris' }]);
  });

  it('a leading <think> is the paired tag, as without the option', () => {
    const r = both(`<think>hm</think>answer`);
    expect([r.reasoning, r.content]).toEqual(['hm', 'answer']);
  });

  it("a family's skip marker first: no reasoning (Kimi K3 answering with its response section)", () => {
    const text = '<|open|>response<|sep|>Hello<|close|>response<|sep|>';
    expect(both(text).reasoning).toBe(whole(text, options(tools, { startsInReasoning: true })).reasoning);
  });

  it('a close that ends past maxHeldBytes: all content, as without the option', () => {
    const long = 'x'.repeat(2000);
    const text = `${long}</think>answer`;
    const r = both(text, maybe({ maxHeldBytes: 1024 }));
    expect(r.reasoning).toBeNull();
    expect(r.content).toBe(whole(text, options(tools, { maxHeldBytes: 1024 })).content);
    // within the cap it is the split
    expect(both(text, maybe({ maxHeldBytes: 4096 })).reasoning).toBe(long);
  });

  it('property: any prose, with or without a close, is split as true / false would, streamed or whole', () => {
    const prose = fc.string({ unit: fc.constantFrom('a', ' ', '\n', '<', '/', 't', '>', 'é', '😀') });
    fc.assert(
      fc.property(
        prose,
        fc.boolean(),
        prose,
        fc.array(fc.nat(), { maxLength: 6 }),
        (a, withClose, b, cuts) => {
          const text = withClose ? `${a}</think>${b}` : `${a}${b}`;
          const r = whole(text, maybe());
          const pts = [...new Set(cuts.map((x) => x % (text.length + 1)))].sort((x, y) => x - y);
          const pieces: string[] = [];
          let prev = 0;
          for (const p of pts) {
            pieces.push(text.slice(prev, p));
            prev = p;
          }
          pieces.push(text.slice(prev));
          const s = streamed(pieces, maybe());
          expect([s.reasoning, s.content]).toEqual([r.reasoning, r.content]);
          // the split is the one `true` makes when a close comes, the one `false` makes otherwise
          // (both keep every byte but the close, under the leftover-whitespace rule)
          const as = whole(text, options(tools, { startsInReasoning: withClose }));
          expect([r.reasoning, r.content]).toEqual([as.reasoning, as.content]);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('the hold costs at most about 4x for 4x the output', () => {
    const units = ['Thinking about it. ', '</thi', '<', '\n', ' ', 'x', '</think>', CALL];
    budget(
      "startsInReasoning 'maybe'",
      (size, rnd) => {
        let text = '';
        while (text.length < size) {
          const u = pick(rnd, units);
          // mostly prose without a close: the longest hold
          if (u === '</think>' && rnd() < 0.9) continue;
          text += u;
        }
        return text;
      },
      (text) => streamed(chunks(text, 64), maybe()),
      { from: 2000, max: 256_000 },
      3010,
    );
  }, 120_000);
});
