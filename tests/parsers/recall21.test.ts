/**
 * The reading recall21 added for the held-out set wild18: a Kimi K2 call block that lost its
 * `<|tool_call_argument_begin|>`, `<|tool_call_begin|> functions.NAME:0 {json} <|tool_call_end|>`
 * (vllm-project/vllm#31207 quotes it in streamed content, the section markers gone too), read
 * whole and one character at a time (readBoth), with the near misses that must stay text; and
 * adjacent string literals, no longer joined outside a pythonic call list (the limit recall20 left).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { DeclaredTool } from '../../parsers/types.js';
import {
  assertRandomSplits,
  options,
  READ_FILE,
  readBoth,
  toolsOf,
  WRITE_FILE,
  whole,
} from './engine-helpers.js';

const WEATHER: DeclaredTool = {
  name: 'get_weather',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
const tools = toolsOf(WEATHER, READ_FILE);
const block = (inner: string) => `<|tool_call_begin|>${inner}<|tool_call_end|>`;
const LEAKED = block(' functions.get_weather:0 {"city": "Tokyo"} ');

describe('Kimi K2: a call block without its argument marker', () => {
  it('reads the block vLLM quotes, alone or in its section, and keeps the prose before it', () => {
    const read = [['get_weather', { city: 'Tokyo' }, ['missing-argument-begin']]];
    expect(readBoth(LEAKED, tools)).toEqual({ calls: read, content: null });
    expect(readBoth(`<|tool_calls_section_begin|>${LEAKED}<|tool_calls_section_end|>`, tools)).toEqual({
      calls: read,
      content: null,
    });
    expect(readBoth(`Checking Tokyo.\n${LEAKED}`, tools)).toEqual({
      calls: read,
      content: 'Checking Tokyo.',
    });
  });

  it('keeps the call id, and reads a section mixing blocks with and without the marker', () => {
    const section = `<|tool_calls_section_begin|>${block('functions.read_file:0<|tool_call_argument_begin|>{"path": "a"}')}${block('get_weather:1 {"city": "Oslo"}')}<|tool_calls_section_end|>`;
    expect(readBoth(section, tools).calls).toEqual([
      ['read_file', { path: 'a' }, []],
      ['get_weather', { city: 'Oslo' }, ['missing-argument-begin']],
    ]);
    expect(whole(LEAKED, options(tools)).calls[0]?.id).toBe('functions.get_weather:0');
  });

  it('keeps as text: an undeclared tool, no name, arguments the schema refuses, anything beside the object', () => {
    for (const inner of [
      'functions.get_time:0 {"city": "Tokyo"}', // undeclared
      'functions.:0 {"city": "Tokyo"}', // no name (not inferred without the marker)
      '0 {"city": "Tokyo"}',
      'functions.get_weather {"city": "Tokyo"}', // no index
      'functions.get_weather:0 {"town": "Tokyo"}', // a key the tool lacks
      'functions.get_weather:0 {}', // required key missing
      'functions.get_weather:0 {"city": 3}', // wrong type
      "functions.get_weather:0 {'city': 'Tokyo'}", // not JSON
      'functions.get_weather:0 {"city": "Tokyo"} and more', // text after the object
      'functions.get_weather:0 {"city": "Tokyo"} {"city": "Oslo"}', // two objects
      'functions.get_weather:0 ["Tokyo"]', // not an object
      'I will call functions.get_weather:0 {"city": "Tokyo"}', // prose before the id
    ]) {
      const text = block(inner);
      expect(readBoth(text, tools), inner).toEqual({ calls: [], content: text });
    }
  });

  it('a section with a block it cannot read falls back to its blocks one by one, as before', () => {
    // as for a block that lost its marker before recall21: the section is not read whole, each
    // block alone is; the unreadable one stays text
    const bad = `<|tool_calls_section_begin|>${LEAKED}${block('functions.get_time:1 {"city": "Oslo"}')}<|tool_calls_section_end|>`;
    const r = readBoth(bad, tools);
    expect(r.calls).toEqual([['get_weather', { city: 'Tokyo' }, ['missing-argument-begin']]]);
    expect(r.content).toContain('functions.get_time:1 {"city": "Oslo"}');
  });

  it('keeps a block cut before its end as text', () => {
    const cut = '<|tool_call_begin|> functions.get_weather:0 {"city": "Tokyo"}';
    expect(readBoth(cut, tools, true)).toEqual({ calls: [], content: cut });
  });

  it("never takes a later block's argument marker for its own", () => {
    // before recall21 the first block's head ran into the second block, a name no tool has, and
    // the whole section stayed text; now the first block is refused alone and the second read
    const text = `<|tool_calls_section_begin|>${block('functions.get_weather:0 Tokyo')}${block('functions.read_file:1<|tool_call_argument_begin|>{"path": "a"}')}<|tool_calls_section_end|>`;
    const r = readBoth(text, tools);
    expect(r.calls).toEqual([['read_file', { path: 'a' }, []]]);
    expect(r.content).toContain('functions.get_weather:0 Tokyo');
  });

  it('streams in any chunking as it reads whole', () => {
    const texts = [
      LEAKED,
      `Checking.\n${LEAKED}`,
      `<|tool_calls_section_begin|>${LEAKED}${block('get_weather:1 {"city": "Oslo"}')}<|tool_calls_section_end|>`,
      block('functions.get_weather:0 {"town": "Tokyo"}'),
      block('functions.get_weather:0 {"city": "Tokyo"} x'),
    ];
    assertRandomSplits(texts.length, (k) => ({ text: texts[k] ?? '', opts: () => options(tools) }), 21_001);
  });
});

/**
 * The known limit recall20 left: the improvised reader read `{"content": "x" "y"}` as `"xy"`
 * (Python joins adjacent string literals), and `"He said "" hi"` as `"He said  hi"`, the quotes
 * the model left unescaped dropped. Adjacent strings are now joined only as Python writes them,
 * a blank between, in a pythonic call list's arguments; a quote right after a string's close is
 * never joined.
 */
describe('adjacent string literals', () => {
  const tools = toolsOf(WRITE_FILE);

  it('are no value in a JSON object, a dict, a list or a call the improvised reader reads', () => {
    for (const text of [
      '{"tool": "write_file", "args": {"path": "a", "content": "He said "" hi"}}',
      "{'name': 'write_file', 'arguments': {'path': 'a', 'content': 'x' 'y'}}",
      'write_file(path="a", content="x" "y")',
      'write_file(path="a", content="x""y")',
      '<write_file>{"path": "a", "content": "x" "y"}</write_file>',
    ])
      expect(readBoth(text, tools), text).toEqual({ calls: [], content: text });
  });

  it('are joined in a pythonic call list with a blank between, and never when they touch', () => {
    expect(readBoth('[write_file(path="a", content="x" "y")]', tools).calls).toEqual([
      ['write_file', { path: 'a', content: 'xy' }, []],
    ]);
    for (const text of ['[write_file(path="a", content="x""y")]', "[write_file(path='a', content='x''y')]"])
      expect(readBoth(text, tools), text).toEqual({ calls: [], content: text });
  });

  it("inside Hermes' tag or as a bare JSON call, go to the unescaped-quotes reading as one string", () => {
    for (const text of [
      '<tool_call>{"name": "write_file", "arguments": {"path": "a", "content": "x" "y"}}</tool_call>',
      '{"name": "write_file", "arguments": {"path": "a", "content": "x" "y"}}',
    ])
      expect(readBoth(text, tools).calls, text).toEqual([
        ['write_file', { path: 'a', content: 'x" "y' }, ['unescaped-quotes']],
      ]);
  });

  it('property: a value written with its quotes unescaped is read exactly or not at all by the improvised reader', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom('a', 'b', ' ', '"', '""', '" "', "'", ',', ':', '.'), {
          minLength: 1,
          maxLength: 12,
        }),
        fc.constantFrom(
          (v: string) => `{"tool": "write_file", "args": {"path": "p", "content": "${v}"}}`,
          (v: string) => `{"name": "write_file", "arguments": {"path": "p", "content": "${v}"}}`,
          (v: string) => `write_file(path="p", content="${v}")`,
          // not the pythonic list: there `content="" "a"` is Python for "a", read as Python
        ),
        (parts, wrap) => {
          const v = parts.join('');
          // three quotes in a row open a Python triple-quoted string (`""""""` is ''): still read
          // as Python, a limit left (docs/recall.md)
          fc.pre(!`"${v}"`.includes('"""'));
          const r = whole(wrap(v), options(tools));
          for (const c of r.calls) expect(JSON.parse(c.arguments).content, wrap(v)).toBe(v);
        },
      ),
      { numRuns: 2000, seed: 21_003 },
    );
  });
});

/**
 * The other limit recall20 left: quotes left unescaped inside a string argument were read only
 * in Hermes' closed body. A bare JSON call that is the whole output is read the same way (the
 * `json` family, repair `unescaped-quotes`, schema-gated): the two outputs hermes-agent's PRs give
 * of what weak local models write into write_file.content, without the Hermes tag.
 */
function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

describe('unescaped quotes in a bare JSON call', () => {
  const tools = toolsOf(WRITE_FILE);
  const call = (content: string, key = 'arguments') =>
    `{"name": "write_file", "${key}": {"path": "a.py", "content": "${content}"}}`;

  it('reads the call with the quotes kept, "arguments" or Llama\'s "parameters", alone or in a list', () => {
    for (const [text, content] of [
      [call('env.get("KEY", "default")'), 'env.get("KEY", "default")'],
      [call('env.get("KEY", "default")', 'parameters'), 'env.get("KEY", "default")'],
      [call('def f():\\n    """Docstring."""\\n    pass'), 'def f():\n    """Docstring."""\n    pass'],
      [`[${call('He said "hello" to me')}]`, 'He said "hello" to me'],
    ] as const)
      expect(readBoth(text, tools).calls, text).toEqual([
        ['write_file', { path: 'a.py', content }, ['unescaped-quotes']],
      ]);
  });

  it('keeps as text: a key the tool lacks, an undeclared tool, a fence, text after, an odd count', () => {
    for (const text of [
      '{"name": "write_file", "arguments": {"path": "a", "content": "He said "hello" to me", "mode": "x"}}',
      '{"name": "edit_file", "arguments": {"path": "a", "content": "He said "hello" to me"}}',
      `\`\`\`json\n${call('He said "hello" to me')}\n\`\`\``,
      `${call('He said "hello" to me')} done`,
      call('echo "hi'),
    ])
      expect(readBoth(text, tools), text).toEqual({ calls: [], content: text });
  });

  it('property: a value written with its quotes unescaped is read exactly or not at all', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom('a', ' ', '"', '""', '", "', '": "', ',', ':', '{', '}', '[', ']'), {
          minLength: 1,
          maxLength: 10,
        }),
        fc.boolean(),
        (parts, first) => {
          const v = parts.join('');
          fc.pre(!`"${v}"`.includes('"""'));
          const args = first ? `"content": "${v}", "path": "p"` : `"path": "p", "content": "${v}"`;
          const text = `{"name": "write_file", "arguments": {${args}}}`;
          // valid JSON means what it says (`"", "": "a` is an empty value and a key "")
          fc.pre(!isJson(text));
          const r = whole(text, options(tools));
          // the readings through this repair (the json family's missing-brace reading of such
          // text, older, is not this property's: docs/recall.md, recall21's left)
          for (const c of r.calls)
            if (c.repairs.includes('unescaped-quotes')) expect(JSON.parse(c.arguments).content, text).toBe(v);
        },
      ),
      { numRuns: 3000, seed: 21_004 },
    );
  });
});
