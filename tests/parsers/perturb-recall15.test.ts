/**
 * The readings recall15 added (docs/recall.md "recall15"), each with the cases that must stay text
 * beside it, whole and streamed one character at a time: the generator's cases
 * (tests/parsers/perturb-cases-recall15.ts, set 'recall15') are guarded by
 * tests/parsers/perturb.test.ts; these pin each rule's edges.
 */
import { describe, expect, it } from 'vitest';
import { READ_FILE, readBoth, toolsOf, WRITE_FILE } from './engine-helpers.js';

const tools = toolsOf(READ_FILE, WRITE_FILE);
const read = (text: string) => readBoth(text, tools);
const A = { path: 'a' };
const W = { path: 'README.md', content: '# T\n\n```sh\nnpm test\n```\n' };

describe('a Gemma 3 tool_code fence whose string argument holds ``` (it closes at a line start)', () => {
  const call = 'write_file(path="README.md", content="# T\\n\\n```sh\\nnpm test\\n```\\n")';
  it('reads the call', () => {
    expect(read(`\`\`\`tool_code\n${call}\n\`\`\``)).toEqual({
      calls: [['write_file', W, ['code-fence']]],
      content: null,
    });
  });
  it('and a run of two such fences, each closed at its own line start', () => {
    const r = read(`\`\`\`tool_code\n${call}\n\`\`\`\n\`\`\`tool_code\nread_file(path="a")\n\`\`\``);
    expect(r.calls.map((c) => c.slice(0, 2))).toEqual([
      ['write_file', W],
      ['read_file', A],
    ]);
  });
  it('text after the closing fence, an undeclared tool, a fence never closed at a line start: text', () => {
    for (const text of [
      `\`\`\`tool_code\n${call}\n\`\`\`\nThat writes it.`,
      `\`\`\`tool_code\n${call.replace('write_file', 'save_file')}\n\`\`\``,
      '```tool_code\nwrite_file(path="a", content="```")``` and more',
    ])
      expect(read(text)).toEqual({ calls: [], content: text });
  });
});

describe('two bare calls with a short announcing sentence between them (repair lead-in on the second)', () => {
  const j1 = '{"name": "read_file", "parameters": {"path": "a"}}';
  const j2 = '{"name": "write_file", "parameters": {"path": "README.md", "content": "x"}}';
  it('Llama 3.2 JSON: both calls, the sentence content', () => {
    expect(read(`${j1}\n\nThen I will make the change.\n\n${j2}`)).toEqual({
      calls: [
        ['read_file', A, []],
        ['write_file', { path: 'README.md', content: 'x' }, ['lead-in']],
      ],
      content: 'Then I will make the change.',
    });
  });
  it('pythonic lists: both calls, the sentence content', () => {
    expect(
      read('[read_file(path="a")]\n\nNow the edit.\n[write_file(path="README.md", content="x")]'),
    ).toEqual({
      calls: [
        ['read_file', A, []],
        ['write_file', { path: 'README.md', content: 'x' }, ['lead-in']],
      ],
      content: 'Now the edit.',
    });
  });
  it.each([
    ['an explaining sentence', `${j1}\n\nFor example, you could write:\n\n${j2}`],
    ['a question', `${j1}\n\nShould I also write it?\n\n${j2}`],
    [
      'an undeclared tool',
      `${j1}\n\nThen I will make the change.\n\n${j2.replace('write_file', 'save_file')}`,
    ],
    [
      'arguments that fit no schema',
      `${j1}\n\nThen I will make the change.\n\n${j2.replace('"path"', '"file"')}`,
    ],
    ['prose after the second', `${j1}\n\nThen I will make the change.\n\n${j2}\n\nDone.`],
    ['the second mid-line', `${j1}\n\nThen I will make the change: ${j2}`],
  ])('%s: the first call as before, the rest content byte for byte', (_, text) => {
    const r = read(text);
    expect(r.calls.map((c) => c[0])).toEqual(['read_file']);
    expect(r.content).toBe(text.slice(text.indexOf('\n\n') + 2));
  });
  it('pythonic: an undeclared tool in the second list leaves it content', () => {
    const text = '[read_file(path="a")]\n\nNow the edit.\n[save_file(path="README.md")]';
    const r = read(text);
    expect(r.calls.map((c) => c[0])).toEqual(['read_file']);
    expect(r.content).toBe('Now the edit.\n[save_file(path="README.md")]');
  });
});

describe('Command R+ `Action:` as a list item or after a byte-order mark', () => {
  const list = '```json\n[{"tool_name": "read_file", "parameters": {"path": "a"}}]\n```';
  it.each([
    ['a - bullet', `- Action:\n${list}`, '-'],
    ['a * bullet', `* Action:\n${list}`, '*'],
    ['a bullet after a plan line', `Plan: read it.\n- Action:\n${list}`, 'Plan: read it.\n-'],
    ['a byte-order mark', `\uFEFFAction:\n${list}`, '\uFEFF'],
  ])('%s: the call read by command-r-plus, the bullet stays content', (_, text, content) => {
    expect(read(text)).toEqual({ calls: [['read_file', A, []]], content });
  });
  it.each([
    ['an undeclared tool', `- Action:\n${list.replace('read_file', 'save_file')}`],
    [
      'a bullet in a fenced sample',
      `\`\`\`\n- Action:\n[{"tool_name": "read_file", "parameters": {"path": "a"}}]\n\`\`\``,
    ],
  ])('%s: text byte for byte', (_, text) => {
    expect(read(text)).toEqual({ calls: [], content: text });
  });
  it.each([
    ['a bullet mid-sentence', `Then - Action:\n${list}`],
    ['an indented bullet', `  - Action:\n${list}`],
  ])('%s: no Action line of its own; the fenced list alone is read, the line stays whole', (_, text) => {
    const r = read(text);
    expect(r.calls.map((c) => c.slice(0, 2))).toEqual([['read_file', A]]);
    expect(r.content).toBe(text.slice(0, text.indexOf('\n```')));
  });
});
