/**
 * The readings recall9 added (docs/recall.md "Escaped quotes, a brace before the end marker and
 * real near misses"), each with the cases that must stay text beside it, whole and streamed one
 * character at a time: the generator's cases (tests/parsers/perturb-cases.ts, set 'recall9') are
 * guarded by tests/parsers/perturb.test.ts; these pin each rule's edges.
 */
import { describe, expect, it } from 'vitest';
import { unescapeOutsideStrings } from '../../parsers/kit/lenient-json.js';
import { READ_FILE, readBoth, toolsOf, WRITE_FILE } from './engine-helpers.js';

const tools = toolsOf(READ_FILE, WRITE_FILE, {
  name: 'list_files',
  parameters: { type: 'object', properties: {} },
});

/** The calls read (name, arguments, repairs), the content, and that one char at a time reads the same. */
const read = (text: string) => readBoth(text, tools);

const stays = (text: string) => expect(read(text)).toEqual({ calls: [], content: text });

describe('quotes escaped outside any string (repair escaped-quotes)', () => {
  it('unescapes one run per value, from the first backslash to the close of its bracket', () => {
    expect(unescapeOutsideStrings('{"a": {\\"b\\": \\"c}\\\\\\"\\"}}')).toBe('{"a": {"b": "c}\\""}}');
    expect(unescapeOutsideStrings('{\\"p\\": 1}')).toBe('{"p": 1}');
    // nothing outside a string, a run outside every bracket, a raw quote inside a run, an escape
    // JSON lacks: not this slip
    expect(unescapeOutsideStrings('{"a": "\\"b\\""}')).toBeNull();
    expect(unescapeOutsideStrings('\\"a\\"')).toBeNull();
    expect(unescapeOutsideStrings('{\\"p\\": "a"}')).toBeNull();
    expect(unescapeOutsideStrings('{\\"p\\": \\q}')).toBeNull();
  });

  it.each([
    [
      'Hermes, the arguments',
      '<tool_call>{"name": "read_file", "arguments": {\\"path\\": \\"a\\"}}</tool_call>',
    ],
    [
      'Hermes, the whole object',
      '<tool_call>{\\"name\\": \\"read_file\\", \\"arguments\\": {\\"path\\": \\"a\\"}}</tool_call>',
    ],
    ['Mistral list', '[TOOL_CALLS][{\\"name\\": \\"read_file\\", \\"arguments\\": {\\"path\\": \\"a\\"}}]'],
    ['bare Llama JSON', '{\\"name\\": \\"read_file\\", \\"parameters\\": {\\"path\\": \\"a\\"}}'],
    [
      'Kimi K2',
      '<|tool_call_begin|>functions.read_file:0<|tool_call_argument_begin|>{\\"path\\": \\"a\\"}<|tool_call_end|>',
    ],
  ])('%s: read when the arguments fit', (_, text) => {
    const r = read(text);
    expect(r.calls).toEqual([['read_file', { path: 'a' }, expect.arrayContaining(['escaped-quotes'])]]);
    expect(r.content).toBeNull();
  });

  it('escapes inside the escaped strings are their own: quotes and line breaks in a value', () => {
    const text =
      '<tool_call>{"name": "write_file", "arguments": {\\"path\\": \\"n.md\\", \\"content\\": \\"say \\\\\\"hi\\\\\\"\\\\nbye}\\"}}</tool_call>';
    expect(read(text).calls).toEqual([
      ['write_file', { path: 'n.md', content: 'say "hi"\nbye}' }, ['escaped-quotes']],
    ]);
  });

  it.each([
    // undeclared, arguments the schema refuses, a raw quote mixed into the run, a fenced sample
    '<tool_call>{"name": "delete_files", "arguments": {\\"path\\": \\"a\\"}}</tool_call>',
    '<tool_call>{"name": "read_file", "arguments": {\\"nope\\": \\"a\\"}}</tool_call>',
    '<tool_call>{"name": "read_file", "arguments": {\\"path\\": "a"}}</tool_call>',
    'Escape it like this:\n\n```\n<tool_call>{"name": "read_file", "arguments": {\\"path\\": \\"a\\"}}</tool_call>\n```\n\nand it breaks.',
    'The log said {\\"path\\": \\"a\\"} and nothing else.',
  ])('%j stays text', stays);
});

describe('the last brace missing right before an end marker (repair missing-brace)', () => {
  it.each([
    [
      'Kimi K2',
      '<|tool_call_begin|>functions.read_file:0<|tool_call_argument_begin|>{"path": "a"<|tool_call_end|>',
    ],
    ['DeepSeek V3.1', '<｜tool▁call▁begin｜>read_file<｜tool▁sep｜>{"path": "a"<｜tool▁call▁end｜>'],
    [
      'gpt-oss',
      '<|channel|>commentary to=functions.read_file <|constrain|>json<|message|>{"path": "a"<|call|>',
    ],
    ['<function=>', '<function=read_file>{"path": "a"</function>'],
  ])('%s: read when the arguments fit', (_, text) => {
    expect(read(text)).toEqual({ calls: [['read_file', { path: 'a' }, ['missing-brace']]], content: null });
  });

  it.each([
    // arguments the schema refuses (this reading alone is schema-gated), three braces missing,
    // DeepSeek V3's fence closed over the object (vLLM's test_malformed_input refuses it too)
    '<function=read_file>{"pth": "a"</function>',
    '<function=read_file>{"path": {"a": {"b": [1</function>',
    '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>read_file\n```json\n{"path": "a"\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
    '<function=delete_files>{"path": "a"</function>',
  ])('%j stays text', stays);
});

describe('GLM argument tags a model broke', () => {
  it.each([
    // vllm-project/vllm#54971 (GLM-4.7), both orders
    [
      'a closing tag twice',
      '<tool_call>read_file<arg_key>path</arg_key></arg_key><arg_value>a</arg_value></tool_call>',
      'doubled-arg-tag',
    ],
    [
      'an opening tag twice',
      '<tool_call>read_file<arg_key><arg_key>path</arg_key><arg_value>a</arg_value></tool_call>',
      'doubled-arg-tag',
    ],
    // getsigit/sigit#95
    [
      '<tool_call> for the first <arg_key>',
      '<tool_call>read_file<tool_call>path</arg_key><arg_value>a</arg_value></tool_call>',
      'tool-call-for-arg-key',
    ],
  ])('%s: read when the arguments fit', (_, text, repair) => {
    expect(read(text)).toEqual({ calls: [['read_file', { path: 'a' }, [repair]]], content: null });
  });

  it('NAME</arg_value> alone: a call without arguments (fw-ai-external/python-sdk#119)', () => {
    expect(read('<tool_call>list_files</arg_value></tool_call>')).toEqual({
      calls: [['list_files', {}, ['stray-arg-tag']]],
      content: null,
    });
  });

  it.each([
    // a tool that requires an argument, or text after the stray tag
    '<tool_call>read_file</arg_value></tool_call>',
    '<tool_call>list_files</arg_value>oops</tool_call>',
    // read as calls before recall9 with the markup in a key or a value (exo-explore/exo#2187)
    '<tool_call>read_file<arg_key>path</arg_key>=<arg_value>a</arg_value></tool_call>',
    '<tool_call>read_file<arg_key>path</arg_key><arg_value>a</arg_key></tool_call>',
    '<tool_call>read_file<arg_key><arg_key>nope</arg_key><arg_value>a</arg_value></tool_call>',
    '<tool_call>read_file<arg_key>a<arg_key>path</arg_key><arg_value>a</arg_value></tool_call>',
    // <tool_call> for a later <arg_key>, or for an undeclared tool
    '<tool_call>write_file<arg_key>path</arg_key><arg_value>a</arg_value><tool_call>content</arg_key><arg_value>b</arg_value></tool_call>',
    '<tool_call>delete_files<tool_call>path</arg_key><arg_value>a</arg_value></tool_call>',
  ])('%j stays text', stays);

  it('a value that holds an argument tag, closed by its own tag, is the value (smg-project/smg#1942)', () => {
    expect(
      read('<tool_call>read_file<arg_key>path</arg_key><arg_value>a</arg_value>b</arg_value></tool_call>')
        .calls,
    ).toEqual([]);
    expect(
      read('<tool_call>read_file<arg_key>path</arg_key><arg_value>a<arg_value>b</arg_value></tool_call>'),
    ).toEqual({
      calls: [['read_file', { path: 'a<arg_value>b' }, []]],
      content: null,
    });
  });
});

describe('DeepSeek DSML with its bar spelled otherwise (repair dsml-bar)', () => {
  const dsml = (bar: string, name: string, key: string) =>
    `<${bar}DSML${bar}function_calls>\n<${bar}DSML${bar}invoke name="${name}">\n<${bar}DSML${bar}parameter name="${key}" string="true">a</${bar}DSML${bar}parameter>\n</${bar}DSML${bar}invoke>\n</${bar}DSML${bar}function_calls>`;
  it.each(['｜｜', '‖', '|'])('%s: read when the arguments fit', (bar) => {
    expect(read(dsml(bar, 'read_file', 'path'))).toEqual({
      calls: [['read_file', { path: 'a' }, ['dsml-bar']]],
      content: null,
    });
  });
  it.each([
    dsml('‖', 'delete_files', 'path'),
    dsml('‖', 'read_file', 'nope'),
    dsml('‖', 'read_file', 'path').replace('</‖DSML‖function_calls>', ''),
    dsml('‖', 'read_file', 'path').replace('</‖DSML‖parameter>', '</｜DSML｜parameter>'),
    `In DeepSeek's format a call reads \`${dsml('|', 'read_file', 'path')}\`, which the server parses.`,
  ])('%j stays text', stays);
});
