/**
 * The readings recall14 added (docs/recall.md "recall14"), each with the cases that must stay text
 * beside it, whole and streamed one character at a time: the generator's cases
 * (tests/parsers/perturb-cases.ts, set 'recall14') are guarded by tests/parsers/perturb.test.ts;
 * these pin each rule's edges.
 */
import { describe, expect, it } from 'vitest';
import { READ_FILE, readBoth, toolsOf } from './engine-helpers.js';

const tools = toolsOf(READ_FILE);
const read = (text: string, cut = false) => readBoth(text, tools, cut);
const A = { path: 'a' };

describe('the output ends inside the closing marker (repair unclosed-envelope)', () => {
  const glm = '<tool_call>read_file\n<arg_key>path</arg_key>\n<arg_value>a</arg_value>\n';
  const qwen = '<tool_call>\n<function=read_file>\n<parameter=path>\na\n</parameter>\n</function>\n';
  const seed = '<seed:tool_call>\n<function=read_file>\n<parameter=path>a</parameter>\n</function>\n';
  const minimax =
    '<minimax:tool_call>\n<invoke name="read_file">\n<parameter name="path">a</parameter>\n</invoke>\n';
  const dsml =
    '<｜DSML｜function_calls>\n<｜DSML｜invoke name="read_file">\n<｜DSML｜parameter name="path" string="true">a</｜DSML｜parameter>\n</｜DSML｜invoke>\n';
  const v31 =
    '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>read_file<｜tool▁sep｜>{"path": "a"}<｜tool▁call▁end｜>';
  const kimi =
    '<|tool_calls_section_begin|><|tool_call_begin|>functions.read_file:0<|tool_call_argument_begin|>{"path": "a"}<|tool_call_end|>';
  const harmony =
    '<|start|>assistant<|channel|>commentary to=functions.read_file <|constrain|>json<|message|>{"path": "a"}';
  it.each([
    ['GLM', `${glm}</tool_ca`],
    ['GLM, two code units of the tag', `${glm}</`],
    ['Qwen3-Coder, the wrapper', `${qwen}</tool_ca`],
    ['Seed-OSS', `${seed}</seed:tool_ca`],
    ['MiniMax-M2', `${minimax}</minimax:tool_ca`],
    ['DeepSeek V3.2 DSML', `${dsml}</｜DSML｜function_cal`],
    ['DeepSeek V3.1 section', `${v31}<｜tool▁calls▁en`],
    ['Kimi K2 section', `${kimi}<|tool_calls_section_en`],
    ['gpt-oss terminator', `${harmony}<|cal`],
    ['a Llama 3.x custom-tool call', '<function=read_file>{"path": "a"}</functi'],
  ])('%s: one call, the cut marker gone with it', (_, text) => {
    const r = read(text);
    expect(r.calls.map((c) => c.slice(0, 2))).toEqual([['read_file', A]]);
    expect(r.calls[0]?.[2]).toContain('unclosed-envelope');
    expect(r.content).toBeNull();
  });

  it('the text before it stays content', () => {
    expect(read(`Reading it.\n${glm}</tool_ca`)).toEqual({
      calls: [['read_file', A, ['unclosed-envelope']]],
      content: 'Reading it.',
    });
  });

  it.each([
    ['an undeclared tool', `${glm.replace('read_file', 'delete_all')}</tool_ca`],
    ['an undeclared tool in a Seed-OSS block', `${seed.replace('read_file', 'delete_all')}</seed:tool_ca`],
    ['an undeclared tool in a Qwen3-Coder wrapper', `${qwen.replace('read_file', 'delete_all')}</tool_ca`],
  ])('%s: the text byte for byte', (_, text) => {
    expect(read(text)).toEqual({ calls: [], content: text });
  });

  it('cut by the token limit: the text byte for byte, as for any envelope the limit cut', () => {
    for (const text of [`${glm}</tool_ca`, `${seed}</seed:tool_ca`, `${harmony}<|cal`]) {
      expect(read(text, true)).toEqual({ calls: [], content: text });
    }
  });
});

describe('Functionary v3.2: the recipient line ended by CRLF', () => {
  it('reads the call, whole and one character at a time (the `\\r` and `\\n` apart)', () => {
    expect(read('>>>read_file\r\n{"path": "a"}').calls).toEqual([['read_file', A, []]]);
    expect(read('Let me look.\r\n>>>read_file\r\n{"path": "a"}\r\n')).toEqual({
      calls: [['read_file', A, []]],
      content: 'Let me look.',
    });
  });

  it('a `\\r` not before a line feed: not a recipient line, the text byte for byte', () => {
    const text = 'Let me look.\n>>>read_file\r{"path": "a"}';
    expect(read(text)).toEqual({ calls: [], content: text });
  });
});
