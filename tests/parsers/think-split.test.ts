/**
 * The think splitter reads reasoning markers from one table: `<think>` plus every enabled
 * family's own (Command R7B / Cohere2, Kimi K3, Apriel). Prompt-opened reasoning ends at any
 * close of the table; a family's skip marker first in the output means there was none.
 */
import { describe, expect, it } from 'vitest';
import { processCpuMs } from '../hardening/loop-probe.js';
import { buildScanPlan } from '../../parsers/engine/scanner.js';
import { collectThinkMarkers, ThinkSplitter, type ThinkPiece } from '../../parsers/engine/think-split.js';
import { PARSERS } from '../../parsers/registry.js';
import { hermes } from '../../parsers/formats/hermes.js';

const all = buildScanPlan(PARSERS).think;

function run(markers: typeof all, startsInReasoning: boolean, pieces: string[]) {
  const s = new ThinkSplitter(markers, startsInReasoning);
  const out: ThinkPiece[][] = pieces.map((p) => s.push(p));
  out.push(s.finish());
  return out;
}

function fold(steps: ThinkPiece[][]) {
  let reasoning = '';
  let content = '';
  for (const p of steps.flat()) {
    if (p.kind === 'reasoning') reasoning += p.text;
    else if (p.kind === 'content') content += p.text;
  }
  return { reasoning, content };
}

describe('the reasoning marker table', () => {
  it("holds <think> and each family's own markers, longest opens first", () => {
    expect(all.closes).toEqual(
      expect.arrayContaining([
        '</think>',
        '<|END_THINKING|>',
        '<|close|>think<|sep|>',
        '[BEGIN FINAL RESPONSE]',
      ]),
    );
    expect(all.opens.map((o) => o.open)).toEqual(
      expect.arrayContaining(['<think>', '<|START_THINKING|>', '<|open|>think<|sep|>']),
    );
    const lengths = all.opens.map((o) => o.open.length);
    expect(lengths).toEqual([...lengths].sort((a, b) => b - a));
  });

  it('follows the parser set: hermes alone has only <think>', () => {
    const t = collectThinkMarkers([hermes]);
    expect(t.closes).toEqual(['</think>']);
    expect(t.skips).toEqual([]);
  });
});

describe('prompt-opened reasoning (startsInReasoning)', () => {
  it("ends at a family's own close", () => {
    expect(fold(run(all, true, ['plan<|END_THIN', 'KING|><|START_TEXT|>hi']))).toEqual({
      reasoning: 'plan',
      content: '<|START_TEXT|>hi',
    });
  });

  it('streams reasoning at once when it cannot be a skip marker', () => {
    const steps = run(all, true, ['I think', ' more']);
    expect(steps[0]).toEqual([{ kind: 'reasoning', text: 'I think' }]);
  });

  it('holds a possible skip marker only until it diverges', () => {
    const steps = run(all, true, ['<|START_', 'THINKING is odd']);
    expect(steps[0]).toEqual([]);
    expect(fold(steps)).toEqual({ reasoning: '<|START_THINKING is odd', content: '' });
  });

  it('a skip marker first in the output: no reasoning, the marker stays for the scanner', () => {
    expect(fold(run(all, true, [' <|START_ACT', 'ION|>[…]']))).toEqual({
      reasoning: '',
      content: ' <|START_ACTION|>[…]',
    });
  });

  it('a skip marker later in the reasoning is just reasoning', () => {
    expect(fold(run(all, true, ['hmm <|open|>response<|sep|> x']))).toEqual({
      reasoning: 'hmm <|open|>response<|sep|> x',
      content: '',
    });
  });
});

describe('reasoning opened in the output', () => {
  it("a leading family open ends at that family's close only", () => {
    expect(fold(run(all, false, ['<|START_THINKING|>a</think>b<|END_THINKING|>c']))).toEqual({
      reasoning: 'a</think>b',
      content: 'c',
    });
  });

  it('a bare family close without startsInReasoning stays content', () => {
    expect(fold(run(all, false, ['a<|END_THINKING|>b']))).toEqual({
      reasoning: '',
      content: 'a<|END_THINKING|>b',
    });
  });
});

describe('hostile input stays linear', () => {
  // generous bound: a quadratic regression on 200k chars in 1-char chunks takes minutes
  it('prompt-opened reasoning full of partial closes and skip-marker starts, 1-char chunks', () => {
    const unit = '<|END_THINK <|close|>thi [BEGIN FINAL <|open|> <|START_ ';
    const text = unit.repeat(Math.ceil(200_000 / unit.length));
    const t0 = processCpuMs();
    const steps = run(all, true, [...text]);
    expect(processCpuMs() - t0).toBeLessThan(5000);
    expect(fold(steps)).toEqual({ reasoning: text, content: '' });
  });
});
