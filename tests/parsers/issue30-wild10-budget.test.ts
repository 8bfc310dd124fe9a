/**
 * Cost of the readings issue 30's second fresh set (tests/fixtures/recall/wild10.json) led to:
 * output length x1 vs x4 costs at most about x4 in CPU time and retained memory
 * (tests/support/cost-scaling.ts), streamed in 64-char pushes, for what each reading scans:
 * hermes' attribute arguments (many attributes, many unclosed elements), Kimi K2 blocks without
 * their openers (many blocks, one long id), a run of ```function_call fences, a ```thinking fence
 * before a call (and one past its cap), and the Llama call without `<function=`.
 */
import { describe, it } from 'vitest';
import { budget, pick } from '../hardening/surface-budget.js';
import { pushed64, toolsOf } from './engine-helpers.js';

const tools = toolsOf(
  {
    name: 'exec',
    parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
  },
  {
    name: 'read',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
  {
    name: 'search_products',
    parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
  },
);

const run = pushed64(tools);

const OPTS = { from: 2000, max: 256_000 };

describe('issue 30, wild10 readings: output length x1 vs x4', () => {
  it('hermes: an element with many attributes', () => {
    budget(
      'hermes attributes',
      (size) => {
        let text = '<tool_call>exec';
        for (let i = 0; text.length < size; i++) text += ` a${i}="v${i}"`;
        return `${text} command="ls" />`;
      },
      run,
      OPTS,
      4001,
    );
  }, 120_000);

  it('hermes: many elements left open, pieces of attributes between them', () => {
    budget(
      'hermes open elements',
      (size, rnd) => {
        let text = '';
        while (text.length < size)
          text += pick(rnd, ['<tool_call>exec ', 'command="ls" ', 'x=', '"', '/', '>', ' ', 'exec ']);
        return text;
      },
      run,
      OPTS,
      4002,
    );
  }, 120_000);

  it('kimi-k2: many blocks without their openers', () => {
    budget(
      'kimi blocks',
      (size) => {
        let text = '';
        for (let i = 0; text.length < size; i++)
          text += `read:${i}<|tool_call_argument_begin|>{"path": "f${i}.md"}<|tool_call_end|>\n`;
        return text;
      },
      run,
      OPTS,
      4003,
    );
  }, 120_000);

  it('kimi-k2: one long id before the argument marker', () => {
    budget(
      'kimi long id',
      (size) => `read${'_'.repeat(size)}:0<|tool_call_argument_begin|>{"path": "a"}<|tool_call_end|>`,
      run,
      OPTS,
      4004,
    );
  }, 120_000);

  it('improvised: a run of ```function_call fences', () => {
    const fence = '```function_call\n{"function": "read", "parameters": {"path": "a.md"}}\n```\n';
    budget('fence run', (size) => fence.repeat(Math.ceil(size / fence.length)), run, OPTS, 4005);
  }, 120_000);

  it('lead-in: a ```thinking fence (up to its cap) then a call fence', () => {
    budget(
      'thinking fence',
      (size, rnd) => {
        let think = '```thinking\n';
        while (think.length < Math.min(size, 4000))
          think += pick(rnd, ['I should ', '`read` ', '{', '<', '\n', 'x. ']);
        const call = '\n```\n```function_call\n{"function": "search_products", "parameters": {"query": "';
        return `${think}${call}${'q'.repeat(Math.max(0, size - think.length))}"}}\n\`\`\``;
      },
      run,
      OPTS,
      4006,
    );
  }, 120_000);

  it('lead-in: a ```thinking fence past its cap', () => {
    budget(
      'thinking fence past cap',
      (size) => `\`\`\`thinking\n${'I think. '.repeat(Math.ceil(size / 9))}`,
      run,
      OPTS,
      4007,
    );
  }, 120_000);

  it('qwen3-coder: NAME{json}</function> with a long argument', () => {
    budget(
      'missing function prefix',
      (size) => `exec{"command": "${'a'.repeat(size)}"}</function>`,
      run,
      OPTS,
      4008,
    );
  }, 120_000);
});
