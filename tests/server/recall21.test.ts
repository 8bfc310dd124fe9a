/**
 * recall21's readings through the real server on loopback, with the openai SDK, streamed (one
 * character a chunk) and not, one upstream request each:
 * - a Kimi K2 call block leaked into content without its argument marker (vllm-project/vllm#31207
 *   quotes `<|tool_call_begin|> functions.get_weather:0 {"city": "Tokyo"} <|tool_call_end|>`);
 * - a bare JSON call whose string argument holds quotes the model did not escape (the shape
 *   NousResearch/hermes-agent#36271 gives for write_file.content, without the Hermes tag).
 * Both reached the client as text before.
 */
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf, textCharByChar } from '../support/harness.js';
import { readThroughSdk } from '../support/sdk-reading.js';

const KIMI = '<|tool_call_begin|> functions.get_weather:0 {"city": "Tokyo"} <|tool_call_end|>';
const BARE = '{"name": "write_file", "arguments": {"path": "a.py", "content": "env.get("KEY", "default")"}}';
const kimi = proxyInFrontOf(textCharByChar(KIMI));
const bare = proxyInFrontOf(textCharByChar(BARE));
const WEATHER = {
  name: 'get_weather',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
const WRITE = {
  name: 'write_file',
  parameters: {
    type: 'object',
    properties: { path: { type: 'string' }, content: { type: 'string' } },
    required: ['path', 'content'],
  },
};

describe('recall21 readings through the server', () => {
  for (const [what, p, tool, want] of [
    ['a Kimi K2 block without its argument marker', kimi, WEATHER, ['get_weather', { city: 'Tokyo' }]],
    [
      'a bare JSON call with quotes left unescaped',
      bare,
      WRITE,
      ['write_file', { path: 'a.py', content: 'env.get("KEY", "default")' }],
    ],
  ] as const)
    for (const stream of [false, true])
      it(`${what}: chat completions (stream: ${stream})`, async () => {
        const before = p.upstream.requests.length;
        const read = await readThroughSdk(p.proxy.origin, [tool], stream);
        expect(read).toEqual({ calls: [want], content: null, finish: 'tool_calls' });
        expect(p.upstream.requests.length - before).toBe(1);
      });
});
