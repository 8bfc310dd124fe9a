/**
 * Cost of the readings issue 30's third fresh set (tests/fixtures/recall/wild11.json) led to:
 * output length x1 vs x4 costs at most about x4 in CPU time and retained memory
 * (tests/support/cost-scaling.ts), streamed in 64-char pushes, for what each reading scans:
 * GLM's first key run into the name (many envelopes, one long run, runs with many declared
 * prefixes), harmony's stripped role header with a long argument, an id attribute beside a JSON
 * body, runs of one-line fences, and an array parameter written as many child elements.
 */
import { describe, it } from 'vitest';
import { budget, pick } from '../hardening/surface-budget.js';
import { pushed64, toolsOf } from './engine-helpers.js';

const str = { type: 'string' };
const tools = toolsOf(
  {
    name: 'send_command_to_shell',
    parameters: { type: 'object', properties: { command: str }, required: ['command'] },
  },
  { name: 's', parameters: { type: 'object', properties: { end: str }, required: ['end'] } },
  { name: 'se', parameters: { type: 'object', properties: { nd: str }, required: ['nd'] } },
  { name: 'exec_command', parameters: { type: 'object', properties: { cmd: str }, required: ['cmd'] } },
  {
    name: 'ask_followup_question',
    parameters: {
      type: 'object',
      properties: { question: str, suggestions: { type: 'array', items: str } },
      required: ['question'],
    },
  },
);

const run = pushed64(tools);

const OPTS = { from: 2000, max: 256_000 };

describe('issue 30, wild11 readings: output length x1 vs x4', () => {
  it('glm: many calls whose first <arg_key> was dropped', () => {
    const call = '<tool_call>send_command_to_shellcommand</arg_key><arg_value>ls</arg_value></tool_call>\n';
    budget('glm glued keys', (size) => call.repeat(Math.ceil(size / call.length)), run, OPTS, 5001);
  }, 120_000);

  it('glm: one long run before </arg_key>', () => {
    budget(
      'glm long run',
      (size) => `<tool_call>send${'d'.repeat(size)}</arg_key><arg_value>x</arg_value></tool_call>`,
      run,
      OPTS,
      5002,
    );
  }, 120_000);

  it('glm: many runs just under the split cap, with declared prefixes (s, se, send…)', () => {
    budget(
      'glm split runs',
      (size, rnd) => {
        let text = '';
        while (text.length < size)
          text += `<tool_call>se${'n'.repeat(100 + Math.floor(rnd() * 26))}${pick(rnd, ['d', ' nd', ' x', ''])}</arg_key><arg_value>v</arg_value></tool_call>`;
        return text;
      },
      run,
      OPTS,
      5003,
    );
  }, 120_000);

  it('gpt-oss: the stripped role header with a long argument', () => {
    budget(
      'harmony role header',
      (size) => `assistant to=functions.exec_command commentary json\n{"cmd":"${'a'.repeat(size)}"}`,
      run,
      OPTS,
      5004,
    );
  }, 120_000);

  it('structured reader: an id attribute beside a long JSON body', () => {
    budget(
      'id attribute',
      (size) => `<tool_call id="call_1" name="exec_command">\n{"cmd":"${'b'.repeat(size)}"}\n</tool_call>`,
      run,
      OPTS,
      5005,
    );
  }, 120_000);

  it('improvised: a run of one-line fences', () => {
    const fence = '```json {"name": "exec_command", "arguments": {"cmd": "ls"}} ```\n';
    budget('one-line fences', (size) => fence.repeat(Math.ceil(size / fence.length)), run, OPTS, 5006);
  }, 120_000);

  it('improvised: one long one-line fence', () => {
    budget(
      'long one-line fence',
      (size) => `\`\`\`json {"name": "exec_command", "arguments": {"cmd": "${'c'.repeat(size)}"}} \`\`\``,
      run,
      OPTS,
      5007,
    );
  }, 120_000);

  it('structured reader: an array parameter as many child elements', () => {
    budget(
      'list items',
      (size) => {
        let items = '';
        for (let i = 0; items.length < size; i++) items += `<suggestion>option ${i}</suggestion>\n`;
        return `<ask_followup_question>\n<question>Which?</question>\n<suggestions>\n${items}</suggestions>\n</ask_followup_question>`;
      },
      run,
      OPTS,
      5008,
    );
  }, 120_000);
});
