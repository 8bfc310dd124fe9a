/**
 * Issue 21: a call written before a bare `</think>` is a draft even when another call follows
 * the close; the draft must never be promoted over the call after the close, whichever family
 * writes the draft (a whole-output family that kept the rest as content used to hide the close).
 */
import { describe, expect, it } from 'vitest';
import { collectEvents, createRecoveryStream, recoverMessage } from '../../parsers/recover.js';
import type { DeclaredTool } from '../../parsers/types.js';

const tools = new Map<string, DeclaredTool>([
  [
    'get_weather',
    {
      name: 'get_weather',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  ],
]);
const options = () => {
  let n = 0;
  return { tools, newId: () => `call_${n++}` };
};
const REAL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Real"}}\n</tool_call>';
const DRAFTS: Record<string, string> = {
  pythonic: '[get_weather(city="Draft")]',
  hermes: '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Draft"}}\n</tool_call>',
  'bare JSON': '{"name": "get_weather", "arguments": {"city": "Draft"}}',
  'qwen3-coder':
    '<tool_call>\n<function=get_weather>\n<parameter=city>\nDraft\n</parameter>\n</function>\n</tool_call>',
  mistral: '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Draft"}}]',
  lfm2: '<|tool_call_start|>[get_weather(city="Draft")]<|tool_call_end|>',
  improvised: '{"tool": "get_weather", "args": {"city": "Draft"}}',
};

describe('a draft before a bare </think>, a call after it', () => {
  for (const [family, draft] of Object.entries(DRAFTS)) {
    it(`${family}: only the call after the close is a call, streamed or not`, () => {
      const text = `${draft}\n</think>\n${REAL}`;
      const r = recoverMessage({ content: text, reasoning: null }, options());
      expect(r.calls.map((c) => JSON.parse(c.arguments))).toEqual([{ city: 'Real' }]);
      expect(r.content).toContain('Draft');
      const s = createRecoveryStream(options());
      const events = [];
      for (const ch of text) events.push(...s.push({ content: ch }));
      events.push(...s.finish());
      const streamed = collectEvents(events, s);
      expect(streamed.calls.map((c) => c.arguments)).toEqual(r.calls.map((c) => c.arguments));
      expect(streamed.content).toBe(r.content);
    });
  }
});
