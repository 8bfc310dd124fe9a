/**
 * recall22's readings through the real server on loopback, with the openai SDK, streamed (one
 * character a chunk) and not, one upstream request each: Qwen2.5-7B's Hermes block whose arguments
 * sit in a `function_call` object beside a stray `"kwargs{": {}`, its name twice and one brace too
 * many (gpustack/llama-box#16), and wild19's three: MiniMax-M2.7's `[TOOL_CALL]` with a
 * single-quoted name, Nemotron's list closed by an orphan `</TOOLCALL>`, MiniMax-M3's first
 * parameter without its opening tag. Each reached the client as text before.
 */
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf, textCharByChar } from '../support/harness.js';
import { readThroughSdk } from '../support/sdk-reading.js';

const BLOCK =
  '<tool_call>\n{"name":"get_temperature","function_call":{"args":{"location":"ShenZhen"},"kwargs{":{}},"name":"get_temperature"}}\n</tool_call>';
const NS = ']<]minimax[>[';
const place = (name: string, key = 'location') => ({
  name,
  parameters: { type: 'object', properties: { [key]: { type: 'string' } }, required: [key] },
});
const SAVE = {
  name: 'save_file',
  parameters: {
    type: 'object',
    properties: { filename: { type: 'string' }, content: { type: 'string' } },
    required: ['filename', 'content'],
  },
};
const CASES = [
  {
    what: 'arguments held beside a junk key (gpustack/llama-box#16)',
    text: BLOCK,
    tools: [place('get_temperature'), place('get_weather')],
    want: ['get_temperature', { location: 'ShenZhen' }],
  },
  {
    what: "MiniMax-M2.7's [TOOL_CALL] with a single-quoted name (openclaw/openclaw#70331)",
    text: `[TOOL_CALL] {tool => 'exec', args => {--command "echo test"}} [/TOOL_CALL]`,
    tools: [place('exec', 'command')],
    want: ['exec', { command: 'echo test' }],
  },
  {
    what: "Nemotron's list closed by an orphan </TOOLCALL> (ai-dynamo/dynamo#10115)",
    text: '[{"name": "get_weather", "arguments": {"location": "NYC"}}]</TOOLCALL>',
    tools: [place('get_weather')],
    want: ['get_weather', { location: 'NYC' }],
  },
  {
    what: "MiniMax-M3's first parameter without its opening tag (vllm-project/vllm#51075)",
    text: `${NS}<tool_call>${NS}<invoke name="save_file">${NS}offerta.docx${NS}</filename>${NS}<content>Hello${NS}</content>${NS}</invoke>${NS}</tool_call>`,
    tools: [SAVE],
    want: ['save_file', { filename: 'offerta.docx', content: 'Hello' }],
  },
].map((c) => ({ ...c, p: proxyInFrontOf(textCharByChar(c.text)) }));

describe('recall22 readings through the server', () => {
  for (const { what, p, tools, want } of CASES)
    for (const stream of [false, true])
      it(`${what}: chat completions (stream: ${stream})`, async () => {
        const before = p.upstream.requests.length;
        const read = await readThroughSdk(p.proxy.origin, tools, stream);
        expect(read).toEqual({ calls: [want], content: null, finish: 'tool_calls' });
        expect(p.upstream.requests.length - before).toBe(1);
      });
});
