/**
 * recall24's readings (wild19's two misses) through the real server on loopback, with the openai
 * SDK, streamed (one character a chunk) and not: GLM's bare call after the close of the reasoning
 * block Z.ai's web chat renders (izaart95-jpg/GLM-Free-API#38), and MiniMax-M2's invoke with every
 * tag's brackets left out (exo-explore/exo#1882), and wild21's Qwen3.6 block opened by an element
 * named after the tool (anomalyco/opencode#30061). Each reached the client as text before; now one
 * call, finish reason `tool_calls`, one upstream request, the block's close kept as content.
 */
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf, textCharByChar } from '../support/harness.js';
import { readThroughSdk } from '../support/sdk-reading.js';

const CASES = [
  {
    what: "GLM's bare call after a reasoning block's close (izaart95-jpg/GLM-Free-API#38)",
    text: '</details>\nbash(i="Inspecting the upstream commit", command="git -C ../repo show --stat --oneline origin/main")',
    tools: [
      {
        name: 'bash',
        parameters: {
          type: 'object',
          properties: { i: { type: 'string' }, command: { type: 'string' } },
          required: ['command'],
        },
      },
    ],
    want: {
      calls: [
        [
          'bash',
          {
            i: 'Inspecting the upstream commit',
            command: 'git -C ../repo show --stat --oneline origin/main',
          },
        ],
      ],
      content: '</details>',
      finish: 'tool_calls',
    },
  },
  {
    what: "MiniMax-M2's invoke without its brackets (exo-explore/exo#1882)",
    text: 'invoke name="get_weather">\nparameter name="location">Parisparameter>\ninvoke>',
    tools: [
      {
        name: 'get_weather',
        parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
      },
    ],
    want: { calls: [['get_weather', { location: 'Paris' }]], content: null, finish: 'tool_calls' },
  },
  {
    what: "Qwen3.6's block opened by <read> where <function=read> belongs (anomalyco/opencode#30061)",
    text: '<tool_call>\n<read>\n<parameter=filePath>\n/home/abc/some/file.java\n</parameter>\n</function>\n</tool_call>',
    tools: [
      {
        name: 'read',
        parameters: {
          type: 'object',
          properties: { filePath: { type: 'string' }, offset: { type: 'number' }, limit: { type: 'number' } },
          required: ['filePath'],
        },
      },
    ],
    want: {
      calls: [['read', { filePath: '/home/abc/some/file.java' }]],
      content: null,
      finish: 'tool_calls',
    },
  },
].map((c) => ({ ...c, p: proxyInFrontOf(textCharByChar(c.text)) }));

describe('recall24 readings through the server', () => {
  for (const { what, p, tools, want } of CASES)
    for (const stream of [false, true])
      it(`${what}: chat completions (stream: ${stream})`, async () => {
        const before = p.upstream.requests.length;
        const read = await readThroughSdk(p.proxy.origin, tools, stream);
        expect(read).toEqual(want);
        expect(p.upstream.requests.length - before).toBe(1);
      });
});
