/**
 * The perturbation generator's cases (tests/parsers/perturb-cases.ts: each published format x a
 * small model's slip x four schemas), read whole and streamed one character at a time and in
 * seeded random cuts (bench/perturb.ts also cuts each in two at every position). What must hold
 * for every one: no call with a wrong name or arguments, no call where the truth is text, text
 * left unread kept byte for byte, streamed equal to whole. The misses are counted by
 * bench/perturb.ts; a floor keeps the calls read from going down. Then each fix's own cases.
 */
import { describe, expect, it } from 'vitest';
import { options, streamed, toolsOf, whole } from './engine-helpers.js';
import { classify, generateCases } from './perturb-cases.js';

const cases = generateCases();

describe('generated near misses: format x perturbation x schema', () => {
  it('no wrong call, no lost byte, streamed equal to whole', () => {
    const bad = [];
    let correct = 0;
    for (const c of cases) {
      const k = classify(c);
      if (k.verdict === 'correct') correct++;
      if (k.verdict === 'wrong' || k.verdict === 'lost-bytes' || k.parity !== null)
        bad.push(`${k.verdict}${k.parity ? ` (streamed ${k.parity})` : ''} ${c.id}: ${k.got}`);
    }
    expect(bad).toEqual([]);
    expect(correct).toBeGreaterThanOrEqual(CORRECT_FLOOR);
  }, 60_000);
});

/** Calls read right today (bench/perturb.ts): raise it when a fix reads more. */
const CORRECT_FLOOR = 2888;

describe('a scalar written as a string in JSON arguments', () => {
  const search = {
    name: 'search',
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string' },
        limit: { type: 'integer' },
        ratio: { type: 'number' },
        exact: { type: 'boolean' },
        either: { type: ['integer', 'string'] },
      },
      required: ['query'],
    },
  };
  const tools = toolsOf(search);
  const read = (args: string) =>
    whole(`<tool_call>{"name": "search", "arguments": ${args}}</tool_call>`, options(tools));

  it('is typed by the schema when the parameter allows no string (repair string-value)', () => {
    const r = read('{"query": "q", "limit": "5", "ratio": "0.5", "exact": "true"}');
    expect(r.calls.map((c) => [JSON.parse(c.arguments), c.repairs])).toEqual([
      [{ query: 'q', limit: 5, ratio: 0.5, exact: true }, ['string-value']],
    ]);
  });

  it('stays the string it was where the schema allows one, or where it spells no such value', () => {
    expect(JSON.parse(read('{"query": "5", "either": "5"}').calls[0]?.arguments ?? '')).toEqual({
      query: '5',
      either: '5',
    });
    expect(JSON.parse(read('{"query": "q", "limit": "five"}').calls[0]?.arguments ?? '')).toEqual({
      query: 'q',
      limit: 'five',
    });
  });
});

describe('a line break written raw inside a JSON string', () => {
  const writeFile = {
    name: 'write_file',
    parameters: {
      type: 'object',
      properties: { path: { type: 'string' }, content: { type: 'string' } },
      required: ['path', 'content'],
    },
  };
  const tools = toolsOf(writeFile);
  const args = '{"path": "a.md", "content": "line one\n\tline two"}';
  it.each([
    [
      'DeepSeek V3.1',
      `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>write_file<｜tool▁sep｜>${args}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`,
    ],
    ['Mistral', `[TOOL_CALLS]write_file[ARGS]${args}`],
    ['Llama 3 python_tag', `<|python_tag|>{"name": "write_file", "parameters": ${args}}`],
    [
      'Kimi K2',
      `<|tool_calls_section_begin|><|tool_call_begin|>functions.write_file:0<|tool_call_argument_begin|>${args}<|tool_call_end|><|tool_calls_section_end|>`,
    ],
    [
      'gpt-oss',
      `<|start|>assistant<|channel|>commentary to=functions.write_file <|constrain|>json<|message|>${args}<|call|>`,
    ],
  ])('%s: read with the break in the value (repair raw-control-characters)', (_, text) => {
    const r = whole(text, options(tools));
    expect(
      r.calls.map((c) => [c.name, JSON.parse(c.arguments), c.repairs.includes('raw-control-characters')]),
    ).toEqual([['write_file', { path: 'a.md', content: 'line one\n\tline two' }, true]]);
    expect(r.content).toBeNull();
  });
});

describe('a renamed tool whose values only its schema types', () => {
  const tools = toolsOf({
    name: 'search',
    parameters: {
      type: 'object',
      properties: { query: { type: 'string' }, limit: { type: 'integer' } },
      required: ['query', 'limit'],
    },
  });
  it.each([
    [
      'Qwen3-Coder, another case',
      '<tool_call>\n<function=Search>\n<parameter=query>\nq\n</parameter>\n<parameter=limit>\n5\n</parameter>\n</function>\n</tool_call>',
      ['name-case'],
    ],
    [
      'Qwen3-Coder, functions. prefix',
      '<tool_call>\n<function=functions.search>\n<parameter=query>\nq\n</parameter>\n<parameter=limit>\n5\n</parameter>\n</function>\n</tool_call>',
      ['name-prefix'],
    ],
    [
      'Hermes, a quoted number',
      '<tool_call>{"name": "SEARCH", "arguments": {"query": "q", "limit": "5"}}</tool_call>',
      ['name-case'],
    ],
  ])('%s: typed by the declared tool, then fits it', (_, text, rename) => {
    const r = whole(text, options(tools));
    expect(r.calls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([
      ['search', { query: 'q', limit: 5 }],
    ]);
    expect(r.calls[0]?.repairs).toEqual(expect.arrayContaining([...rename, 'string-value']));
  });
  it('a value no type of the schema spells still leaves the renamed call text', () => {
    const text = '<tool_call>{"name": "SEARCH", "arguments": {"query": "q", "limit": "five"}}</tool_call>';
    const r = whole(text, options(tools));
    expect(r.calls).toEqual([]);
    expect(r.content).toBe(text);
  });
});

describe('a <function=NAME> body that is the arguments as one JSON string', () => {
  const tools = toolsOf({
    name: 'read_file',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  });
  it.each([
    ['Llama / Functionary', '<function=read_file>"{\\"path\\": \\"a.ts\\"}"</function>'],
    [
      'Qwen3-Coder',
      '<tool_call>\n<function=read_file>\n"{\\"path\\": \\"a.ts\\"}"\n</function>\n</tool_call>',
    ],
  ])('%s: decoded (repair string-arguments)', (_, text) => {
    const r = whole(text, options(tools));
    expect(r.calls.map((c) => [c.name, JSON.parse(c.arguments), c.repairs])).toEqual([
      ['read_file', { path: 'a.ts' }, ['string-arguments']],
    ]);
  });
  it.each([
    '<function=read_file>"a.ts"</function>',
    '<function=read_file>"{\\"path\\": \\"a.ts\\"}" and more</function>',
    '<function=read_file>"{\\"path\\": \\"a.ts\\"</function>',
  ])('%j: a string that is no object stays text', (text) => {
    const r = whole(text, options(tools));
    expect(r.calls).toEqual([]);
    expect(r.content).toBe(text);
  });
});

describe('two calls of a list glued without a comma', () => {
  const tools = toolsOf(
    { name: 'read_file', parameters: { type: 'object', properties: { path: { type: 'string' } } } },
    { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
  );
  const A = '{"name": "read_file", "arguments": {"path": "a"}}';
  const B = '{"name": "get_weather", "arguments": {"city": "Paris"}}';
  it.each([
    ['Mistral', `[TOOL_CALLS][${A}${B}]`],
    ['granite', `<|tool_call|>[${A}\n${B}]`],
    ['bare list', `[${A}${B}]`],
  ])('%s: both calls (repair missing-comma)', (_, text) => {
    const r = whole(text, options(tools));
    expect(r.calls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([
      ['read_file', { path: 'a' }],
      ['get_weather', { city: 'Paris' }],
    ]);
    expect(r.calls[0]?.repairs).toContain('missing-comma');
    expect(r.content).toBeNull();
  });
});

describe("Gemini's default_api. namespace on a call name", () => {
  const tools = toolsOf({
    name: 'read_file',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  });
  it.each([
    '<tool_call>{"name": "default_api.read_file", "arguments": {"path": "a"}}</tool_call>',
    '[TOOL_CALLS]default_api.read_file[ARGS]{"path": "a"}',
    '<tool_call>\n<function=default_api.read_file>\n<parameter=path>\na\n</parameter>\n</function>\n</tool_call>',
  ])('%j: the declared tool (repair name-prefix)', (text) => {
    const r = whole(text, options(tools));
    expect(r.calls.map((c) => [c.name, JSON.parse(c.arguments), c.repairs])).toEqual([
      ['read_file', { path: 'a' }, ['name-prefix']],
    ]);
  });
  it('arguments outside the schema leave it text', () => {
    const text = '<tool_call>{"name": "default_api.read_file", "arguments": {"file": "a"}}</tool_call>';
    expect(whole(text, options(tools)).content).toBe(text);
  });
});

describe('an improvised call with a number written as a string', () => {
  const tools = toolsOf({
    name: 'search',
    parameters: {
      type: 'object',
      properties: { query: { type: 'string' }, limit: { type: 'integer' } },
      required: ['query', 'limit'],
    },
  });
  it.each(['search(query="q", limit="5")', '{"tool": "search", "tool_input": {"query": "q", "limit": "5"}}'])(
    '%j: fits once typed, and is typed (repair string-value)',
    (text) => {
      const r = whole(text, options(tools));
      expect(
        r.calls.map((c) => [c.name, JSON.parse(c.arguments), c.repairs.includes('string-value')]),
      ).toEqual([['search', { query: 'q', limit: 5 }, true]]);
    },
  );
  it('a string that spells no integer still does not fit', () => {
    const text = 'search(query="q", limit="five")';
    expect(whole(text, options(tools)).content).toBe(text);
  });
});

describe('a closing tag misspelled as the last tag of the output', () => {
  const tools = toolsOf({
    name: 'read_file',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  });
  it.each([
    ['Hermes', '<tool_call>\n{"name": "read_file", "arguments": {"path": "a"}}\n</tool_cal>'],
    ['GLM', '<tool_call>read_file\n<arg_key>path</arg_key>\n<arg_value>a</arg_value>\n</tool_cal>'],
    [
      'Qwen3-Coder',
      '<tool_call>\n<function=read_file>\n<parameter=path>\na\n</parameter>\n</functon>\n</tool_call>',
    ],
    ['Llama / Functionary', '<function=read_file>{"path": "a"}</functon>'],
  ])('%s: the call, the slip gone (repair mismatched-close-tag)', (_, text) => {
    const r = whole(text, options(tools));
    expect(r.calls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([['read_file', { path: 'a' }]]);
    expect(r.calls[0]?.repairs).toContain('mismatched-close-tag');
    expect(r.content).toBeNull();
  });
  it.each([
    '<tool_call>read_file\n<arg_key>path</arg_key>\n<arg_value>a</arg_value>\n</tool_cal> and more',
    '<tool_call>read_file\n<arg_key>path</arg_key>\n<arg_value>a</arg_value>\n</div>',
    '<tool_call>read_file\n<arg_key>file</arg_key>\n<arg_value>a</arg_value>\n</tool_cal>',
  ])('%j: not the last tag, another tag, or a key outside the schema: no repaired call', (text) => {
    const r = whole(text, options(tools));
    expect(r.calls.filter((c) => c.repairs.includes('mismatched-close-tag'))).toEqual([]);
  });
});

describe('Functionary v3.2 arguments sent as one JSON string', () => {
  const tools = toolsOf({
    name: 'read_file',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  });
  it('>>>NAME then the string: decoded (repair string-arguments)', () => {
    const r = whole('Checking.>>>read_file\n"{\\"path\\": \\"a\\"}"', options(tools));
    expect(r.calls.map((c) => [c.name, JSON.parse(c.arguments), c.repairs])).toEqual([
      ['read_file', { path: 'a' }, ['string-arguments']],
    ]);
    expect(r.content).toBe('Checking.');
  });
  it.each(['>>>read_file\n"a.txt"', '>>>read_file\n"{\\"path\\": \\"a\\"'])(
    '%j: no object in a whole string, no call',
    (text) => {
      const r = whole(text, options(tools));
      expect(r.calls).toEqual([]);
      expect(r.content).toBe(text);
    },
  );
});

describe('an improvised call naming a declared tool in another case or namespace', () => {
  const search = {
    name: 'search',
    parameters: {
      type: 'object',
      properties: { query: { type: 'string' }, limit: { type: 'integer' } },
      required: ['query', 'limit'],
    },
  };
  const tools = toolsOf(search, {
    name: 'read',
    parameters: { type: 'object', properties: { file_path: { type: 'string' } }, required: ['file_path'] },
  });
  it.each([
    ['keyword call, upper case', 'SEARCH(query="q", limit=5)', ['name-case']],
    [
      'keyword call, functions. and another case',
      'functions.Search(query="q", limit="5")',
      ['name-prefix', 'name-case'],
    ],
    ['{tool, tool_input}', '{"tool": "Search", "tool_input": {"query": "q", "limit": 5}}', ['name-case']],
    [
      '{tool, args} with a call id',
      '{"id": "call_1", "tool": "default_api.search", "args": {"query": "q", "limit": 5}}',
      ['name-prefix'],
    ],
    ['a tag', '<Search><query>q</query><limit>5</limit></Search>', ['name-case']],
  ])('%s: the declared tool, the repair named', (_, text, rename) => {
    const r = whole(text, options(tools));
    expect(r.calls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([
      ['search', { query: 'q', limit: 5 }],
    ]);
    expect(r.calls[0]?.repairs).toEqual(expect.arrayContaining(rename));
    expect(r.content).toBeNull();
    // streamed one character at a time: the same
    const s = streamed([...text], options(tools));
    expect(s.calls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([
      ['search', { query: 'q', limit: 5 }],
    ]);
    expect(s.content).toBeNull();
  });
  it.each([
    ['flat arguments beside it', '{"tool": "Search", "query": "q", "limit": 5}'],
    ['a name as a key', '{"Search": {"query": "q", "limit": 5}}'],
    ['positional arguments', 'SEARCH("q", 5)'],
    ['a name before an object', 'Search {"query": "q", "limit": 5}'],
    ['an attribute value', '<call name="Search"><query>q</query><limit>5</limit></call>'],
    ['arguments the schema refuses', 'SEARCH(query="q", limit="five")'],
    ['after a sentence', 'Let me look.\nSEARCH(query="q", limit=5)'],
    ['a name one letter off', '{"tool": "Reads", "args": {"file_path": "a"}}'],
  ])('%s: text, byte for byte', (_, text) => {
    const r = whole(text, options(tools));
    expect(r.calls).toEqual([]);
    expect(r.content).toBe(text);
    const s = streamed([...text], options(tools));
    expect(s.calls).toEqual([]);
    expect(s.content).toBe(text);
  });
  it('two declared tools equal but for case: another case names neither', () => {
    const two = toolsOf(search, { ...search, name: 'Search' });
    const text = '{"tool": "SEARCH", "args": {"query": "q", "limit": 5}}';
    expect(whole(text, options(two)).content).toBe(text);
    expect(whole('SEARCH(query="q", limit=5)', options(two)).calls).toEqual([]);
  });
});

describe('JSON arguments with keys written without quotes (a JavaScript object literal)', () => {
  const tools = toolsOf({
    name: 'search',
    parameters: {
      type: 'object',
      properties: { query: { type: 'string' }, limit: { type: 'integer' } },
      required: ['query', 'limit'],
    },
  });
  it.each([
    ['Hermes', '<tool_call>\n{"name": "search", "arguments": {query: "q", limit: 5}}\n</tool_call>'],
    ['Mistral', '[TOOL_CALLS]search[ARGS]{query: "q", limit: 5}'],
    [
      'gpt-oss',
      '<|start|>assistant<|channel|>commentary to=functions.search <|constrain|>json<|message|>{query: "q", limit: 5}<|call|>',
    ],
    ['bare Llama JSON', '{name: "search", parameters: {query: "q", limit: 5}}'],
  ])('%s: read (repair unquoted-keys)', (_, text) => {
    const r = whole(text, options(tools));
    expect(r.calls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([
      ['search', { query: 'q', limit: 5 }],
    ]);
    expect(r.calls[0]?.repairs).toContain('unquoted-keys');
    expect(r.content).toBeNull();
  });
  it.each([
    '<tool_call>\n{"name": "search", "arguments": {query: q, limit: 5}}\n</tool_call>',
    '{name: "delete_all", parameters: {query: "q", limit: 5}}',
  ])('%j: a bare value, an undeclared tool: text', (text) => {
    const r = whole(text, options(tools));
    expect(r.calls).toEqual([]);
    expect(r.content).toBe(text);
  });
});

describe('an improvised call followed by a closing fence that was never opened', () => {
  const tools = toolsOf({
    name: 'read_file',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  });
  it('the call, the stray fence dropped (repair code-fence)', () => {
    const text = '{"tool": "read_file", "tool_input": {"path": "a"}}\n```';
    const r = whole(text, options(tools));
    expect(r.calls.map((c) => [c.name, JSON.parse(c.arguments), c.repairs])).toEqual([
      ['read_file', { path: 'a' }, ['code-fence']],
    ]);
    expect(r.content).toBeNull();
    expect(streamed([...text], options(tools)).calls).toHaveLength(1);
  });
  it.each([
    '{"tool": "read_file", "tool_input": {"path": "a"}}\n```\nmore',
    '{"tool": "read_file", "tool_input": {"path": "a```"}}\n```',
    '```',
  ])('%j: more after it, or another fence in the output: text', (text) => {
    expect(whole(text, options(tools)).content).toBe(text);
  });
});

describe('a call object with its arguments under "args"', () => {
  const tools = toolsOf({
    name: 'search',
    parameters: {
      type: 'object',
      properties: { query: { type: 'string' }, limit: { type: 'integer' } },
      required: ['query', 'limit'],
    },
  });
  it.each([
    ['Mistral', '[TOOL_CALLS][{"name": "search", "args": {"query": "q", "limit": 5}}]'],
    ['granite', '<|tool_call|>[{"name": "search", "args": {"query": "q", "limit": 5}}]'],
    ['Llama 3 python_tag', '<|python_tag|>{"name": "search", "args": {"query": "q", "limit": 5}}'],
    ['Hermes', '<tool_call>{"name": "search", "args": {"query": "q", "limit": 5}}</tool_call>'],
  ])('%s: read when the arguments fit (repair args-key)', (_, text) => {
    const r = whole(text, options(tools));
    expect(r.calls.map((c) => [c.name, JSON.parse(c.arguments), c.repairs])).toEqual([
      ['search', { query: 'q', limit: 5 }, ['args-key']],
    ]);
    expect(r.content).toBeNull();
  });
  it.each([
    '[TOOL_CALLS][{"name": "search", "args": {"query": "q", "lim": 5}}]',
    '<|python_tag|>{"name": "search", "args": {"q": "q"}}',
    '[TOOL_CALLS][{"name": "search", "args": {"query": "q", "limit": 5}, "arguments": {"query": "r", "limit": 1}}]',
  ])('%j: arguments the schema refuses, or beside "arguments": no call', (text) => {
    expect(whole(text, options(tools)).calls).toEqual([]);
  });
});

describe('JSON arguments with one closing brace too many', () => {
  const tools = toolsOf({
    name: 'read_file',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  });
  it.each([
    [
      'DeepSeek V3.1',
      '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>read_file<｜tool▁sep｜>{"path": "a"}}<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
    ],
    ['Llama / Functionary', '<function=read_file>{"path": "a"}}</function>'],
    [
      'gpt-oss',
      '<|start|>assistant<|channel|>commentary to=functions.read_file <|constrain|>json<|message|>{"path": "a"}}<|call|>',
    ],
  ])('%s: the call, the brace gone (repair extra-brace)', (_, text) => {
    const r = whole(text, options(tools));
    expect(r.calls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([['read_file', { path: 'a' }]]);
    expect(r.calls[0]?.repairs).toContain('extra-brace');
    expect(r.content).toBeNull();
  });
});
