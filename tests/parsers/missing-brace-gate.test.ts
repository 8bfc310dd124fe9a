/**
 * A call whose last `}` is missing at the end of output is read only when the closed arguments
 * fit the declared tool's schema, as before an end marker (parsers/engine/engine.ts). Closing a
 * cut call took whatever its text held: recall21's property over bare JSON calls met
 * `{"path": "p", "content": "",": "[""}}` read with an invented key `": "`, and a call cut after
 * its name read as `{}` for a tool that requires `city` (ollama/ollama tools/tools_test.go
 * TestParser[json maybe a tool call]).
 */
import { describe, expect, it } from 'vitest';
import type { DeclaredTool } from '../../parsers/types.js';
import { options, readBoth, toolsOf, WRITE_FILE, whole } from './engine-helpers.js';

const TEMPERATURE: DeclaredTool = {
  name: 'get_temperature',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' }, format: { type: 'string', enum: ['fahrenheit', 'celsius'] } },
    required: ['city'],
  },
};
const tools = toolsOf(TEMPERATURE, WRITE_FILE);

describe('a missing brace at the end of output', () => {
  it('is closed when the arguments then fit the schema', () => {
    for (const text of [
      '{"name": "get_temperature", "arguments": {"city": "Oslo"}',
      '{"name": "write_file", "arguments": {"path": "a.txt", "content": "hi"}',
    ])
      expect(readBoth(text, tools).calls).toHaveLength(1);
    expect(
      readBoth('{"name": "get_temperature", "arguments": {"city": "Oslo"}', tools).calls[0]?.[1],
    ).toEqual({
      city: 'Oslo',
    });
  });

  it('stays text, byte for byte, when closing it would invent or leave out arguments', () => {
    for (const text of [
      // cut after its name: {} lacks the required city
      '{"name": "get_temperature","arguments": {',
      // a stray `",": "` read as a key the tool does not have
      '{"name": "write_file", "arguments": {"path": "p", "content": "",": "[""}}',
      // a value outside its enum
      '{"name": "get_temperature", "arguments": {"city": "Oslo", "format": "kelvin"}',
    ])
      expect(readBoth(text, tools)).toEqual({ calls: [], content: text });
  });

  it('is a broken call of a declared tool, re-asked (unrecovered), not text the model meant', () => {
    // corrective-retry re-asks only 'unrecovered' leaks: the cut call is asked again, as it was
    // when closing it read `{"city": null}` and the arguments' validation caught it
    const leak = whole(
      'Checking. <tool_call>{"name": "get_temperature", "arguments": {"city": ',
      options(tools),
    ).leaks[0];
    expect(leak).toMatchObject({ outcome: 'unrecovered' });
    expect(leak?.reason).toMatch(/^missing-brace at the end of output/);
  });
});
