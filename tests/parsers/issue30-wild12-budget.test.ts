/**
 * Cost of the reading issue 30's fourth fresh set (tests/fixtures/recall/wild12.json) led to:
 * output length x1 vs x4 costs at most about x4 in CPU time and retained memory
 * (tests/support/cost-scaling.ts), streamed in 64-char pushes, for what it scans: MiniMax's bare
 * invokes with their orphan `</minimax:tool_call>` closer (many invokes, one long value, a long
 * lead-in before them) and outputs that end in the closer but hold no invoke to read.
 */
import { describe, it } from 'vitest';
import { budget } from '../hardening/surface-budget.js';
import { pushed64, toolsOf } from './engine-helpers.js';

const str = { type: 'string' };
const tools = toolsOf(
  {
    name: 'read',
    parameters: {
      type: 'object',
      properties: { filePath: str, limit: { type: 'number' } },
      required: ['filePath'],
    },
  },
  { name: 'bash', parameters: { type: 'object', properties: { command: str }, required: ['command'] } },
);

const run = pushed64(tools);

const OPTS = { from: 2000, max: 256_000 };
const END = '</minimax:tool_call>';

describe('issue 30, wild12 reading: output length x1 vs x4', () => {
  it('improvised: many bare invokes, one orphan closer', () => {
    const call = '<invoke name="read">\n<parameter name="filePath">/src/a.ts</parameter>\n</invoke>\n';
    budget(
      'orphan closer, many invokes',
      (size) => `${call.repeat(Math.ceil(size / call.length))}${END}`,
      run,
      OPTS,
      5101,
    );
  }, 120_000);

  it('improvised: one bare invoke with a long value', () => {
    budget(
      'orphan closer, long value',
      (size) =>
        `<invoke name="bash">\n<parameter name="command">${'a'.repeat(size)}</parameter>\n</invoke>\n${END}`,
      run,
      OPTS,
      5102,
    );
  }, 120_000);

  it('improvised: a long lead-in before the invoke', () => {
    budget(
      'orphan closer, long lead-in',
      (size) =>
        `${'Read it. '.repeat(Math.ceil(size / 9))}\n<invoke name="read">\n<parameter name="filePath">/a</parameter>\n</invoke>\n${END}`,
      run,
      OPTS,
      5103,
    );
  }, 120_000);

  it('improvised: invokes that never close, then the closer', () => {
    budget(
      'orphan closer, unclosed invokes',
      (size) => `${'<invoke name="read"><parameter name="filePath">x'.repeat(Math.ceil(size / 48))}${END}`,
      run,
      OPTS,
      5104,
    );
  }, 120_000);
});
