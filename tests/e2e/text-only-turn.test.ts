/**
 * An agent's compaction turn keeps its tools (for the prompt cache) and asks for text only:
 * Claude Code 2.1's prompt opens "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools." and
 * rejects any tool call in the answer, so a forced turn whose model called a real tool failed the
 * compaction, on every later try. Through the Messages door with the Anthropic SDK, streamed and
 * not: such a turn goes upstream with tool_choice "auto" and the same tools as the turns around
 * it (final_answer kept: the prompt's bytes, and the backend's cache, hold), the model's text
 * comes back as text; the turn after it is forced as before.
 */
import Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf, streamOrJson, textCompletion, textCompletionStream } from '../support/harness.js';

const SUMMARY = 'Summary: the user asked for the weather in Paris; it was sunny.';
const pair = proxyInFrontOf(
  streamOrJson(
    () => textCompletionStream(SUMMARY),
    () => textCompletion(SUMMARY),
  ),
);

const tools: Anthropic.Tool[] = [
  {
    name: 'Read',
    description: 'Read a file',
    input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
];
const COMPACT =
  'CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\n- Do NOT use Read, Bash, Grep, Glob, Edit, Write, or ANY other tool.\n- Tool calls will be REJECTED and will waste your only turn \u2014 you will fail the task.\n\nYour task is to create a detailed summary of the conversation so far.';
const history: Anthropic.MessageParam[] = [
  { role: 'user', content: 'What is the weather in Paris?' },
  { role: 'assistant', content: 'It is sunny in Paris.' },
];

function lastUpstreamBody(): { tools?: { function: { name: string } }[]; tool_choice?: unknown } {
  const reqs = pair.upstream.requests.filter((r) => r.url.endsWith('/chat/completions'));
  return JSON.parse(reqs[reqs.length - 1]!.body.toString());
}

describe('a compaction turn that forbids tools', () => {
  for (const stream of [false, true]) {
    it(`goes upstream unforced and comes back as text${stream ? ', streamed' : ''}`, async () => {
      const client = new Anthropic({ baseURL: pair.proxy.origin, apiKey: 'unused', maxRetries: 0 });
      const params = {
        model: 'm1',
        max_tokens: 1024,
        tools,
        messages: [
          ...history,
          { role: 'user' as const, content: [{ type: 'text' as const, text: COMPACT }] },
        ],
      };
      const message = stream
        ? await client.messages.stream(params).finalMessage()
        : await client.messages.create(params);
      expect(message.content).toEqual([expect.objectContaining({ type: 'text', text: SUMMARY })]);
      expect(message.stop_reason).toBe('end_turn');
      const sent = lastUpstreamBody();
      expect(sent.tool_choice).toBe('auto');
      const compactionTools = JSON.stringify(sent.tools);

      // The next ordinary turn is forced again.
      await client.messages.create({
        model: 'm1',
        max_tokens: 1024,
        tools,
        messages: [...history, { role: 'user', content: 'Now read notes.txt.' }],
      });
      const next = lastUpstreamBody();
      expect(next.tool_choice).toBe('required');
      // The same tools, byte for byte, on both turns: the prompt's prefix is kept.
      expect(JSON.stringify(next.tools)).toBe(compactionTools);
      expect(next.tools?.map((t) => t.function.name)).toEqual(['Read', 'final_answer']);
    });
  }
});
