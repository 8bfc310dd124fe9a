/**
 * Issue 11 (B1): a bare `</think>` means the output began in reasoning (the template opened
 * it), so a complete call before it is a draft, even when the model is not configured
 * `startsInReasoning`. Streaming: prose before the first call streams live; from the first
 * complete call on, output is held until a `</think>`, the end, or maxHeldBytes.
 */
import { describe, expect, it } from 'vitest';
import { createRecoveryStream } from '../../parsers/recover.js';
import { assertRandomSplits, chunks, options, streamed, toolsOf, view, whole } from './engine-helpers.js';

const tools = toolsOf({ name: 'get_weather' }, { name: 'write' });
const call = (city: string) =>
  `<tool_call>{"name": "get_weather", "arguments": {"city": "${city}"}}</tool_call>`;

const cases: Array<{ name: string; text: string; calls: string[]; content: string | null; leaks: string[] }> =
  [
    {
      name: 'a call before a bare </think> is a draft',
      text: `The user wants weather. Maybe ${call('Paris')} no wait, they said Lyon.</think>\n\nIt is sunny in Lyon.`,
      calls: [],
      content: `The user wants weather. Maybe ${call('Paris')} no wait, they said Lyon.</think>\n\nIt is sunny in Lyon.`,
      leaks: ['hermes:rejected:draft before </think>'],
    },
    {
      name: 'a draft before </think>, the real call after it',
      text: `Plan: ${call('Paris')}\nHmm, Lyon.</think>\n\n${call('Lyon')}`,
      calls: ['Lyon'],
      content: `Plan: ${call('Paris')}\nHmm, Lyon.</think>`,
      leaks: ['hermes:rejected:draft before </think>', 'hermes:recovered:'],
    },
    {
      name: 'no </think> at all: the call is real',
      text: `Checking.\n${call('Paris')}\nDone.`,
      calls: ['Paris'],
      content: 'Checking.\nDone.',
      leaks: ['hermes:recovered:'],
    },
    {
      name: 'a </think> before the call closes reasoning: the call is real',
      text: `thinking...</think>\n\n${call('Paris')}`,
      calls: ['Paris'],
      content: 'thinking...</think>',
      leaks: ['hermes:recovered:'],
    },
    {
      name: 'a </think> inside the call arguments does not count',
      text: '<tool_call>{"name": "write", "arguments": {"text": "a </think> b"}}</tool_call>',
      calls: ['write'],
      content: null,
      leaks: ['hermes:recovered:'],
    },
    {
      name: 'an output that opened <think> itself: a later </think> is just text',
      text: `<think>hmm</think>${call('Paris')} and </think>`,
      calls: ['Paris'],
      content: 'and </think>',
      leaks: ['hermes:recovered:'],
    },
    // a family's own close from the marker table counts the same (think-split.ts)
    {
      name: "a call before a bare <|END_THINKING|> (Command R7B's close) is a draft",
      text: `Maybe ${call('Paris')} no.<|END_THINKING|><|START_RESPONSE|>Which city?<|END_RESPONSE|>`,
      calls: [],
      content: `Maybe ${call('Paris')} no.<|END_THINKING|>\nWhich city?`,
      leaks: ['hermes:rejected:draft before </think>'],
    },
    {
      name: "a draft before Kimi K3's think close, the real call after it",
      text: `Plan ${call('Paris')}<|close|>think<|sep|>${call('Lyon')}`,
      calls: ['Lyon'],
      content: `Plan ${call('Paris')}<|close|>think<|sep|>`,
      leaks: ['hermes:rejected:draft before </think>', 'hermes:recovered:'],
    },
    {
      name: "a call before a bare [BEGIN FINAL RESPONSE] (Apriel's close) is a draft",
      text: `${call('Paris')}\n[BEGIN FINAL RESPONSE]\nWhich city?`,
      calls: [],
      content: `${call('Paris')}\n[BEGIN FINAL RESPONSE]\nWhich city?`,
      leaks: ['hermes:rejected:draft before </think>'],
    },
    {
      name: 'a family close inside the call arguments does not count',
      text: '<tool_call>{"name": "write", "arguments": {"text": "a <|END_THINKING|> b"}}</tool_call>',
      calls: ['write'],
      content: null,
      leaks: ['hermes:recovered:'],
    },
  ];

function names(r: ReturnType<typeof whole>): string[] {
  return r.calls.map((c) => {
    const a = JSON.parse(c.arguments) as { city?: string };
    return a.city ?? c.name;
  });
}

describe('a bare </think> makes the calls before it drafts', () => {
  for (const c of cases) {
    it(c.name, () => {
      const r = whole(c.text, options(tools));
      expect(names(r)).toEqual(c.calls);
      expect(r.content).toBe(c.content);
      expect(r.leaks.map((l) => `${l.format}:${l.outcome}:${l.reason ?? ''}`)).toEqual(c.leaks);
      expect(view(streamed(chunks(c.text, 1), options(tools)))).toEqual(view(r));
      expect(view(streamed(chunks(c.text, 5), options(tools)))).toEqual(view(r));
    });
  }

  it('random chunkings equal non-streaming', () => {
    assertRandomSplits(cases.length, (k) => ({ text: cases[k]!.text, opts: () => options(tools) }), 11);
  });

  it('with startsInReasoning the splitter already handles it (reasoning, not content)', () => {
    const text = `Maybe ${call('Paris')}</think>It is sunny.`;
    const r = whole(text, options(tools, { startsInReasoning: true }));
    expect(r.calls).toEqual([]);
    expect(r.reasoning).toBe(`Maybe ${call('Paris')}`);
    expect(r.content).toBe('It is sunny.');
  });

  it("only the enabled families' closes count (the marker table follows the parser set)", () => {
    const text = `${call('Paris')} then <|END_THINKING|>`;
    expect(names(whole(text, options(tools)))).toEqual([]);
    expect(names(whole(text, options(tools, { parsers: ['hermes'] })))).toEqual(['Paris']);
    // </think> is built in: it counts whatever the parser set
    expect(names(whole(`${call('Paris')}</think>`, options(tools, { parsers: ['hermes'] })))).toEqual([]);
  });

  it('what streams live: prose before the first call; the call waits for the end', () => {
    const s = createRecoveryStream(options(tools));
    expect(s.push({ content: 'Let me look. ' })).toEqual([{ type: 'content', text: 'Let me look.' }]);
    expect(s.push({ content: call('Paris') })).toEqual([]);
    expect(s.push({ content: ' ok' })).toEqual([]);
    expect(s.finish().map((e) => e.type)).toEqual(['call-start', 'call-args', 'call-end', 'content']);
  });

  it('held past maxHeldBytes without a </think>: the call is real, whatever the split', () => {
    const text = `${call('Paris')}${' and more'.repeat(20)}</think>`;
    const o = () => options(tools, { maxHeldBytes: 120 });
    const r = whole(text, o());
    expect(names(r)).toEqual(['Paris']);
    expect(view(streamed(chunks(text, 1), o()))).toEqual(view(r));
    expect(view(streamed(chunks(text, 13), o()))).toEqual(view(r));
    // within the cap it is a draft
    expect(whole(text, options(tools, { maxHeldBytes: 4096 })).calls).toEqual([]);
  });
});
