/**
 * Claude Code's request shape through /v1/messages with the SDK's stream: 20 tools with big
 * input_schemas, system as cache_control'd blocks, metadata.user_id, parallel tool_use in the
 * history, then a full turn: parallel tool_use -> tool_result -> a streamed final answer.
 * The fixture (tests/fixtures/anthropic/claude-code-request.json) is hand-written to Claude
 * Code's public request shape (tool names and schema style as its tools present them), not a
 * recording.
 */
import { readFileSync } from 'node:fs';
import Anthropic from '@anthropic-ai/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../server/stack.js';

const fixture = JSON.parse(
  readFileSync(new URL('../fixtures/anthropic/claude-code-request.json', import.meta.url), 'utf8'),
) as Anthropic.MessageCreateParamsStreaming;

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

// Turn = assistant messages in the request: the fixture holds two.
const script = {
  turns: [
    { say: 'unused' },
    { say: 'unused' },
    {
      call: [
        { name: 'Read', arguments: { file_path: '/home/dev/project/README.md' } },
        {
          name: 'Grep',
          arguments: { pattern: 'maxRetries', path: 'policies', output_mode: 'content', '-n': true },
        },
      ],
    },
    { say: 'The retry limit is `maxRetries` in server/config.ts; it defaults to 1 corrective retry.' },
  ],
};

describe('Claude Code through /v1/messages', () => {
  it('a full turn with the SDK stream: parallel tool_use, tool_result, live final answer', async () => {
    stack = await startStack({ sim: { strictHistory: true } });
    const client = new Anthropic({
      baseURL: stack.origin,
      apiKey: 'sk-local',
      maxRetries: 0,
      timeout: 15_000,
    });
    const opts = { headers: { 'x-sim-scenario': JSON.stringify(script) } };
    expect(fixture.tools).toHaveLength(20);

    const first = await client.messages.stream(fixture, opts).finalMessage();
    expect(first.model).toBe(fixture.model);
    expect(first.stop_reason).toBe('tool_use');
    const uses = first.content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
    expect(uses.map((u) => u.name)).toEqual(['Read', 'Grep']);
    expect(uses[1]!.input).toEqual({
      pattern: 'maxRetries',
      path: 'policies',
      output_mode: 'content',
      '-n': true,
    });

    // What the upstream got: every tool plus final_answer, one system string, no cache_control,
    // the history's parallel calls as one assistant message followed by their two results.
    const sent = stack.sim.requests.at(-1)!.body as {
      tools: Array<{ function: { name: string; parameters: unknown } }>;
      tool_choice: unknown;
      messages: Array<{
        role: string;
        content: unknown;
        tool_calls?: Array<{ id: string }>;
        tool_call_id?: string;
      }>;
      metadata?: unknown;
    };
    expect(sent.tools.map((t) => t.function.name)).toEqual([
      ...fixture.tools!.map((t) => (t as Anthropic.Tool).name),
      'final_answer',
    ]);
    expect(sent.tools[7]!.function.parameters).toEqual((fixture.tools![7] as Anthropic.Tool).input_schema);
    expect(sent.tool_choice).toBe('required');
    expect(JSON.stringify(sent)).not.toContain('cache_control');
    expect(sent.metadata).toBeUndefined();
    expect(sent.messages.map((m) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'tool',
      'assistant',
      'tool',
      'user',
    ]);
    expect(String(sent.messages[0]!.content)).toMatch(/^You are Claude Code[\s\S]*<env>/);
    expect(sent.messages[2]!.tool_calls!.map((c) => c.id)).toEqual(['toolu_01A9xQ3mZ', 'toolu_01B7kP2nY']);
    expect(sent.messages.slice(3, 5).map((m) => m.tool_call_id)).toEqual([
      'toolu_01A9xQ3mZ',
      'toolu_01B7kP2nY',
    ]);

    // The client runs both tools and sends the results back, as Claude Code does.
    const next: Anthropic.MessageCreateParamsStreaming = {
      ...fixture,
      messages: [
        ...fixture.messages,
        { role: 'assistant', content: first.content },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: uses[0]!.id, content: '# toolproof\nmaxRetries: 1' },
            {
              type: 'tool_result',
              tool_use_id: uses[1]!.id,
              content: 'policies/corrective-retry.ts:12: maxRetries',
            },
          ],
        },
      ],
    };
    const stream = client.messages.stream(next, opts);
    let deltas = 0;
    stream.on('text', () => deltas++);
    const answer = await stream.finalMessage();
    expect(answer.stop_reason).toBe('end_turn');
    expect(answer.content).toEqual([
      {
        type: 'text',
        text: 'The retry limit is `maxRetries` in server/config.ts; it defaults to 1 corrective retry.',
      },
    ]);
    expect(deltas).toBeGreaterThan(5); // the forced final answer arrives live
    expect(answer.usage.input_tokens).toBeGreaterThan(1000);
    const last = stack.sim.requests.at(-1)!.body as {
      messages: Array<{ role: string; tool_call_id?: string }>;
    };
    expect(
      last.messages
        .filter((m) => m.role === 'tool')
        .map((m) => m.tool_call_id)
        .slice(-2),
    ).toEqual(uses.map((u) => u.id));
  });
});
