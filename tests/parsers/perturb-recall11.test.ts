/**
 * The readings recall11 added (docs/recall.md "recall11"), each with the cases that must stay
 * text beside it, whole and streamed one character at a time: the generator's cases
 * (tests/parsers/perturb-cases.ts, set 'recall11') are guarded by tests/parsers/perturb.test.ts;
 * these pin each rule's edges.
 */
import { describe, expect, it } from 'vitest';
import { READ_FILE, readBoth, toolsOf, WRITE_FILE } from './engine-helpers.js';

const tools = toolsOf(READ_FILE, WRITE_FILE);

/** The calls read (name, arguments, repairs), the content, and that one char at a time reads the same. */
const read = (text: string, cut = false) => readBoth(text, tools, cut);

const stays = (text: string) => expect(read(text)).toEqual({ calls: [], content: text });

/** An invoke in a tag spelling (`｜DSML｜` by default). */
const invoke = (name: string, key: string, v: string, tag = '｜DSML｜') =>
  `<${tag}invoke name="${name}">\n<${tag}parameter name="${key}" string="true">${v}</${tag}parameter>\n</${tag}invoke>`;

describe('DSML invokes with no block around them (repair missing-envelope-open)', () => {
  it('reads the whole output of invokes, with or without the block closer after them', () => {
    expect(read(invoke('read_file', 'path', 'a'))).toEqual({
      calls: [['read_file', { path: 'a' }, ['missing-envelope-open']]],
      content: null,
    });
    const two = `${invoke('read_file', 'path', 'a')}\n${invoke('read_file', 'path', 'b')}\n</｜DSML｜tool_calls>\n`;
    expect(read(two).calls).toEqual([
      ['read_file', { path: 'a' }, ['missing-envelope-open']],
      ['read_file', { path: 'b' }, ['missing-envelope-open']],
    ]);
    expect(read(invoke('read_file', 'path', 'a', ' | DSML | ')).calls).toEqual([
      ['read_file', { path: 'a' }, ['missing-envelope-open', 'dsml-bar']],
    ]);
  });

  it('reads them after a short announcing lead-in, which stays content', () => {
    expect(read(`I'll read it.\n${invoke('read_file', 'path', 'a')}`)).toEqual({
      calls: [['read_file', { path: 'a' }, ['missing-envelope-open', 'lead-in']]],
      content: "I'll read it.",
    });
  });

  const block = (inner: string) => `<｜DSML｜tool_calls>\n${inner}\n</｜DSML｜tool_calls>`;
  it.each([
    ['an undeclared tool', invoke('delete_files', 'path', 'a')],
    ['arguments that fit no schema', invoke('read_file', 'nope', 'a')],
    ['a required argument missing', invoke('write_file', 'path', 'a')],
    ['prose after it (markup shown)', `${invoke('read_file', 'path', 'a')}\nThat is the syntax.`],
    ['an invoke left open', invoke('read_file', 'path', 'a').replace('</｜DSML｜invoke>', '')],
    ['a closer in another spelling', `${invoke('read_file', 'path', 'a')}\n</ | DSML | tool_calls>`],
    ['an explanation before it', `For example, you could write:\n${invoke('read_file', 'path', 'a')}`],
    ['a fenced sample', `\`\`\`\n${invoke('read_file', 'path', 'a')}\n\`\`\``],
    [
      'a declared invoke inside a block refused for its undeclared sibling',
      block(`${invoke('delete_files', 'path', 'x')}\n${invoke('read_file', 'path', 'a')}`),
    ],
  ])('%s stays text', (_, text) => stays(text));

  it('an invoke inside a block the token limit cut stays text', () => {
    const text = `<｜DSML｜tool_calls>\n${invoke('read_file', 'path', 'a')}\n<｜DSML｜invoke name="read_file">`;
    expect(read(text, true)).toEqual({ calls: [], content: text });
  });
});

describe('DSML spelled with blanks around its bars (repair dsml-bar)', () => {
  const spelled = (tag: string, block = 'tool_calls', name = 'read_file', key = 'path') =>
    `<${tag}${block}>\n${invoke(name, key, 'a', tag)}\n</${tag}${block}>`;

  it.each([' | DSML | ', ' ｜ DSML ｜ ', '｜DSML｜ ', '‖DSML‖ ', ' ｜｜ DSML ｜｜ '])('reads %j', (tag) => {
    expect(read(spelled(tag)).calls).toEqual([['read_file', { path: 'a' }, ['dsml-bar']]]);
    expect(read(spelled(tag, 'function_calls')).calls).toEqual([['read_file', { path: 'a' }, ['dsml-bar']]]);
  });

  it.each([
    ['an undeclared tool', spelled(' | DSML | ', 'tool_calls', 'delete_files')],
    ['arguments that fit no schema', spelled(' | DSML | ', 'tool_calls', 'read_file', 'nope')],
    ['closers in another spelling', spelled(' | DSML | ').replaceAll('</ | DSML | ', '</｜DSML｜')],
    [
      'two spellings in one block',
      spelled(' | DSML | ').replace('< | DSML | parameter', '<｜DSML｜parameter'),
    ],
    ['a block left open', spelled(' | DSML | ').replace('</ | DSML | tool_calls>', '')],
  ])('%s stays text', (_, text) => stays(text));
});

describe('Mistral call objects without the list brackets (repair unbracketed-list)', () => {
  const a = '{"name": "read_file", "arguments": {"path": "a"}}';
  const b = '{"name": "write_file", "arguments": {"path": "b", "content": "x"}}';

  it('reads every object of the run, the text after it content', () => {
    expect(read(`[TOOL_CALLS] ${a}, ${b}`)).toEqual({
      calls: [
        ['read_file', { path: 'a' }, ['unbracketed-list']],
        ['write_file', { path: 'b', content: 'x' }, ['unbracketed-list']],
      ],
      content: null,
    });
    expect(read(`[TOOL_CALLS]${a} ,\n ${b}\n\nDone.`).content).toBe('Done.');
  });

  it('one object then a comma and prose reads the one call, as before', () => {
    expect(read(`[TOOL_CALLS] ${a}, then I stop.`)).toEqual({
      calls: [['read_file', { path: 'a' }, []]],
      content: ', then I stop.',
    });
  });

  it.each([
    [
      'a second object naming an undeclared tool',
      `[TOOL_CALLS] ${a}, ${b.replace('write_file', 'delete_files')}`,
    ],
    [
      'a second object whose arguments fit no schema',
      `[TOOL_CALLS] ${a}, ${b.replace('"content": "x"', '"nope": 1')}`,
    ],
    ['a second object that is no call', `[TOOL_CALLS] ${a}, {"note": "x"}`],
    [
      'a first object that fits no schema before a renamed one',
      `[TOOL_CALLS] ${a.replace('"path"', '"nope"')}, ${b.replace('write_file', 'Write_File')}`,
    ],
  ])('%s leaves the whole run text', (_, text) => stays(text));

  it('a second object the end of output left open: the first call, the rest content (as before)', () => {
    const text = `[TOOL_CALLS] ${a}, {"name": "write_file", "argu`;
    expect(read(text)).toEqual({
      calls: [['read_file', { path: 'a' }, []]],
      content: ', {"name": "write_file", "argu',
    });
  });
});

describe('a closing tag written twice right after a complete call (repair doubled-close-tag)', () => {
  const hermes = (name: string, args: string) =>
    `<tool_call>\n{"name": "${name}", "arguments": ${args}}\n</tool_call>`;
  const glm = '<tool_call>read_file\n<arg_key>path</arg_key>\n<arg_value>a</arg_value>\n</tool_call>';

  it('removes the repeat with the call (Hermes, GLM), the text after it content', () => {
    expect(read(`${hermes('read_file', '{"path": "a"}')}</tool_call>\nDone.`)).toEqual({
      calls: [['read_file', { path: 'a' }, ['doubled-close-tag']]],
      content: 'Done.',
    });
    expect(read(`${glm}</tool_call>`)).toEqual({
      calls: [['read_file', { path: 'a' }, ['doubled-close-tag']]],
      content: null,
    });
  });

  it('takes one repeat only; a third closer, a cut one or one after a blank stays content', () => {
    const one = hermes('read_file', '{"path": "a"}');
    expect(read(`${one}</tool_call></tool_call>`).content).toBe('</tool_call>');
    expect(read(`${one}</tool_cal`).content).toBe('</tool_cal');
    expect(read(`${one}\n</tool_call>`).content).toBe('</tool_call>');
  });

  it('an envelope not read keeps both closers byte for byte', () => {
    stays(`${hermes('delete_files', '{"path": "a"}')}</tool_call>`);
    stays(`${glm.replace('read_file', 'delete_files')}</tool_call>`);
  });
});

describe('gpt-oss: a call header written twice', () => {
  it('the empty message the second header follows is no call with {}', () => {
    const h = '<|start|>assistant<|channel|>commentary to=functions.read_file <|constrain|>json<|message|>';
    // and the first header, the opener written twice, goes with the call (recall12, doubled-open-tag)
    expect(read(`${h}${h}{"path": "a"}<|call|>`)).toEqual({
      calls: [['read_file', { path: 'a' }, ['doubled-open-tag']]],
      content: null,
    });
    // a message <|call|> ends with nothing in it is still a call with {} (vLLM passes "" on)
    expect(read(`${h}<|call|>`).calls).toEqual([['read_file', {}, ['empty-arguments']]]);
  });
});
