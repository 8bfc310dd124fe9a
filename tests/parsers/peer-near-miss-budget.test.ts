/**
 * The readers added for the peer suites of issue 30 (docs/recall.md, "Peer suites"): output
 * length x1 vs x4 costs at most about x4 in CPU time and retained memory
 * (tests/support/cost-scaling.ts), streamed in 64-char pushes. Each input is the worst shape for
 * one reader: GLM bodies of many keys whose value tags are broken (the forward-only seeker),
 * `[Calling tool: ` markers never closed, a Gemma 4 parenthesized call with a long argument,
 * Functionary v2 parts, a `tool_code = ` line, and a call list ending in surplus brackets.
 */
import { describe, it } from 'vitest';
import { budget, pick } from '../hardening/surface-budget.js';
import { pushed64, toolsOf } from './engine-helpers.js';

const tools = toolsOf({
  name: 'get_weather',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
});

const run = pushed64(tools);

const GLM_PIECES = [
  '<arg_key>k</arg_key>',
  '<arg_value>v',
  '</arg_value>',
  'v',
  '\n',
  '<arg_key>city</arg_key>',
];

describe('peer near-miss readers: output length x1 vs x4', () => {
  it('a GLM call of many keys with broken value tags', () => {
    budget(
      'glm broken values',
      (size, rnd) => {
        let body = '';
        while (body.length < size) body += pick(rnd, GLM_PIECES);
        return `<tool_call>get_weather\n${body}</tool_call>`;
      },
      run,
      { from: 2000, max: 256_000 },
      3101,
    );
  }, 120_000);

  it('`[Calling tool: ` markers that never close', () => {
    budget(
      'calling tool unclosed',
      (size) => '[Calling tool: get_weather({"city": "P" '.repeat(Math.ceil(size / 40)),
      run,
      { from: 2000, max: 256_000 },
      3102,
    );
  }, 120_000);

  it('a Gemma 4 parenthesized call with a long argument', () => {
    budget(
      'gemma4 parenthesized',
      (size) => `<|tool_call>call:get_weather(city="${'a'.repeat(size)}")<tool_call|>`,
      run,
      { from: 2000, max: 256_000 },
      3103,
    );
  }, 120_000);

  it('many Functionary v2 parts', () => {
    budget(
      'functionary v2 parts',
      (size, rnd) => {
        let text = '';
        while (text.length < size)
          text += pick(rnd, [
            '<|from|>assistant\n<|recipient|>get_weather\n<|content|>{"city": "Paris"}<|stop|>',
            '<|from|>assistant\n<|recipient|>get_weather\n<|content|>{"city": ',
            '<|from|>assistant\n<|recipient|>all\n<|content|>text ',
          ]);
        return text;
      },
      run,
      { from: 2000, max: 256_000 },
      3104,
    );
  }, 120_000);

  it('a `tool_code = ` line and a call list with surplus brackets', () => {
    budget(
      'tool_code and brackets',
      (size, rnd) =>
        pick(rnd, [
          `tool_code = get_weather(city="${'a'.repeat(size)}")\nprint(tool_code)`,
          `[{"name": "get_weather", "arguments": {"city": "${'a'.repeat(size)}"}}]]`,
        ]),
      run,
      { from: 2000, max: 256_000 },
      3105,
    );
  }, 120_000);
});
