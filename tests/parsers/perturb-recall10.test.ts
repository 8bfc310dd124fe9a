/**
 * The readings recall10 added (docs/recall.md "recall10"), each with the cases that must stay
 * text beside it, whole and streamed one character at a time: the generator's cases
 * (tests/parsers/perturb-cases.ts, set 'recall10') are guarded by tests/parsers/perturb.test.ts;
 * these pin each rule's edges.
 */
import { describe, expect, it } from 'vitest';
import { READ_FILE, readBoth, toolsOf, WRITE_FILE } from './engine-helpers.js';

const tools = toolsOf(READ_FILE, WRITE_FILE);

/** The calls read (name, arguments, repairs), the content, and that one char at a time reads the same. */
const read = (text: string, cut = false) => readBoth(text, tools, cut);

const stays = (text: string) => expect(read(text)).toEqual({ calls: [], content: text });

const param = (k: string, v: string) =>
  `<｜DSML｜parameter name="${k}" string="true">${v}</｜DSML｜parameter>\n`;

describe('DSML left open at the end of output after a closed parameter (repair unclosed-envelope)', () => {
  const open = (name: string, params: string) =>
    `<｜DSML｜function_calls>\n<｜DSML｜invoke name="${name}">\n${params}`;

  it('closes the last invoke where the model stopped, when the arguments fit', () => {
    expect(read(open('read_file', param('path', 'a')))).toEqual({
      calls: [['read_file', { path: 'a' }, ['unclosed-envelope']]],
      content: null,
    });
    const two = `<｜DSML｜tool_calls>\n<｜DSML｜invoke name="read_file">\n${param('path', 'a')}</｜DSML｜invoke>\n<｜DSML｜invoke name="write_file">\n${param('path', 'b')}${param('content', 'x')}`;
    expect(read(two).calls).toEqual([
      ['read_file', { path: 'a' }, ['unclosed-envelope']],
      ['write_file', { path: 'b', content: 'x' }, ['unclosed-envelope']],
    ]);
  });

  it.each([
    ['a required parameter never written', open('write_file', param('path', 'a'))],
    ['an undeclared tool', open('delete_files', param('path', 'a'))],
    ['a value left open', open('read_file', '<｜DSML｜parameter name="path" string="true">src/ap')],
    ['text after the last parameter', `${open('read_file', param('path', 'a'))}and then`],
    ['a parameter tag cut in its name', `${open('read_file', param('path', 'a'))}<｜DSML｜parameter name="`],
  ])('%s stays text', (_, text) => stays(text));

  it('an output the token limit cut stays text', () => {
    const text = open('read_file', param('path', 'a'));
    expect(read(text, true)).toEqual({ calls: [], content: text });
  });
});

describe('Mistral calls whose first [TOOL_CALLS] a detokenizer dropped (repair missing-call-marker)', () => {
  const call = (name: string, args: string) => `${name}[ARGS]${args}`;
  it('reads a whole output of NAME[ARGS]{…} calls, the later ones after blanks or their own marker', () => {
    expect(read(call('read_file', '{"path": "a"}'))).toEqual({
      calls: [['read_file', { path: 'a' }, ['missing-call-marker']]],
      content: null,
    });
    // ml-explore/mlx-lm#1448: the text left once the server consumed the first marker
    expect(
      read(`${call('read_file', '{"path": "a"}')}[TOOL_CALLS]${call('read_file', '{"path": "b"}')}`).calls,
    ).toEqual([
      ['read_file', { path: 'a' }, ['missing-call-marker']],
      ['read_file', { path: 'b' }, []],
    ]);
    expect(read(`read_file[CALL_ID]abc123DEF[ARGS]{"path": "a"}\n`).calls).toEqual([
      ['read_file', { path: 'a' }, ['missing-call-marker']],
    ]);
    // after a short announcing lead-in (issue 30's gate), the lead-in kept as content
    expect(read(`Let me read it.\n${call('read_file', '{"path": "a"}')}`)).toEqual({
      calls: [['read_file', { path: 'a' }, ['missing-call-marker', 'lead-in']]],
      content: 'Let me read it.',
    });
  });

  it.each([
    ['an undeclared tool', call('delete_files', '{"path": "a"}')],
    ['arguments that fit no schema', call('read_file', '{"nope": "a"}')],
    ['a required argument missing', call('write_file', '{"path": "a"}')],
    ['another case (only exact names hold the output)', call('Read_File', '{"path": "a"}')],
    ['prose after the call', `${call('read_file', '{"path": "a"}')}\nThen I will summarise it.`],
    ['a second call broken', `${call('read_file', '{"path": "a"}')} ${call('read_file', '{"path": ')}`],
    ['no object after [ARGS]', call('read_file', '"a"')],
    ['mid-sentence', `Mistral writes ${call('read_file', '{"path": "a"}')} for that.`],
    [
      'in a fence an explanation goes on past',
      `\`\`\`\n${call('read_file', '{"path": "a"}')}\n\`\`\`\nThat is the v13 syntax.`,
    ],
  ])('%s stays text', (_, text) => stays(text));

  it('an output the token limit cut stays text', () => {
    const text = call('read_file', '{"path": "a"');
    expect(read(text, true)).toEqual({ calls: [], content: text });
  });
});

describe('DSML spelled otherwise: two bars and a blank, the block named calls; toolcalls for tool_calls', () => {
  const block = (tag: string, open: string, close: string, name: string, key: string) =>
    `<${tag}${open}>\n<${tag}invoke name="${name}">\n<${tag}parameter name="${key}" string="true">a</${tag}parameter>\n</${tag}invoke>\n</${tag}${close}>`;
  const spaced = (name = 'read_file', key = 'path') => block('｜｜DSML｜｜ ', 'calls', 'calls', name, key);
  const v4 = (name = 'read_file', key = 'path') => block('｜DSML｜', 'toolcalls', 'tool_calls', name, key);

  it('reads them when the arguments fit (repairs dsml-bar, dsml-block-name)', () => {
    // CommandCodeAI/command-code#909 (DeepSeek V4.1 Flash): a sentence, then the block
    expect(read(`First, let me read the skill.\n\n${spaced()}`)).toEqual({
      calls: [['read_file', { path: 'a' }, ['dsml-bar']]],
      content: 'First, let me read the skill.',
    });
    // cline/cline#14057: the block on one line
    expect(read(spaced().replaceAll('\n', ' ')).calls).toEqual([['read_file', { path: 'a' }, ['dsml-bar']]]);
    // vllm-project/vllm#51914 (DeepSeek-V4-Flash-0731)
    expect(read(v4())).toEqual({ calls: [['read_file', { path: 'a' }, ['dsml-block-name']]], content: null });
  });

  it.each([
    ['undeclared', spaced('delete_files')],
    ['misfit', spaced('read_file', 'nope')],
    ['left open', spaced().replace('</｜｜DSML｜｜ calls>', '')],
    [
      'a parameter closed by another tag (cline#14057, second block)',
      spaced().replace('</｜｜DSML｜｜ parameter>', '</path>'),
    ],
    ['toolcalls undeclared', v4('delete_files')],
    ['toolcalls misfit', v4('read_file', 'nope')],
    ['toolcalls closed by toolcalls', v4().replace('</｜DSML｜tool_calls>', '</｜DSML｜toolcalls>')],
    ['quoted inline', `DeepSeek writes \`${v4()}\` there.`],
  ])('%s stays text', (_, text) => stays(text));
});

describe('a bare JSON call after a long prose preface (lead-in gate, announcesAfterPreface)', () => {
  const preface =
    'I looked through the repository layout and the build scripts. The project keeps its sources under src and its tests under tests, and the entry point is small. The configuration file sets the port and the log level, and nothing in it looks unusual. The README describes the same layout and mentions that the app reads its settings at start. The last change touched the router and the logging setup, so the bug is most likely in one of those two places.';
  const call = '{"name": "read_file", "arguments": {"path": "src/router.ts"}}';

  it('reads it when the last paragraph announces and nothing before explains', () => {
    expect(preface.length).toBeGreaterThan(400);
    expect(read(`${preface}\n\nLet me read the router first.\n${call}`)).toEqual({
      calls: [['read_file', { path: 'src/router.ts' }, ['lead-in']]],
      content: `${preface}\n\nLet me read the router first.`,
    });
    // a list of call objects, two paragraphs before
    expect(read(`${preface}\n\n${preface}\n\nReading both now.\n[${call}]`).calls).toEqual([
      ['read_file', { path: 'src/router.ts' }, ['lead-in']],
    ]);
  });

  it.each([
    ['one paragraph longer than the short lead-in', `${preface} Let me read the router first.\n${call}`],
    [
      'an explaining word anywhere before',
      `${preface.replace('is most likely', 'could be')}\n\nLet me read it.\n${call}`,
    ],
    ['the last paragraph explains', `${preface}\n\nYou would then send this:\n${call}`],
    ['a question last', `${preface}\n\nShall I read the router?\n${call}`],
    [
      'call-shaped text before',
      `${preface.replace('under src', 'under src/{app}')}\n\nLet me read it.\n${call}`,
    ],
    ['prose after the call', `${preface}\n\nLet me read it.\n${call}\nThen I will fix it.`],
    ['past PREFACE_MAX', `${`${preface}\n\n`.repeat(5)}Let me read it.\n${call}`],
    [
      'a fence (only a bare object or list is read after a long preface)',
      `${preface}\n\nLet me read it.\n\`\`\`json\n${call}\n\`\`\``,
    ],
    [
      'arguments that fit no schema',
      `${preface}\n\nLet me read it.\n{"name": "read_file", "arguments": {"nope": 1}}`,
    ],
  ])('%s stays text', (_, text) => stays(text));
});
