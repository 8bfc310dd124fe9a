/**
 * The readings recall12 added (docs/recall.md "recall12"), each with the cases that must stay text
 * beside it, whole and streamed one character at a time: the generator's cases
 * (tests/parsers/perturb-cases.ts, sets 'recall11' and 'recall12') are guarded by
 * tests/parsers/perturb.test.ts; these pin each rule's edges.
 */
import { describe, expect, it } from 'vitest';
import { READ_FILE, readBoth, toolsOf, WRITE_FILE } from './engine-helpers.js';

const tools = toolsOf(READ_FILE, WRITE_FILE);
const read = (text: string, cut = false) => readBoth(text, tools, cut);
const stays = (text: string) => expect(read(text)).toEqual({ calls: [], content: text });

const hermes = (path = 'a', name = 'read_file') =>
  `<tool_call>{"name": "${name}", "arguments": {"path": "${path}"}}</tool_call>`;
const qwen = (name = 'read_file') =>
  `<tool_call>\n<function=${name}>\n<parameter=path>\na\n</parameter>\n</function>\n</tool_call>`;
const deepseek = (name = 'read_file') =>
  `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>${name}<｜tool▁sep｜>{"path": "a"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`;
const harmony = (name = 'read_file') =>
  `<|start|>assistant<|channel|>commentary to=functions.${name} <|constrain|>json<|message|>{"path": "a"}<|call|>`;
const A = { path: 'a' };

describe('an opening written twice: the model restarted the envelope (repair doubled-open-tag)', () => {
  it.each([
    ['Hermes', `<tool_call>${hermes()}`],
    ['Hermes, a blank between', `<tool_call>\n\n${hermes()}`],
    ['Qwen3-Coder, tag and function', `<tool_call>\n<function=read_file>${qwen()}`],
    [
      'GLM, tag and name',
      `<tool_call>read_file<tool_call>read_file\n<arg_key>path</arg_key>\n<arg_value>a</arg_value>\n</tool_call>`,
    ],
    ['Mistral', '[TOOL_CALLS][TOOL_CALLS][{"name": "read_file", "arguments": {"path": "a"}}]'],
    ['Mistral, blanks', '[TOOL_CALLS] [TOOL_CALLS] [{"name": "read_file", "arguments": {"path": "a"}}]'],
    ['Llama 3 python_tag', '<|python_tag|><|python_tag|>{"name": "read_file", "parameters": {"path": "a"}}'],
    ['<function=>', '<function=read_file><function=read_file>{"path": "a"}</function>'],
    ['gpt-oss header', `${harmony().slice(0, harmony().indexOf('{'))}${harmony()}`],
    [
      'a call begun, dropped and written again whole',
      `<tool_call>{"name": "read_file", "arguments": {"path": "a"${hermes()}`,
    ],
  ])('%s: one call, the copy gone with it', (_, text) => {
    expect(read(text)).toEqual({ calls: [['read_file', A, ['doubled-open-tag']]], content: null });
  });

  it('the text around it stays content', () => {
    expect(read(`Reading it.\n<tool_call>${hermes()}\nDone.`)).toEqual({
      calls: [['read_file', A, ['doubled-open-tag']]],
      content: 'Reading it.\nDone.',
    });
  });

  it('takes one copy: a third opener stays content', () => {
    expect(read(`<tool_call><tool_call>${hermes()}`)).toEqual({
      calls: [['read_file', A, ['doubled-open-tag']]],
      content: '<tool_call>',
    });
  });

  it('text that is no copy of the envelope stays content byte for byte', () => {
    expect(read(`<tool_call>Let me${hermes()}`).content).toBe('<tool_call>Let me');
    expect(read(`<tool_call>{"name": "read_file", "arguments": {"path": "b"${hermes()}`).content).toBe(
      '<tool_call>{"name": "read_file", "arguments": {"path": "b"',
    );
    // a copy holding a closing tag (`</`) is no opening written twice
    const begun = '<tool_call>{"name": "read_file", "arguments": {"path": "</a"';
    expect(read(`${begun}${begun}}}</tool_call>`)).toEqual({
      calls: [['read_file', { path: '</a' }, []]],
      content: begun,
    });
    const far = `<tool_call>${' '.repeat(300)}x`;
    expect(read(`${far}${hermes()}`).content).toBe(far);
  });

  it.each([
    ['an undeclared tool', `<tool_call>${hermes('a', 'delete_files')}`],
    ['a misspelled name in both', '<function=reed_file><function=reed_file>{"path": "a"}</function>'],
    [
      'a fenced sample',
      `A call looks like this:\n\n\`\`\`\n<tool_call>${hermes()}\n\`\`\`\n\nThe server reads it.`,
    ],
    ['inline code', `Write \`<tool_call>${hermes()}\` to call it.`],
  ])('%s: both openers stay text', (_, text) => stays(text));

  it('reads no more than the envelope alone: arguments that fit no schema, as <function=> reads them', () => {
    const one = '<function=read_file>{"nope": 1}</function>';
    expect(read(`<function=read_file>${one}`).calls).toEqual(
      read(one).calls.map(([n, a, r]) => [n, a, [...(r as string[]), 'doubled-open-tag']]),
    );
  });

  it('a restart the token limit cut stays text', () => {
    const text = `<tool_call>\n<function=read_file>${qwen().slice(0, 40)}`;
    expect(read(text, true)).toEqual({ calls: [], content: text });
  });

  it('two whole calls in a row are two calls, as before', () => {
    expect(read(`${hermes()}${hermes('b')}`).calls).toEqual([
      ['read_file', A, []],
      ['read_file', { path: 'b' }, []],
    ]);
  });
});

describe('a closing run written twice right after a complete call (repair doubled-close-tag)', () => {
  it.each([
    ['Qwen3-Coder', `${qwen()}</function>\n</tool_call>`],
    ['DeepSeek V3.1, both tokens', `${deepseek()}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`],
    // (the section's own closer once more: kit/envelope.ts absorbRepeatedClose took it already)
    ['DeepSeek V3.1, the last token', `${deepseek()}<｜tool▁calls▁end｜>`],
    [
      'Kimi K2',
      '<|tool_calls_section_begin|><|tool_call_begin|>functions.read_file:0<|tool_call_argument_begin|>{"path": "a"}<|tool_call_end|><|tool_calls_section_end|><|tool_call_end|><|tool_calls_section_end|>',
    ],
    ['gpt-oss', `${harmony()}<|call|>`],
    ['<function=>', '<function=read_file>{"path": "a"}</function></function>'],
    [
      'DSML',
      '<｜DSML｜function_calls>\n<｜DSML｜invoke name="read_file">\n<｜DSML｜parameter name="path" string="true">a</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls></｜DSML｜invoke>\n</｜DSML｜function_calls>',
    ],
  ])('%s: the repeat goes with the call', (_, text) => {
    expect(read(text)).toEqual({ calls: [['read_file', A, ['doubled-close-tag']]], content: null });
  });

  it('takes one copy; a third, one after a blank, or a piece that is no suffix of the run stays content', () => {
    expect(read(`${qwen()}</function>\n</tool_call></function>\n</tool_call>`).content).toBe(
      '</function>\n</tool_call>',
    );
    expect(read(`${qwen()}\n</function>\n</tool_call>`).content).toBe('</function>\n</tool_call>');
    expect(read(`${deepseek()}<｜tool▁call▁end｜>`).content).toBe('<｜tool▁call▁end｜>');
    expect(read(`${harmony()}<|call|>\nDone.`)).toEqual({
      calls: [['read_file', A, ['doubled-close-tag']]],
      content: 'Done.',
    });
  });

  it.each([
    ['Qwen3-Coder, an undeclared tool', `${qwen('delete_files')}</function>\n</tool_call>`],
    ['DeepSeek, an undeclared tool', `${deepseek('delete_files')}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`],
    ['gpt-oss, an undeclared tool', `${harmony('delete_files')}<|call|>`],
  ])('%s: the envelope and its repeat stay text', (_, text) => stays(text));
});

describe('an end-of-turn token written out right after a call that ends the output (repair end-of-turn-token)', () => {
  it.each([
    ['Mistral </s>', '[TOOL_CALLS][{"name": "read_file", "arguments": {"path": "a"}}]</s>'],
    ['Mistral v11 </s>, blanks around', '[TOOL_CALLS]read_file[ARGS]{"path": "a"} </s>\n'],
    [
      'GLM <|observation|>',
      '<tool_call>read_file\n<arg_key>path</arg_key>\n<arg_value>a</arg_value>\n</tool_call><|observation|>',
    ],
    [
      'Granite <|end_of_text|>',
      '<|tool_call|>[{"name": "read_file", "arguments": {"path": "a"}}]<|end_of_text|>',
    ],
    ['<function=> <|eot_id|>', '<function=read_file>{"path": "a"}</function><|eot_id|>'],
  ])('%s: the token goes with the call', (_, text) => {
    expect(read(text)).toEqual({ calls: [['read_file', A, ['end-of-turn-token']]], content: null });
  });

  it('anywhere but the end of output it stays text; so does an HTML </s> in prose', () => {
    const call = '<function=read_file>{"path": "a"}</function>';
    expect(read(`${call}</s> and more`).content).toBe('</s> and more');
    expect(read(`${call}</s></s>`).content).toBe('</s></s>');
    expect(read(`${call}${' '.repeat(80)}</s>`).content).toBe('</s>');
    stays('It was <s>wrong</s>');
  });

  it('an envelope not read keeps the token byte for byte', () => {
    stays('<function=delete_files>{"path": "a"}</function></s>');
    stays(
      '<tool_call>delete_files\n<arg_key>path</arg_key>\n<arg_value>a</arg_value>\n</tool_call><|observation|>',
    );
  });
});

describe('a call inside quotation marks is quoted text (engine/mid-sentence.ts)', () => {
  it.each([
    ['double quotes', `The model writes "${hermes()}" when it wants that.`],
    ['curly quotes', `It emits “${qwen()}” and stops.`],
    ['guillemets after a colon', `Exemple :«${deepseek()}»`],
    ['at the line start, closed at the end of output', `"${harmony()}"`],
    ['a blank before the closing mark', `The model writes "${hermes()} " when it wants that.`],
  ])('%s: text byte for byte', (_, text) => stays(text));

  it('a quotation mark not closed right after it, or one inside a word, leaves the call', () => {
    expect(read(`He said "go.\n${hermes()}`).calls).toEqual([['read_file', A, []]]);
    expect(read(`Reading "${hermes()} now`).calls).toEqual([['read_file', A, []]]);
    expect(read(`x"${hermes()}"`).calls).toEqual([['read_file', A, []]]);
  });
});
