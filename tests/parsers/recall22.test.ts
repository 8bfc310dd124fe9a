/**
 * The two limits recall21 left, whole and one character at a time (readBoth), random chunkings
 * equal whole:
 * - Qwen2.5's Hermes block whose arguments sit in a `function_call` object beside a stray
 *   `"kwargs{": {}` (gpustack/llama-box#16, wild18): the one object a holder keeps beside nothing
 *   but empty ones is read as the arguments (`parsers/kit/structured-reader.ts` heldArgs), when
 *   it fits the tool's schema and is the only reading;
 * - triple-quoted strings: `"""…"""` is one string only where the syntax is Python's (a pythonic
 *   call list, a Python-style call's arguments). In a JSON object, a dict or a list three quotes in
 *   a row are quotes left unescaped as much as Python's (`"""x"""`: `x` or `""x""`), so the output
 *   stays text byte for byte (`parsers/kit/python-literal.ts`, `parsers/kit/lenient-json.ts`
 *   escapeStrayQuotes). Before, Hermes' tag read `x`, the same object bare read `""x""`.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { DeclaredTool } from '../../parsers/types.js';
import { assertRandomSplits, options, readBoth, toolsOf, WRITE_FILE } from './engine-helpers.js';

const place = (name: string): DeclaredTool => ({
  name,
  parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
});
const tools = toolsOf(place('get_temperature'), place('get_weather'), {
  name: 'get_location',
  parameters: { type: 'object', properties: {} },
});
const tag = (body: string) => `<tool_call>\n${body}\n</tool_call>`;
/** gpustack/llama-box#16, Qwen2.5-7B-Instruct's block (wild18). */
const LLAMA_BOX =
  '{"name":"get_temperature","function_call":{"args":{"location":"ShenZhen"},"kwargs{":{}},"name":"get_temperature"}}';
const SHENZHEN = ['get_temperature', { location: 'ShenZhen' }];
const names = (r: ReturnType<typeof readBoth>) => r.calls.map((c) => [c[0], c[1]]);

describe('arguments held in an object beside empty ones (gpustack/llama-box#16)', () => {
  it("reads the block llama-box printed: the junk key's empty object, the name twice, a surplus brace", () => {
    const r = readBoth(tag(LLAMA_BOX), tools);
    expect(names(r)).toEqual([SHENZHEN]);
    expect(r.content).toBeNull();
  });

  it('reads the holder with no sibling, with kwargs, and bare (no tag)', () => {
    for (const text of [
      tag('{"name": "get_temperature", "function_call": {"args": {"location": "ShenZhen"}}}'),
      tag('{"name": "get_temperature", "function_call": {"args": {"location": "ShenZhen"}, "kwargs": {}}}'),
      tag('{"name": "get_temperature", "call": {"args": {"location": "ShenZhen"}, "extra": [], "more": {}}}'),
      '{"name": "get_temperature", "function_call": {"args": {"location": "ShenZhen"}, "kwargs": {}}}',
    ])
      expect(names(readBoth(text, tools)), text).toEqual([SHENZHEN]);
  });

  it('keeps as text, byte for byte: a sibling with a value, two objects, arguments that do not fit, no declared tool', () => {
    for (const body of [
      '{"name": "get_temperature", "function_call": {"args": {"location": "ShenZhen"}, "kwargs": {"unit": "c"}}}',
      '{"name": "get_temperature", "function_call": {"args": {"location": "ShenZhen"}, "note": "x"}}',
      '{"name": "get_temperature", "function_call": {"args": {"location": "ShenZhen"}, "n": 0}}',
      '{"name": "get_temperature", "function_call": {"args": {"location": "ShenZhen"}, "kw": [1]}}',
      '{"name": "get_temperature", "function_call": {"a": {"location": "X"}, "b": {"location": "Y"}}}',
      '{"name": "get_temperature", "function_call": {"args": {"city": "ShenZhen"}, "kwargs": {}}}',
      '{"name": "get_temperature", "function_call": {"args": {}, "kwargs": {}}}',
      '{"name": "get_time", "function_call": {"args": {"location": "ShenZhen"}, "kwargs": {}}}',
      '{"name": "get_temperature", "function_call": {"args": {"args": {"location": "ShenZhen"}}}}',
    ]) {
      expect(readBoth(tag(body), tools), body).toEqual({ calls: [], content: tag(body) });
      expect(readBoth(body, tools), body).toEqual({ calls: [], content: body });
    }
  });

  it('a holder that fits the tool itself is read as it is, as before', () => {
    const both = toolsOf({
      name: 'run',
      parameters: {
        type: 'object',
        properties: { args: { type: 'object' }, x: { type: 'integer' } },
      },
    });
    const body = '{"name": "run", "call": {"args": {"x": 1}}}';
    expect(names(readBoth(body, both))).toEqual([['run', { args: { x: 1 } }]]);
  });

  it('streams in any chunking as it reads whole', () => {
    const texts = [tag(LLAMA_BOX), `Checking.\n${tag(LLAMA_BOX)}`, tag(LLAMA_BOX.replace('{}', '{"a": 1}'))];
    assertRandomSplits(texts.length, (k) => ({ text: texts[k]!, opts: () => options(tools) }), 22_001);
  });
});

const files = toolsOf(WRITE_FILE);
const write = (content: string) => `{"path": "a.py", "content": ${content}}`;
/** The JSON shapes a value is written in: improvised, Hermes' tag, bare {name, arguments}, a dict. */
const JSON_SHAPES: [string, (content: string) => string][] = [
  ['improvised', (c) => `{"tool": "write_file", "args": ${write(c)}}`],
  ['hermes', (c) => `<tool_call>{"name": "write_file", "arguments": ${write(c)}}</tool_call>`],
  ['bare JSON', (c) => `{"name": "write_file", "arguments": ${write(c)}}`],
  ['python dict', (c) => `{'name': 'write_file', 'arguments': {'path': 'a.py', 'content': ${c}}}`],
];

describe('triple-quoted strings are read only where the syntax is Python', () => {
  it('keeps as text, byte for byte, a JSON object or dict whose value is three quotes each side', () => {
    for (const [what, make] of JSON_SHAPES)
      for (const value of ['"""x"""', '""""""', "'''x'''", '"""def f():\n    pass\n"""', '"""a" "b"""'])
        expect(readBoth(make(value), files), `${what}: ${value}`).toEqual({
          calls: [],
          content: make(value),
        });
  });

  it('reads them in a pythonic call list and in a Python-style call', () => {
    for (const text of [
      '[write_file(path="a.py", content="""x""")]',
      'write_file(path="a.py", content="""x""")',
      "[write_file(path='a.py', content='''x''')]",
    ])
      expect(names(readBoth(text, files)), text).toEqual([['write_file', { path: 'a.py', content: 'x' }]]);
  });

  it('still reads a docstring left unescaped inside a JSON string (recall20)', () => {
    const text =
      '{"name": "write_file", "arguments": {"path": "a.py", "content": "def f():\\n    """Doc."""\\n"}}';
    expect(names(readBoth(text, files))).toEqual([
      ['write_file', { path: 'a.py', content: 'def f():\n    """Doc."""\n' }],
    ]);
  });

  it('property: a value inside triple quotes is never a call in JSON, and read exactly or not at all in Python', () => {
    const piece = fc.constantFrom('a', ' ', '"', "'", ',', ':', '{', '}', '[', ']', 'x y', '\n', '""');
    fc.assert(
      fc.property(
        fc.array(piece, { maxLength: 10 }).map((p) => p.join('')),
        fc.constantFrom('"', "'"),
        (v, q) => {
          const value = `${q.repeat(3)}${v}${q.repeat(3)}`;
          for (const [what, make] of JSON_SHAPES)
            expect(readBoth(make(value), files).calls, `${what}: ${value}`).toEqual([]);
          const got = readBoth(`[write_file(path="a.py", content=${value})]`, files).calls;
          if (got.length > 0) expect(got.map((c) => c[1])).toEqual([{ path: 'a.py', content: v }]);
        },
      ),
      { numRuns: 400, seed: 22_002 },
    );
  });
});

/** wild19's misses that recall22 reads, each with the near misses that stay text. */
describe('wild19 near misses', () => {
  const exec: DeclaredTool = {
    name: 'exec',
    parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
  };
  const weather: DeclaredTool = {
    name: 'get_weather',
    parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
  };
  const save: DeclaredTool = {
    name: 'save_file',
    parameters: {
      type: 'object',
      properties: { filename: { type: 'string' }, content: { type: 'string' }, n: { type: 'integer' } },
      required: ['filename', 'content'],
    },
  };
  const set = toolsOf(exec, weather, save);
  const text = (t: string) => ({ calls: [], content: t });

  it("MiniMax-M2.7's [TOOL_CALL] with a single-quoted tool name (openclaw/openclaw#70331)", () => {
    const block = (name: string, args = '--command "echo test"') =>
      `[TOOL_CALL] {tool => ${name}, args => {${args}}} [/TOOL_CALL]`;
    expect(names(readBoth(block("'exec'"), set))).toEqual([['exec', { command: 'echo test' }]]);
    for (const t of [
      block("'exe c'"),
      block("'ls'"),
      block("'exec"),
      block("'exec'", "--command 'echo test'"),
      block("'exec'", '--cmd "x"'),
    ])
      expect(readBoth(t, set), t).toEqual(text(t));
  });

  it("Nemotron's call list closed by an orphan </TOOLCALL> (ai-dynamo/dynamo#10115)", () => {
    const list = '[{"name": "get_weather", "arguments": {"location": "NYC"}}]';
    const r = readBoth(`${list}</TOOLCALL>`, set);
    expect(r).toEqual({
      calls: [['get_weather', { location: 'NYC' }, ['missing-envelope-open']]],
      content: null,
    });
    for (const t of [
      `${list.replace('get_weather', 'get_time')}</TOOLCALL>`,
      `${list.replace('location', 'city')}</TOOLCALL>`,
      `Sure ${list}</TOOLCALL>`,
      `${list}</TOOLCALL> done`,
      `${list}</TOOLCALL></TOOLCALL>`,
      `${list.slice(1, -1)}</TOOLCALL>`,
    ])
      expect(readBoth(t, set), t).toEqual(text(t));
  });

  it("MiniMax-M3's invoke whose first parameter lost its opening tag (vllm-project/vllm#51075)", () => {
    const NS = ']<]minimax[>[';
    const block = (inner: string) =>
      `${NS}<tool_call>${NS}<invoke name="save_file">${inner.replaceAll('NS', NS)}${NS}</invoke>${NS}</tool_call>`;
    expect(readBoth(block('NSofferta.docxNS</filename>NS<content>HelloNS</content>'), set)).toEqual({
      calls: [['save_file', { filename: 'offerta.docx', content: 'Hello' }, ['missing-parameter-open']]],
      content: null,
    });
    for (const inner of [
      'NSofferta.docxNS</path>NS<content>HelloNS</content>', // a parameter the tool lacks
      'NSofferta.docxNS</filename>', // a required one missing
      'NS<filename>aNS</filename>NSbNS</content>', // not the first parameter
      'NSa NS<b>NS</filename>NS<content>HelloNS</content>', // markup in the value
      'NSxNS</n>NS<filename>aNS</filename>NS<content>bNS</content>', // a value the schema refuses
    ])
      expect(readBoth(block(inner), set), inner).toEqual(text(block(inner)));
  });

  it('streams in any chunking as it reads whole', () => {
    const NS = ']<]minimax[>[';
    const texts = [
      `[TOOL_CALL] {tool => 'exec', args => {--command "echo test"}} [/TOOL_CALL]`,
      '[{"name": "get_weather", "arguments": {"location": "NYC"}}]</TOOLCALL>',
      `${NS}<tool_call>${NS}<invoke name="save_file">${NS}offerta.docx${NS}</filename>${NS}<content>Hello${NS}</content>${NS}</invoke>${NS}</tool_call>`,
    ];
    assertRandomSplits(texts.length, (k) => ({ text: texts[k]!, opts: () => options(set) }), 22_003);
  });
});
