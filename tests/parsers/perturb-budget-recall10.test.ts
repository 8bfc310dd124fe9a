/**
 * Output x1 vs x4 costs at most about x4 for the readings recall10 added (tests/parsers/perturb-recall10.test.ts,
 * docs/recall.md): a DSML block left open after its last parameter.
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

const P = (v: string) => `<｜DSML｜parameter name="path" string="true">${v}</｜DSML｜parameter>`;

describe('recall10 readings: output length x1 vs x4', () => {
  it('DSML left open: one long value, many invokes, a long blank tail, many open blocks', () => {
    budget(
      'DSML left open',
      (size, rnd) => {
        const r = rnd();
        const head = '<｜DSML｜function_calls>\n<｜DSML｜invoke name="read_file">\n';
        if (r < 0.25) return head + P('a'.repeat(size));
        if (r < 0.5)
          return `<｜DSML｜function_calls>${soup(rnd, size, [`<｜DSML｜invoke name="read_file">${P('a')}</｜DSML｜invoke>\n`], 0)}<｜DSML｜invoke name="read_file">${P('b')}`;
        if (r < 0.75) return head + P('a') + ' '.repeat(size);
        return soup(rnd, size, [head + P('a'), P('a'), '<｜DSML｜invoke name="read_file">', ' '], 0.3);
      },
      pushed64(tools),
      { from: 2000, max: 256_000 },
      10_001,
    );
  }, 120_000);

  it('DSML spelled otherwise (｜｜DSML｜｜ calls, toolcalls): many blocks, many left open, one long value', () => {
    const spaced = (v: string) =>
      `<｜｜DSML｜｜ calls><｜｜DSML｜｜ invoke name="read_file"><｜｜DSML｜｜ parameter name="path" string="true">${v}</｜｜DSML｜｜ parameter></｜｜DSML｜｜ invoke></｜｜DSML｜｜ calls>`;
    const v4 = `<｜DSML｜toolcalls><｜DSML｜invoke name="read_file">${P('a')}</｜DSML｜invoke></｜DSML｜tool_calls>`;
    budget(
      'DSML spellings',
      (size, rnd) =>
        rnd() < 0.5
          ? spaced('a'.repeat(size))
          : soup(rnd, size, [spaced('a'), v4, '<｜｜DSML｜｜ calls>', '<｜DSML｜toolcalls>', ' '], 0.3),
      pushed64(tools),
      { from: 2000, max: 256_000 },
      10_003,
    );
  }, 120_000);
});

describe('recall10 readings (Mistral): output length x1 vs x4', () => {
  it('NAME[ARGS] without its marker: one long value, many calls, many that break, a long tail', () => {
    const call = (v: string) => `read_file[ARGS]{"path": "${v}"}`;
    budget(
      'Mistral missing [TOOL_CALLS]',
      (size, rnd) => {
        const r = rnd();
        if (r < 0.25) return call('a'.repeat(size));
        if (r < 0.5) return soup(rnd, size, [`${call('a')} `, `${call('b')}[TOOL_CALLS]`], 0);
        if (r < 0.75) return `${call('a')}${' '.repeat(size)}x`;
        return soup(
          rnd,
          size,
          [call('a'), 'read_file[ARGS]', 'read_file[CALL_ID]', '[TOOL_CALLS]', '{', ' '],
          0.3,
        );
      },
      pushed64(tools),
      { from: 2000, max: 256_000 },
      10_002,
    );
  }, 120_000);
});

describe('recall10 readings (lead-in after a long preface): output length x1 vs x4', () => {
  it('paragraphs then a bare call: one long argument, many paragraph breaks, a long held tail', () => {
    const para = 'I checked the layout and the scripts, and the router changed last.\n\n';
    budget(
      'long preface',
      (size, rnd) => {
        const r = rnd();
        const lead = `${para.repeat(8)}Let me read it.\n`;
        if (r < 0.34) return `${lead}{"name": "read_file", "arguments": {"path": "${'a'.repeat(size)}"}}`;
        if (r < 0.67)
          return `${lead}{"name": "read_file", "arguments": {"path": "a"}}${' x'.repeat(size / 2)}`;
        return soup(rnd, size, [para, '\n\n', 'Let me read it.\n', '{', '[', ' '], 0);
      },
      pushed64(tools),
      { from: 2000, max: 256_000 },
      10_004,
    );
  }, 120_000);
});
