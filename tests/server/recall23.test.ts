/**
 * recall23's readings (wild20) through the real server on loopback, with the openai SDK, streamed
 * (one character a chunk) and not: Qwen3.8-27B's unclosed Qwen3-Coder envelope whose arguments
 * are written as attributes after a sentence (jundot/omlx#3153), and the DSML token on an element
 * named after the tool (apmantza/pi-free#376). Each reached the client as text before; now one
 * call, the sentence content, finish reason `tool_calls`, one upstream request. And an envelope the
 * output ended inside whose arguments do not fit, `<tool_call>\n<function=Read>\n</function>` with
 * Read requiring file_path (jundot/omlx#3442): the client was handed Read({}) after the re-ask;
 * now the envelope is re-asked once as a broken call and then reaches the client as the text it
 * is, finish reason `stop`.
 */
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf, textCharByChar } from '../support/harness.js';
import { readThroughSdk } from '../support/sdk-reading.js';

const QUERY =
  'Flowable Work platform-api analytics process-instance query endpoint frequency duration chart data REST';
const LEAD = 'I have comprehensive material. Let me do one final targeted check...';
const URL = 'https://github.com/runningZ1/union-search-skill';
const CASES = [
  {
    what: "Qwen3.8-27B's unclosed envelope, arguments written as attributes (jundot/omlx#3153)",
    text: `${LEAD}\n\n<tool_call>\n<function=websearch>\nquery="${QUERY}" numResults=5`,
    tools: [
      {
        name: 'websearch',
        parameters: {
          type: 'object',
          properties: { query: { type: 'string' }, numResults: { type: 'number' } },
          required: ['query'],
        },
      },
    ],
    want: { calls: [['websearch', { query: QUERY, numResults: 5 }]], content: LEAD, finish: 'tool_calls' },
  },
  {
    what: "DSML's token on an element named after the tool (apmantza/pi-free#376)",
    text: `<｜DSML｜aio-webcontent>\n <url>${URL}</url>\n <budgetTokens>3000</budgetTokens>\n <diff>false</diff>\n</｜DSML｜aio-webcontent>`,
    tools: [
      {
        name: 'aio-webcontent',
        parameters: {
          type: 'object',
          properties: {
            url: { type: 'string' },
            budgetTokens: { type: 'number' },
            diff: { type: 'boolean' },
          },
          required: ['url'],
        },
      },
    ],
    want: {
      calls: [['aio-webcontent', { url: URL, budgetTokens: 3000, diff: false }]],
      content: null,
      finish: 'tool_calls',
    },
  },
].map((c) => ({ ...c, p: proxyInFrontOf(textCharByChar(c.text)) }));

const OMLX = '<tool_call>\n<function=Read>\n</function>';
const READ = {
  name: 'Read',
  parameters: { type: 'object', properties: { file_path: { type: 'string' } }, required: ['file_path'] },
};
const unclosed = proxyInFrontOf(textCharByChar(OMLX));

describe('recall23 readings through the server', () => {
  for (const stream of [false, true])
    it(`an unclosed envelope whose arguments do not fit (jundot/omlx#3442): re-asked, then text (stream: ${stream})`, async () => {
      const before = unclosed.upstream.requests.length;
      const read = await readThroughSdk(unclosed.proxy.origin, [READ], stream);
      expect(read).toEqual({ calls: [], content: OMLX, finish: 'stop' });
      expect(unclosed.upstream.requests.length - before).toBe(2);
    });

  for (const { what, p, tools, want } of CASES)
    for (const stream of [false, true])
      it(`${what}: chat completions (stream: ${stream})`, async () => {
        const before = p.upstream.requests.length;
        const read = await readThroughSdk(p.proxy.origin, tools, stream);
        expect(read).toEqual(want);
        expect(p.upstream.requests.length - before).toBe(1);
      });
});
