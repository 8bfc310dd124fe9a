/**
 * HyperCLOVAX-SEED-Think's JSON-valued GLM reader claims `<tool_call>` before GLM: it must not
 * hold prose that only mentions the tag until a close or the end of output.
 */
import { describe, expect, it } from 'vitest';
import { createRecoveryStream } from '../../parsers/recover.js';

const tools = new Map([
  ['get_weather', { name: 'get_weather', parameters: { type: 'object', properties: {} } }],
]);

function contentBeforeFinish(text: string): string {
  const s = createRecoveryStream({ tools, newId: () => 'call_0' });
  let out = '';
  for (const ch of text) for (const e of s.push({ content: ch })) if (e.type === 'content') out += e.text;
  return out;
}

describe('hyperclovax <tool_call> reader', () => {
  it('streams prose that mentions <tool_call> without waiting for the end of output', () => {
    // What follows the tag is held only while it could still be a short sentence before a call's
    // JSON inside the wrapper (Hermes' `<tool_call>Sure. {...}</tool_call>`, docs/recall.md):
    // at most the lead-in's 400 characters, then the prose streams on.
    const prose = `Wrap it in <tool_call> tags, then stop. ${'More prose follows here. '.repeat(40)}`;
    expect(contentBeforeFinish(prose).length).toBeGreaterThan(prose.length - 25);
  });

  it('holds a GLM-shaped block until it closes, then reads its JSON values', () => {
    const block = '<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>"Seoul"</arg_value>\n';
    expect(contentBeforeFinish(block)).toBe('');
    const s = createRecoveryStream({ tools, newId: () => 'call_0' });
    const events = [...s.push({ content: `${block}</tool_call>` }), ...s.finish()];
    const args = events.find((e) => e.type === 'call-args');
    expect(args && args.type === 'call-args' ? JSON.parse(args.fragment) : null).toEqual({ city: 'Seoul' });
  });
});
