/**
 * A complete call in the reasoning the output (or the prompt) opened ends that reasoning when no
 * close follows it (llama.cpp, SGLang); a close after it makes it a draft that stays reasoning.
 * Streaming equals non-streaming for any split; reasoning before the first call streams live.
 */
import { describe, expect, it } from 'vitest';
import { createRecoveryStream } from '../../parsers/recover.js';
import { assertRandomSplits, chunks, options, streamed, toolsOf, view, whole } from './engine-helpers.js';

const tools = toolsOf({ name: 'get_weather' });
const call = (city: string) =>
  `<tool_call>{"name": "get_weather", "arguments": {"city": "${city}"}}</tool_call>`;
const sir = (extra = {}) => options(tools, { startsInReasoning: true, ...extra });

const cases: Array<{ name: string; text: string; sir: boolean }> = [
  { name: 'prompt-opened reasoning, then a call', text: `Need the weather.\n${call('Paris')}`, sir: true },
  { name: 'a call, then a close: a draft', text: `Maybe ${call('Paris')} no.</think>Which city?`, sir: true },
  { name: 'a call, more thoughts, no close', text: `Plan ${call('Paris')} then summarise.`, sir: true },
  { name: 'a leading <think> left open around a call', text: `<think>Checking ${call('Lyon')}`, sir: false },
  {
    name: 'a call cut off by the end',
    text: `Plan <tool_call>{"name": "get_weather", "arguments": {"ci`,
    sir: true,
  },
];

describe('a call ends the reasoning the output opened', () => {
  it('reasoning before the call, the call, nothing else', () => {
    const r = whole(cases[0]!.text, sir());
    expect(view(r)).toMatchObject({ reasoning: 'Need the weather.\n', content: null });
    expect(r.calls.map((c) => c.name)).toEqual(['get_weather']);
  });

  it('a close after the call makes it a draft: it stays reasoning, byte for byte', () => {
    const r = whole(cases[1]!.text, sir());
    expect(r.calls).toEqual([]);
    expect(r.reasoning).toBe(`Maybe ${call('Paris')} no.`);
    expect(r.content).toBe('Which city?');
  });

  it('text after the call with no close is content', () => {
    const r = whole(cases[2]!.text, sir());
    expect(r.calls.map((c) => c.name)).toEqual(['get_weather']);
    expect(r.reasoning).toBe('Plan ');
    expect(r.content).toBe('then summarise.');
  });

  it('an output-opened <think> left open works the same', () => {
    const r = whole(cases[3]!.text, options(tools));
    expect(r.calls.map((c) => c.name)).toEqual(['get_weather']);
    expect(r.reasoning).toBe('Checking ');
  });

  it('a call the end cut off is not a call', () => {
    const r = whole(cases[4]!.text, sir());
    expect(r.calls).toEqual([]);
    expect(r.reasoning).toBe(cases[4]!.text);
  });

  it('reasoning before the first call streams live; after it, it waits for the close or the end', () => {
    const s = createRecoveryStream(sir());
    const text = (evs: ReturnType<typeof s.push>) =>
      evs.map((e) => (e.type === 'reasoning' ? e.text : `[${e.type}]`)).join('');
    // (the trailing blank is held a moment: a space may start a marker)
    expect(text(s.push({ content: 'Need the weather. ' }))).toBe('Need the weather.');
    expect(text(s.push({ content: call('Paris') }))).toBe(' ');
    expect(text(s.push({ content: ' hmm' }))).toBe('');
    expect(text(s.push({ content: '</think>' }))).toBe(`${call('Paris')} hmm`);
  });

  it('held past maxHeldBytes without a close: released as reasoning, whatever the split', () => {
    const text = `${call('Paris')}${' and more'.repeat(20)}`;
    const o = () => sir({ maxHeldBytes: 120 });
    const r = whole(text, o());
    expect(r.reasoning?.startsWith(call('Paris'))).toBe(true);
    expect(view(streamed(chunks(text, 1), o()))).toEqual(view(r));
    expect(view(streamed(chunks(text, 13), o()))).toEqual(view(r));
  });

  it('random chunkings equal non-streaming', () => {
    assertRandomSplits(
      cases.length,
      (k) => ({ text: cases[k]!.text, opts: () => (cases[k]!.sir ? sir() : options(tools)) }),
      11,
    );
  });
});
