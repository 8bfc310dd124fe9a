/**
 * The two changes recall18 made for the held-out set wild15, each with the near misses that
 * must stay text, read whole and one character at a time (readBoth):
 * - Doubao Seed's attribute spelling in `<seed:tool_call>`, `<function name="exec">` with
 *   `<parameter name="command" string="true">…</parameter>` (sipeed/picoclaw#3153), read only
 *   when every call names a declared tool and fits its schema;
 * - a call fused into another call's arguments as a key, `"get_weather(location": "…"`
 *   (cactus-compute/cactus#316, LFM2), which stays text in every envelope.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { DeclaredTool } from '../../parsers/types.js';
import { chunks, options, readBoth as readBothRaw, streamed, toolsOf, whole } from './engine-helpers.js';

function readBoth(text: string, tools: Map<string, DeclaredTool>) {
  const r = readBothRaw(text, tools);
  return { calls: r.calls.map(([name, args]) => ({ name, arguments: args })), content: r.content };
}

const EXEC: DeclaredTool = {
  name: 'exec',
  parameters: {
    type: 'object',
    properties: { action: { type: 'string' }, command: { type: 'string' }, timeout: { type: 'integer' } },
    required: ['command'],
  },
};
const SEND: DeclaredTool = {
  name: 'send_message',
  parameters: {
    type: 'object',
    properties: { recipient: { type: 'string' }, message: { type: 'string' } },
    required: ['recipient', 'message'],
  },
};
const WEATHER: DeclaredTool = {
  name: 'get_weather',
  parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
};

const seed = (fn: string) => `<seed:tool_call>\n  ${fn}\n</seed:tool_call>`;

describe('Seed: <function name="NAME"> with <parameter name="KEY" string="true">', () => {
  const tools = toolsOf(EXEC);

  it('reads the call, its values byte for byte, a string="false" value as JSON', () => {
    const r = readBoth(
      seed(
        '<function name="exec">\n    <parameter name="action" string="true">run</parameter>\n    <parameter name="command" string="true"> ls -la /tmp/x y/ </parameter>\n    <parameter name="timeout" string="false">30</parameter>\n  </function>',
      ),
      tools,
    );
    expect(r.calls).toEqual([
      { name: 'exec', arguments: { action: 'run', command: ' ls -la /tmp/x y/ ', timeout: 30 } },
    ]);
    expect(r.content).toBeNull();
  });

  it('keeps the prose before the block as content', () => {
    const r = readBoth(
      `Listing it.\n${seed('<function name="exec"><parameter name="command" string="true">ls</parameter></function>')}`,
      tools,
    );
    expect(r.calls).toEqual([{ name: 'exec', arguments: { command: 'ls' } }]);
    expect(r.content).toBe('Listing it.');
  });

  it('keeps as text an undeclared tool, a key the tool lacks, a missing required key, a duplicate', () => {
    for (const fn of [
      '<function name="shell"><parameter name="command" string="true">ls</parameter></function>',
      '<function name="exec"><parameter name="cmd" string="true">ls</parameter></function>',
      '<function name="exec"><parameter name="action" string="true">run</parameter></function>',
      '<function name="exec"><parameter name="command" string="true">ls</parameter><parameter name="command" string="true">rm</parameter></function>',
      '<function name="exec"><parameter name="command" string="true">ls</parameter>',
    ]) {
      const text = seed(fn);
      expect(readBoth(text, tools), fn).toEqual({ calls: [], content: text });
    }
  });

  it('keeps the block as text when the output was cut inside it', () => {
    const text =
      '<seed:tool_call>\n<function name="exec"><parameter name="command" string="true">ls</parameter></function>';
    expect(readBothRaw(text, tools, true)).toEqual({ calls: [], content: text });
  });

  it('still reads the Seed-OSS spelling <function=NAME>', () => {
    const r = readBoth(
      '<seed:tool_call><function=exec><parameter=command>ls</parameter></function></seed:tool_call>',
      tools,
    );
    expect(r.calls).toEqual([{ name: 'exec', arguments: { command: 'ls' } }]);
  });
});

describe('a call fused into the arguments as a key', () => {
  const tools = toolsOf(SEND, WEATHER);
  const fused =
    '{"name":"send_message","arguments":{"recipient":"Blob","message":"Checking the weather in San Francisco.","get_weather(location":"San Francisco"}}';

  it('keeps the whole output as text: bare JSON, a list, a Hermes block', () => {
    for (const text of [fused, `[${fused}]`, `<tool_call>\n${fused}\n</tool_call>`])
      expect(readBoth(text, tools), text).toEqual({ calls: [], content: text });
  });

  it('reads a key with a parenthesis that names no tool, or a declared parameter so named', () => {
    const note: DeclaredTool = {
      name: 'note',
      parameters: { type: 'object', properties: { 'get_weather(x)': { type: 'string' } } },
    };
    const t = toolsOf(SEND, WEATHER, note);
    expect(readBoth('{"name":"note","arguments":{"get_weather(x)":"y"}}', t).calls).toEqual([
      { name: 'note', arguments: { 'get_weather(x)': 'y' } },
    ]);
    expect(
      readBoth('{"name":"send_message","arguments":{"recipient":"a","message":"b","f(x":"y"}}', t).calls,
    ).toEqual([{ name: 'send_message', arguments: { recipient: 'a', message: 'b', 'f(x': 'y' } }]);
  });
});

describe('property: streamed in random pieces equals whole', () => {
  const tools = toolsOf(EXEC, SEND, WEATHER);
  // values a shell command may hold, markup-like characters included (never the close tag)
  const value = fc.stringMatching(/^[a-z0-9 ./_"'<>=-]{1,30}$/).filter((v) => !v.includes('</'));
  const lead = fc.constantFrom('', 'Running it.\n', '好的，我来执行。\n\n');

  function both(text: string, size: number) {
    const r = whole(text, options(tools));
    const st = streamed(chunks(text, size), options(tools));
    expect(st.calls).toEqual(r.calls);
    expect(st.content).toBe(r.content);
    return r;
  }

  it('reads a declared Seed call with attributes exactly, and an undeclared one as text', () => {
    fc.assert(
      fc.property(
        lead,
        value,
        fc.boolean(),
        fc.boolean(),
        fc.integer({ min: 1, max: 17 }),
        (pre, v, indent, declared, size) => {
          const sp = indent ? '  ' : '';
          const name = declared ? 'exec' : 'shell';
          const text = `${pre}<seed:tool_call>\n${sp}<function name="${name}">\n${sp}${sp}<parameter name="command" string="true">${v}</parameter>\n${sp}</function>\n</seed:tool_call>`;
          const r = both(text, size);
          if (declared) {
            expect(r.calls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([['exec', { command: v }]]);
          } else {
            expect(r.calls).toEqual([]);
            expect(r.content).toBe(text);
          }
        },
      ),
      { numRuns: 300, seed: 18_101 },
    );
  });

  it('never reads arguments holding a key that opens another declared call', () => {
    fc.assert(
      fc.property(
        value,
        fc.constantFrom('get_weather', 'send_message', 'exec'),
        fc.integer({ min: 1, max: 17 }),
        (v, other, size) => {
          const args = { recipient: 'a', message: v, [`${other}(x`]: v };
          for (const text of [
            JSON.stringify({ name: 'send_message', arguments: args }),
            `<tool_call>\n${JSON.stringify({ name: 'send_message', arguments: args })}\n</tool_call>`,
          ]) {
            const r = both(text, size);
            expect(r.calls).toEqual([]);
            expect(r.content).toBe(text);
          }
        },
      ),
      { numRuns: 300, seed: 18_102 },
    );
  });
});
