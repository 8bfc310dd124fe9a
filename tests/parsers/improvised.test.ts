/**
 * Issue 11 (B2): the improvised family is a whole-output check: it adds no per-character cost
 * and holds only outputs that start like one of its shapes for a DECLARED tool; everything
 * else streams as before (through the server: tests/e2e/improvised-calls.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { createRecoveryStream } from '../../parsers/recover.js';
import { chunks, options, streamed, toolsOf, view, whole } from './engine-helpers.js';

const search = {
  name: 'search',
  parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
};
const tools = toolsOf(search);

function liveContent(text: string): string {
  const s = createRecoveryStream(options(tools));
  let live = '';
  for (const c of chunks(text, 4))
    for (const e of s.push({ content: c })) if (e.type === 'content') live += e.text;
  return live;
}

describe('improvised: what is held, what streams', () => {
  it('prose that starts with a tool name as a word streams live', () => {
    const text = 'search engines index the web; here is how they work in detail.';
    expect(liveContent(text).length).toBeGreaterThan(text.length - 8);
    expect(whole(text, options(tools)).calls).toEqual([]);
  });

  it('an output starting like a call to a declared tool is held, then recovered at the end', () => {
    const text = 'search({"query": "toolproof"})';
    expect(liveContent(text)).toBe('');
    const r = whole(text, options(tools));
    expect(r.calls.map((c) => [c.name, c.format, JSON.parse(c.arguments)])).toEqual([
      ['search', 'improvised', { query: 'toolproof' }],
    ]);
    expect(view(streamed(chunks(text, 1), options(tools)))).toEqual(view(r));
  });

  it('a shape naming an undeclared tool is never a call', () => {
    for (const text of [
      '{"tool": "rm_rf", "args": {"path": "/"}}',
      'rm_rf(path="/")',
      '<rm_rf>{"path": "/"}</rm_rf>',
    ]) {
      const r = whole(text, options(tools));
      expect(r.calls).toEqual([]);
      expect(r.content).toBe(text);
    }
  });

  it('a __proto__ argument in an ad-hoc tag is data, and fails the schema as an unknown key', () => {
    const t = toolsOf({
      name: 'f',
      parameters: { type: 'object', properties: { ['__proto__']: { type: 'string' } } },
    });
    const r = whole('<f><__proto__>x</__proto__></f>', options(t));
    expect(r.calls.map((c) => c.arguments)).toEqual(['{"__proto__":"x"}']);
    expect(whole('<f><constructor>x</constructor></f>', options(t)).calls).toEqual([]);
  });
});

describe('improvised: an output opening with any XML-ish tag is held for the reader (issue 21)', () => {
  const shell = toolsOf({
    name: 'shell',
    parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
  });
  it('a wrapper tag of any name around a call is read, streamed as not', () => {
    const text = '<toolcall><shell>{"command":"pwd && ls -la"}</shell></toolcall>';
    const r = whole(text, options(shell));
    expect(r.calls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([
      ['shell', { command: 'pwd && ls -la' }],
    ]);
    expect(view(streamed(chunks(text, 1), options(shell)))).toEqual(view(r));
  });
  it('an HTML answer is held, then released as the same content', () => {
    const text = '<div class="x">Hello <b>there</b></div>';
    const r = whole(text, options(shell));
    expect(r.calls).toEqual([]);
    expect(r.content).toBe(text);
    expect(view(streamed(chunks(text, 3), options(shell)))).toEqual(view(r));
  });
  it("a family's own marker is not held this way: its family reads it", () => {
    const text = '<tool_call>\n{"name": "shell", "arguments": {"command": "ls"}}\n</tool_call>';
    expect(whole(text, options(shell)).calls.map((c) => c.format)).toEqual(['hermes']);
  });
});
