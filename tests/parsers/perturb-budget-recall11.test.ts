/**
 * Output x1 vs x4 costs at most about x4 for the readings recall11 added (tests/parsers/perturb-recall11.test.ts,
 * docs/recall.md): DSML invokes without their block, DSML spelled with blanks around its bars, and
 * Mistral call objects without the list's brackets.
 */
import { describe, it } from 'vitest';
import { budget, soup } from '../hardening/surface-budget.js';
import { pushed64, toolsOf } from './engine-helpers.js';

const tools = toolsOf(
  {
    name: 'read_file',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
  { name: 'list_files', parameters: { type: 'object', properties: {} } },
);

const invoke = (v: string, tag = '｜DSML｜') =>
  `<${tag}invoke name="read_file">\n<${tag}parameter name="path" string="true">${v}</${tag}parameter>\n</${tag}invoke>\n`;

describe('recall11 readings (DSML): output length x1 vs x4', () => {
  it('invokes without their block: one long value, many invokes, many left open, a long tail', () => {
    budget(
      'DSML bare invokes',
      (size, rnd) => {
        const r = rnd();
        if (r < 0.25) return invoke('a'.repeat(size));
        if (r < 0.5)
          return `${soup(rnd, size, [invoke('a'), invoke('b', ' | DSML | ')], 0)}</｜DSML｜tool_calls>`;
        if (r < 0.75) return `${invoke('a')}${' x'.repeat(size / 2)}`;
        return soup(
          rnd,
          size,
          [invoke('a'), '<｜DSML｜invoke name="read_file">', '</｜DSML｜invoke>', ' '],
          0.3,
        );
      },
      pushed64(tools),
      { from: 2000, max: 256_000 },
      11_001,
    );
  }, 120_000);

  it('blanks around the bars: many blocks, many left open, one long value', () => {
    const tag = ' | DSML | ';
    const block = (v: string) => `<${tag}tool_calls>\n${invoke(v, tag)}</${tag}tool_calls>`;
    budget(
      'DSML spaced bars',
      (size, rnd) =>
        rnd() < 0.5
          ? block('a'.repeat(size))
          : soup(
              rnd,
              size,
              [block('a'), `<${tag}tool_calls>`, `< ｜ DSML ｜ calls>`, invoke('a', tag), ' '],
              0.3,
            ),
      pushed64(tools),
      { from: 2000, max: 256_000 },
      11_002,
    );
  }, 120_000);
});

describe('recall11 readings (a closing tag written twice): output length x1 vs x4', () => {
  it('many calls each closed twice, many cut repeats, one long value', () => {
    const call = (v: string) => `<tool_call>{"name": "read_file", "arguments": {"path": "${v}"}}</tool_call>`;
    budget(
      'doubled closing tag',
      (size, rnd) =>
        rnd() < 0.34
          ? `${call('a'.repeat(size))}</tool_call>`
          : soup(rnd, size, [`${call('a')}</tool_call>`, `${call('b')}</tool_cal`, '</tool_call>', ' '], 0.3),
      pushed64(tools),
      { from: 2000, max: 256_000 },
      11_004,
    );
  }, 120_000);
});

describe('recall11 readings (Mistral): output length x1 vs x4', () => {
  it('call objects without brackets: one long value, many objects, a long blank tail, many that break', () => {
    const obj = (v: string) => `{"name": "read_file", "arguments": {"path": "${v}"}}`;
    budget(
      'Mistral unbracketed list',
      (size, rnd) => {
        const r = rnd();
        if (r < 0.25) return `[TOOL_CALLS] ${obj('a')}, ${obj('a'.repeat(size))}`;
        if (r < 0.5) return `[TOOL_CALLS] ${soup(rnd, size, [`${obj('a')}, `], 0)}${obj('b')}`;
        if (r < 0.75) return `[TOOL_CALLS] ${obj('a')}${' '.repeat(size)},${' '.repeat(size)}x`;
        return soup(rnd, size, ['[TOOL_CALLS] ', `${obj('a')}, `, '{"name": ', ', ', ' '], 0.3);
      },
      pushed64(tools),
      { from: 2000, max: 256_000 },
      11_003,
    );
  }, 120_000);
});
