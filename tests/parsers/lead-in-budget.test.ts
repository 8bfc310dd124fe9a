/**
 * The lead-in gate's cost (issue 30, parsers/engine/lead-in.ts): output length x1 vs x4 costs at
 * most about x4 in CPU time and retained memory (tests/support/cost-scaling.ts), streamed in
 * 64-char pushes, for what the gate holds: a call read after a lead-in with a long argument, a
 * held tail that is no call (random call pieces after the candidate), a lead-in of many
 * boundaries, and an element call with many children.
 */
import { describe, it } from 'vitest';
import { budget, pick } from '../hardening/surface-budget.js';
import { pushed64, toolsOf } from './engine-helpers.js';

const tools = toolsOf({
  name: 'get_weather',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
});
const CALL = '{"name": "get_weather", "arguments": {"city": "Paris"}}';
const UNITS = [
  CALL,
  'Sure. ',
  '{',
  '}',
  '[',
  '"',
  ':',
  '<get_weather>',
  '```',
  '\n',
  ' ',
  'get_weather(',
  ')',
];

const run = pushed64(tools);

describe('lead-in gate: output length x1 vs x4', () => {
  it('a call after a lead-in with a long argument (read)', () => {
    budget(
      'lead-in long argument',
      (size) =>
        `I'll look that up.\n\`\`\`json\n{"name": "get_weather", "arguments": {"city": "${'a'.repeat(size)}"}}\n\`\`\``,
      run,
      { from: 2000, max: 256_000 },
      3001,
    );
  }, 120_000);

  it('a held tail that is no call (random call pieces after the candidate)', () => {
    budget(
      'lead-in held tail',
      (size, rnd) => {
        let text = 'Let me check.\n{';
        while (text.length < size) text += pick(rnd, UNITS);
        return text;
      },
      run,
      { from: 2000, max: 256_000 },
      3002,
    );
  }, 120_000);

  it('a long output whose lead region is all boundaries', () => {
    budget(
      'lead-in boundaries',
      (size, rnd) => {
        let text = '';
        while (text.length < size)
          text += pick(rnd, ['Ok.\n', 'Yes. ', '好。', '\n\n', 'get_weather\n', '`', '<']);
        return text;
      },
      run,
      { from: 2000, max: 256_000 },
      3003,
    );
  }, 120_000);

  it('an element call with many children after a lead-in', () => {
    budget(
      'lead-in element',
      (size) =>
        `Let me look.\n<get_weather>\n${'<city>Paris</city>\n'.repeat(Math.ceil(size / 19))}</get_weather>`,
      run,
      { from: 2000, max: 256_000 },
      3004,
    );
  }, 120_000);
});
