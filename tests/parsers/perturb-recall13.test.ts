/**
 * The readings recall13 added (docs/recall.md "recall13"), recall8's last leftovers, each with the
 * cases that must stay text beside it, whole and streamed one character at a time: the generator's
 * cases (tests/parsers/perturb-cases.ts, set 'recall8') are guarded by tests/parsers/perturb.test.ts;
 * these pin each rule's edges.
 */
import { describe, expect, it } from 'vitest';
import { READ_FILE, readBoth, toolsOf, WRITE_FILE } from './engine-helpers.js';

const tools = toolsOf(READ_FILE, WRITE_FILE);
const read = (text: string, cut = false) => readBoth(text, tools, cut);
const A = { path: 'a' };

describe('Hermes: one `}` too many before the closing tag (repair extra-brace)', () => {
  const body = '{"name": "read_file", "arguments": {"path": "a"}}';
  it.each([
    ['a line break before the tag', `<tool_call>\n${body}}\n</tool_call>`],
    ['right before the tag', `<tool_call>${body}}</tool_call>`],
  ])('%s: one call, the brace gone with the envelope', (_, text) => {
    expect(read(text)).toEqual({ calls: [['read_file', A, ['extra-brace']]], content: null });
  });

  it('the text around it stays content', () => {
    expect(read(`Reading.\n<tool_call>${body}}\n</tool_call>\nDone.`)).toEqual({
      calls: [['read_file', A, ['extra-brace']]],
      content: 'Reading.\nDone.',
    });
  });

  it('a brace with no closing tag after it is not taken', () => {
    const r = read(`<tool_call>${body}} and more`);
    expect(r.content).toContain('} and more');
  });

  it('an undeclared tool stays content byte for byte', () => {
    const text = `<tool_call>{"name": "delete_all", "arguments": {"path": "a"}}}\n</tool_call>`;
    expect(read(text)).toEqual({ calls: [], content: text });
  });
});

describe('bare Llama 3 JSON call then a closing fence never opened (repair code-fence)', () => {
  const call = '{"name": "read_file", "parameters": {"path": "a"}}';
  it.each([
    ['on the next line', `${call}\n\`\`\``],
    ['blanks around it', `${call}\n\n\`\`\`\n`],
  ])('%s: one call, the fence gone with it', (_, text) => {
    expect(read(text)).toEqual({ calls: [['read_file', A, ['code-fence']]], content: null });
  });

  it('text after the fence: the fence stays content with it', () => {
    expect(read(`${call}\n\`\`\`\nmore`)).toEqual({ calls: [['read_file', A, []]], content: '```\nmore' });
  });

  it('an undeclared tool stays content byte for byte', () => {
    const text = '{"name": "delete_all", "parameters": {"path": "a"}}\n```';
    expect(read(text)).toEqual({ calls: [], content: text });
  });
});

describe("DeepSeek: the section's closing token spelled with `_` for `▁` (repair mismatched-close-tag)", () => {
  const head =
    '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>read_file<｜tool▁sep｜>{"path": "a"}<｜tool▁call▁end｜>';
  it.each([
    ['with `_`', `${head}<｜tool_calls_end｜>`],
    ['with a space', `${head}<｜tool calls end｜>\n`],
    [
      'V3 fenced',
      `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>read_file\n\`\`\`json\n{"path": "a"}\n\`\`\`<｜tool▁call▁end｜><｜tool_calls_end｜>`,
    ],
  ])('%s: one call, no content', (_, text) => {
    const r = read(text);
    expect(r.calls).toHaveLength(1);
    expect(r.calls[0]?.[2]).toContain('mismatched-close-tag');
    expect(r.content).toBeNull();
  });

  it('a misspelled token with text after it is not the envelope end', () => {
    expect(read(`${head}<｜tool_calls_end｜> then more`).content).toContain('<｜tool_calls_end｜>');
  });

  it('an undeclared tool stays content byte for byte', () => {
    const text = `${head.replace('read_file', 'delete_all')}<｜tool_calls_end｜>`;
    expect(read(text)).toEqual({ calls: [], content: text });
  });
});
