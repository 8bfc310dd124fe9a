/**
 * The improvised whole-output reader and the hermes variants it shares (issue 11) on hostile
 * model output: a call followed by a long run of end-of-turn tokens, many call objects with
 * stray tags between them, many Python-style calls in tags (closed and unclosed), a call
 * inside thousands of nested ad-hoc wrapper tags, `<function>` tags with no name. Audited
 * linear (each case well under a second on the 2-core box); this guards it. Generous bounds:
 * a quadratic regression on 400k chars takes minutes.
 */
import { describe, expect, it } from 'vitest';
import { processCpuMs } from '../hardening/loop-probe.js';
import { recoverMessage } from '../../parsers/recover.js';
import { options, toolsOf } from './engine-helpers.js';

const tools = toolsOf({
  name: 'get_weather',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
});
const CALL = '{"name": "get_weather", "arguments": {"city": "Paris"}}';

function run(text: string): { ms: number; calls: number } {
  const t0 = processCpuMs();
  const r = recoverMessage({ content: text, reasoning: null }, options(tools));
  return { ms: processCpuMs() - t0, calls: r.calls.length };
}

describe('improvised shapes on hostile output stay linear', () => {
  it('a call followed by 40k end-of-turn tokens', () => {
    const r = run(CALL + '<|im_end|>'.repeat(40_000));
    expect(r.calls).toBe(1);
    expect(r.ms).toBeLessThan(5000);
  });

  it('a call followed by 40k stray closing tags', () => {
    const r = run(CALL + '\n</tool_call>'.repeat(40_000));
    expect(r.calls).toBe(1);
    expect(r.ms).toBeLessThan(5000);
  });

  it('8k call objects back to back', () => {
    const r = run(`${CALL} `.repeat(8000));
    expect(r.calls).toBe(8000);
    expect(r.ms).toBeLessThan(5000);
  });

  it('10k Python-style calls in tool_call tags, and 20k unclosed ones', () => {
    const r = run('<tool_call>get_weather("x")</tool_call>'.repeat(10_000));
    expect(r.calls).toBe(10_000);
    expect(r.ms).toBeLessThan(10_000);
    const open = run('<tool_call>get_weather('.repeat(20_000));
    expect(open.calls).toBe(0);
    expect(open.ms).toBeLessThan(5000);
  });

  it('a call inside 6k nested <response> wrappers, and 6k unbalanced ones', () => {
    const n = 6000;
    // the schema-guided reader reads a few wrapper levels deep (issue 21); past that it is text
    expect(run(`${'<response>'.repeat(3)}${CALL}${'</response>'.repeat(3)}`).calls).toBe(1);
    const r = run(`${'<response>'.repeat(n)}${CALL}${'</response>'.repeat(n)}`);
    expect(r.calls).toBe(0);
    expect(r.ms).toBeLessThan(5000);
    const unbalanced = run(`${'<response>'.repeat(n)}${CALL}${'</response>'.repeat(n - 1)}`);
    expect(unbalanced.calls).toBe(0);
    expect(unbalanced.ms).toBeLessThan(5000);
  });

  it('20k <tool_call><function> blocks with no closing tag', () => {
    const r = run('<tool_call><function>get_weather</function>{"city": "x"}\n'.repeat(20_000));
    expect(r.ms).toBeLessThan(10_000);
  });
});
