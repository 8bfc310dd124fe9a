/**
 * The two readings recall17 added for the held-out set wild14, each with the near misses that
 * must stay text, read whole and one character at a time (readBoth):
 * - Gemma 4's pairs in parentheses, `<|tool_call>call:NAME(key: value, …)<tool_call|>`
 *   (NousResearch/hermes-agent#7457);
 * - a call section in the reasoning cut inside its own end marker by the end of the reasoning
 *   (anomalyco/opencode#8851: Kimi-K2's `<|tool_calls_section_end|`), promoted when the message
 *   has no content and no call, as a closed one is.
 * And the one recall19 added for wild16: reasoning that is all one whole-output call (GLM-4.7's
 * `<invoke name="bash">` with its parameters as child elements, anomalyco/opencode#6883), read as
 * content would read it when the message has no content and no call.
 */
import { describe, expect, it } from 'vitest';
import { createRecoveryStream, collectEvents, recoverMessage } from '../../parsers/recover.js';
import type { DeclaredTool } from '../../parsers/types.js';
import { readBoth as readBothRaw, toolsOf } from './engine-helpers.js';

/** readBoth, its calls as `{ name, arguments }`. */
function readBoth(text: string, tools: Map<string, DeclaredTool>) {
  const r = readBothRaw(text, tools);
  return { calls: r.calls.map(([name, args]) => ({ name, arguments: args })), content: r.content };
}

const SEARCH: DeclaredTool = {
  name: 'search',
  parameters: {
    type: 'object',
    properties: { query: { type: 'string' }, limit: { type: 'integer' } },
    required: ['query'],
  },
};
const BASH: DeclaredTool = {
  name: 'bash',
  parameters: {
    type: 'object',
    properties: { command: { type: 'string' }, description: { type: 'string' } },
    required: ['command'],
  },
};
const GLOB: DeclaredTool = {
  name: 'glob',
  parameters: { type: 'object', properties: { pattern: { type: 'string' } }, required: ['pattern'] },
};

describe('Gemma 4: <|tool_call>call:NAME(key: value, …)', () => {
  const tools = toolsOf(SEARCH);

  it('reads the pairs in parentheses: JSON strings, <|"|> strings, numbers', () => {
    const r = readBoth('<|tool_call>call:search(query: "blockchain news")<tool_call|>', tools);
    expect(r.calls).toEqual([{ name: 'search', arguments: { query: 'blockchain news' } }]);
    expect(r.content).toBeNull();
    const d = readBoth('<|tool_call>call:search(query: <|"|>a "b", c<|"|>, limit: 5)<tool_call|>', tools);
    expect(d.calls).toEqual([{ name: 'search', arguments: { query: 'a "b", c', limit: 5 } }]);
    // a number written as a delimited string is typed by the schema, as in braces
    const n = readBoth('<|tool_call>call:search(query: "x", limit: <|"|>3<|"|>)<tool_call|>', tools);
    expect(n.calls).toEqual([{ name: 'search', arguments: { query: 'x', limit: 3 } }]);
  });

  it('keeps the prose before the envelope as content', () => {
    const r = readBoth('Let me look that up.\n<|tool_call>call:search(query: "x")<tool_call|>', tools);
    expect(r.calls).toEqual([{ name: 'search', arguments: { query: 'x' } }]);
    expect(r.content).toBe('Let me look that up.');
  });

  it('near misses stay text byte for byte', () => {
    for (const text of [
      // an undeclared tool
      '<|tool_call>call:fetch(query: "x")<tool_call|>',
      // a required argument missing
      '<|tool_call>call:search(q: "x")<tool_call|>',
      // a bare word where a value belongs: not read as a string in parentheses
      '<|tool_call>call:search(query: blockchain news)<tool_call|>',
      // single quotes: never the word with its quotes
      "<|tool_call>call:search(query: 'x')<tool_call|>",
      // text after the closing parenthesis
      '<|tool_call>call:search(query: "x") and more<tool_call|>',
      // the parenthesis never closes
      '<|tool_call>call:search(query: "x"<tool_call|>',
      // outside the envelope: prose
      'You would write call:search(query: "x") for that.',
    ]) {
      const r = readBoth(text, tools);
      expect(r.calls, text).toEqual([]);
      expect(r.content, text).toBe(text);
    }
  });
});

const KIMI_CUT =
  'I will list and glob. <|tool_calls_section_begin|> <|tool_call_begin|> functions.bash:0 <|tool_call_argument_begin|> {"command": "ls -la"} <|tool_call_end|> <|tool_call_begin|> functions.glob:1 <|tool_call_argument_begin|> {"pattern": "*.json"} <|tool_call_end|> <|tool_calls_section_end|';

/** Reasoning only, read whole and streamed one character at a time. */
function fromReasoning(reasoning: string, content = '', cut = false) {
  let n = 0;
  const tools = toolsOf(BASH, GLOB);
  const whole = recoverMessage({ content, reasoning, cut }, { tools, newId: () => `c${n++}` });
  let m = 0;
  const s = createRecoveryStream({ tools, newId: () => `c${m++}` });
  const events = [];
  for (const ch of reasoning) events.push(...s.push({ reasoning: ch }));
  for (const ch of content) events.push(...s.push({ content: ch }));
  events.push(...s.finish({ cut }));
  const streamed = collectEvents(events, s);
  const calls = (r: typeof whole) => r.calls.map((c) => [c.name, JSON.parse(c.arguments)]);
  expect(calls(streamed)).toEqual(calls(whole));
  expect(streamed.content).toBe(whole.content);
  return whole;
}

describe('a call section in the reasoning cut inside its end marker', () => {
  it('is promoted when the message has no content and no call (ids kept)', () => {
    const r = fromReasoning(KIMI_CUT);
    expect(r.calls.map((c) => [c.id, c.name, JSON.parse(c.arguments)])).toEqual([
      ['functions.bash:0', 'bash', { command: 'ls -la' }],
      ['functions.glob:1', 'glob', { pattern: '*.json' }],
    ]);
    expect(r.reasoning).toBe(KIMI_CUT);
    expect(r.leaks[0]).toMatchObject({ source: 'reasoning', outcome: 'recovered' });
  });

  it('so is a Hermes block cut inside </tool_call> and a <think> the output left open', () => {
    const hermes = 'I will list. <tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_ca';
    expect(fromReasoning(hermes).calls.map((c) => c.name)).toEqual(['bash']);
    const r = readBoth(`<think>\n${hermes}`, toolsOf(BASH));
    expect(r.calls).toEqual([{ name: 'bash', arguments: { command: 'ls' } }]);
  });

  it('near misses stay reasoning, no call', () => {
    for (const [reasoning, content, cut] of [
      // the token limit cut the output
      [KIMI_CUT, '', true],
      // the message answered in content
      [KIMI_CUT, 'Here is the list.', false],
      // the section left open with no end marker begun: the end may have cut anything
      [KIMI_CUT.slice(0, -'<|tool_calls_section_end|'.length), '', false],
      // cut inside the arguments of the section's one call
      [
        'I will list. <|tool_calls_section_begin|><|tool_call_begin|>functions.bash:0<|tool_call_argument_begin|>{"command": "ls -l',
        '',
        false,
      ],
      // an undeclared tool in the section
      [KIMI_CUT.replace('functions.glob:1', 'functions.fetch:1'), '', false],
    ] as const) {
      const r = fromReasoning(reasoning, content, cut);
      expect(r.calls, reasoning.slice(-40)).toEqual([]);
      expect(r.reasoning).toBe(reasoning);
    }
  });
});

/** GLM-4.7's whole reasoning_content in OpenCode (anomalyco/opencode#6883). */
const INVOKE =
  '<invoke name="bash">\n  <command>bun test</command>\n  <description>Run tests</description>\n</invoke>';

describe('reasoning that is all one whole-output call', () => {
  it('is promoted when the message has no content and no call; the reasoning stays', () => {
    const r = fromReasoning(INVOKE);
    expect(r.calls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([
      ['bash', { command: 'bun test', description: 'Run tests' }],
    ]);
    expect(r.reasoning).toBe(INVOKE);
    expect(r.content).toBeNull();
    expect(r.leaks).toEqual([expect.objectContaining({ source: 'reasoning', outcome: 'recovered' })]);
  });

  it('so is a bare JSON call, and the same element in a <think> the output left open', () => {
    const json = ' {"name": "glob", "arguments": {"pattern": "*.md"}}\n';
    expect(fromReasoning(json).calls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([
      ['glob', { pattern: '*.md' }],
    ]);
    expect(readBoth(`<think>\n${INVOKE}`, toolsOf(BASH, GLOB)).calls).toEqual([
      { name: 'bash', arguments: { command: 'bun test', description: 'Run tests' } },
    ]);
  });

  it('near misses stay reasoning, no call', () => {
    for (const [reasoning, content, cut] of [
      // prose before or after the element: a draft among thoughts, not all of the reasoning
      [`I will run the tests.\n${INVOKE}`, '', false],
      [`${INVOKE}\nThen I read the output.`, '', false],
      // the message answered in content
      [INVOKE, 'The tests pass.', false],
      // the token limit cut the output
      [INVOKE, '', true],
      // an undeclared tool, a child the tool lacks, the required child missing
      [INVOKE.replace('"bash"', '"shell"'), '', false],
      [INVOKE.replace('</description>', '</description>\n  <cwd>/tmp</cwd>'), '', false],
      ['<invoke name="bash">\n  <description>Run tests</description>\n</invoke>', '', false],
      // the element left open by the end of the reasoning
      [INVOKE.slice(0, -'</invoke>'.length), '', false],
      // two calls, one of them undeclared: all or nothing
      [
        `[${JSON.stringify({ name: 'glob', arguments: { pattern: '*' } })}, ${JSON.stringify({ name: 'fetch', arguments: {} })}]`,
        '',
        false,
      ],
    ] as const) {
      const r = fromReasoning(reasoning, content, cut);
      expect(r.calls, reasoning.slice(0, 60)).toEqual([]);
      expect(r.reasoning).toBe(reasoning);
    }
  });
});
