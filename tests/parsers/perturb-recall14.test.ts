/**
 * The readings recall14 added (docs/recall.md "recall14"), each with the cases that must stay text
 * beside it, whole and streamed one character at a time: the generator's cases
 * (tests/parsers/perturb-cases.ts, set 'recall14') are guarded by tests/parsers/perturb.test.ts;
 * these pin each rule's edges.
 */
import { describe, expect, it } from 'vitest';
import { recoverMessage } from '../../parsers/recover.js';
import { PARSERS } from '../../parsers/registry.js';
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

  it('gpt-oss: a terminator cut right after the object that lost its brace is no part of the value', () => {
    // before recall14 the lenient reading closed the string after the cut token: {"path": "a\"<|"}
    expect(read(`${harmony.slice(0, -1)}<|`)).toEqual({
      calls: [['read_file', A, ['missing-brace', 'unclosed-envelope']]],
      content: null,
    });
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

describe('a run of restarts that read no call (`<tool_call>x` repeated): one ask of the family a marker', () => {
  it('the second envelope is asked first and kept for the scanner; the cut text only when it reads calls', () => {
    const hermes = PARSERS.find((p) => p.name === 'hermes');
    if (!hermes?.spec.match) throw new Error('hermes has no match');
    const spec = hermes.spec as { match: NonNullable<typeof hermes.spec.match> };
    const orig = spec.match;
    let asks = 0;
    spec.match = (input) => {
      asks++;
      return orig(input);
    };
    try {
      const n = 400;
      const text = '<tool_call>x'.repeat(n);
      const r = recoverMessage(
        { content: text, reasoning: null },
        { tools, parsers: ['hermes'], newId: () => 'c' },
      );
      expect(r).toMatchObject({ content: text, calls: [] });
      // two a marker before recall14 (the family on the cut text, then the next envelope)
      expect(asks).toBeLessThanOrEqual(n + n / 10);
      asks = 0;
      // a real restart still reads: the copy, then the call
      const call = '{"name": "read_file", "arguments": {"path": "a"}}</tool_call>';
      const restarted = recoverMessage(
        { content: `<tool_call><tool_call>${call}`, reasoning: null },
        { tools, parsers: ['hermes'], newId: () => 'c' },
      );
      expect(restarted.calls.map((c) => [c.name, c.repairs])).toEqual([['read_file', ['doubled-open-tag']]]);
    } finally {
      spec.match = orig;
    }
  });
});
