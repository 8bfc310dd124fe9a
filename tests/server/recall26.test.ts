/**
 * recall26's reading (wild10's flat tool_code fence) through the real server on loopback, with
 * the openai SDK, streamed (one character a chunk) and not: gemini-2.0-flash's
 * ```` ```tool_codeprint(default_api.Greetings())``` ```` as AutoGen's issue quotes it
 * (microsoft/autogen#6505). It reached the client as text before; now one call, finish reason
 * `tool_calls`, one upstream request, no content.
 */
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf, textCharByChar } from '../support/harness.js';
import { readThroughSdk } from '../support/sdk-reading.js';

const TEXT = '```tool_codeprint(default_api.Greetings())```';
const TOOLS = [{ name: 'Greetings', parameters: { type: 'object', properties: {} } }];
const p = proxyInFrontOf(textCharByChar(TEXT));

describe('recall26 reading through the server', () => {
  for (const stream of [false, true])
    it(`a call fence on one line with a code body (microsoft/autogen#6505): chat completions (stream: ${stream})`, async () => {
      const before = p.upstream.requests.length;
      const read = await readThroughSdk(p.proxy.origin, TOOLS, stream);
      expect(read).toEqual({ calls: [['Greetings', {}]], content: null, finish: 'tool_calls' });
      expect(p.upstream.requests.length - before).toBe(1);
    });
});
