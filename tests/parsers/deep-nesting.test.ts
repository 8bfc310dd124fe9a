/**
 * Issue 8 (A4): 100k-level nesting in tool arguments threw RangeError (JSON.stringify's and
 * jsonrepair's recursion) out of the engine: a 500 for the client. Nesting deeper than
 * MAX_NESTING (512) is now "not a call": the text stays content, never an exception.
 */
import { describe, expect, it } from 'vitest';
import { MAX_NESTING, nestsDeeper } from '../../parsers/kit/json-scan.js';
import { decodeJsonLenient, unsafeArguments } from '../../parsers/kit/lenient-json.js';
import { chunks, options, streamed, toolsOf, view, whole } from './engine-helpers.js';

const N = 100_000;
const deep = `${'['.repeat(N)}${']'.repeat(N)}`;
const tools = toolsOf({ name: 'f' });

const hostile: Record<string, string> = {
  'hermes JSON arguments': `<tool_call>{"name":"f","arguments":{"a":${deep}}}</tool_call>`,
  'hermes JSON needing a repair (jsonrepair path)': `<tool_call>{"name":"f","arguments":{"a":${'['.repeat(N)}1,${']'.repeat(N)}}}</tool_call>`,
  'bare JSON output': `{"name":"f","arguments":{"a":${deep}}}`,
  'pythonic list': `[f(a=${deep})]`,
  'objects, not arrays': `<tool_call>{"name":"f","arguments":${'{"a":'.repeat(N)}1${'}'.repeat(N)}}</tool_call>`,
  'qwen3-coder parameter typed as array': `<tool_call>\n<function=f>\n<parameter=a>\n${deep}\n</parameter>\n</function>\n</tool_call>`,
};

describe('deep nesting never throws and is not a call', () => {
  for (const [name, text] of Object.entries(hostile)) {
    it(name, () => {
      const t = toolsOf({ name: 'f', parameters: { type: 'object', properties: { a: { type: 'array' } } } });
      const r = whole(text, options(t));
      expect(r.calls).toEqual([]);
      // nothing lost: the raw text is the content
      expect(r.content).toBe(text);
      expect(view(streamed(chunks(text, 4096), options(t)))).toEqual(view(r));
    });
  }

  it('nesting at the cap is still a call', () => {
    const ok = `${'['.repeat(MAX_NESTING - 2)}${']'.repeat(MAX_NESTING - 2)}`;
    const r = whole(`<tool_call>{"name":"f","arguments":{"a":${ok}}}</tool_call>`, options(tools));
    expect(r.calls).toHaveLength(1);
  });

  it('the guards: nestsDeeper is string aware, unsafeArguments walks without recursion', () => {
    expect(nestsDeeper(`"${'['.repeat(1000)}"`, 10)).toBe(false);
    expect(nestsDeeper('[[[', 2)).toBe(true);
    expect(decodeJsonLenient(deep)).toBeNull();
    let v: unknown = 1;
    for (let i = 0; i < N; i++) v = [v];
    expect(unsafeArguments({ a: v })).toBe('arguments nest too deep');
  });
});
