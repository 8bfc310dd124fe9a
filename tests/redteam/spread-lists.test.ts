/**
 * Lists a client or an upstream sizes, appended with push(...list): past ~120k items the spread
 * overflows the stack (protocol/append-all.ts). Two were left: the GenAI messages of a traced
 * request (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true) spread a message's content
 * parts and calls, so a user message of 150,000 text parts (5 MB, under the body limit) or an
 * answer of 150,000 calls threw inside the span's description: the span ended without the
 * attributes written after it; single-call-turns spread the results left after a split
 * message's calls; and the envelope scanner spread the events of a whole output it held (an
 * output that starts like a whole-output format, under maxHeldBytes): a model output of 65,000
 * Mistral calls with a character between them (1.04 MB) was a 500 TP_ERR_INTERNAL on every door,
 * streamed or not.
 */
import { describe, expect, it } from 'vitest';
import { recoverMessage } from '../../parsers/recover.js';
import { splitParallelCalls } from '../../policies/single-call-turns/index.js';
import type { ChatCompletion, ChatCompletionRequest, ChatMessage } from '../../protocol/openai.js';
import { completionMessages, inputMessages, toolDefinitions } from '../../server/tracing/genai.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';

const N = 150_000;
const call = (id: string) => ({ id, type: 'function' as const, function: { name: 'read', arguments: '{}' } });

describe('lists of 150,000 appended without a spread', () => {
  it("a traced request's message of 150,000 parts", () => {
    const content = Array.from({ length: N }, () => ({ type: 'text' as const, text: 'a' }));
    const request = { model: 'm', messages: [{ role: 'user', content }] } as ChatCompletionRequest;
    expect(JSON.parse(inputMessages(request))[0].parts).toHaveLength(N);
  });

  it('a traced answer of 150,000 calls', () => {
    const tool_calls = Array.from({ length: N }, (_, i) => call(`c${i}`));
    const completion = {
      choices: [
        { index: 0, message: { role: 'assistant', content: null, tool_calls }, finish_reason: 'tool_calls' },
      ],
    } as unknown as ChatCompletion;
    expect(JSON.parse(completionMessages(completion))[0].parts).toHaveLength(N);
  });

  it("a traced request's 150,000 tools: their names only, at a cost linear in the list (x1 against x4)", () => {
    // gen_ai.tool.definitions under the content opt-in: the client's list, whatever its length
    // or its schemas' size, costs a pass over it and keeps no description or schema.
    const tools = (n: number) =>
      ({
        model: 'm',
        messages: [],
        tools: Array.from({ length: n }, (_, i) => ({
          type: 'function',
          function: { name: `t${i}`, description: 'd'.repeat(64), parameters: { type: 'object' } },
        })),
      }) as unknown as ChatCompletionRequest;
    const all = JSON.parse(toolDefinitions(tools(N)) ?? '[]') as unknown[];
    expect(all).toHaveLength(N);
    expect(all[N - 1]).toEqual({ type: 'function', name: `t${N - 1}` });
    const s = measureScaling(tools, (r) => toolDefinitions(r), { from: 256, max: 65_536 });
    expect(withinBudget(s, 5).time, JSON.stringify(s)).toBe(true);
  });

  it('a split message followed by 150,000 results answering none of its calls', () => {
    const messages: ChatMessage[] = [
      { role: 'assistant', content: null, tool_calls: [call('a'), call('b')] },
    ];
    for (let i = 0; i < N; i++) messages.push({ role: 'tool', tool_call_id: `x${i}`, content: '' });
    const { messages: out, split } = splitParallelCalls(messages);
    expect(split).toBe(1);
    expect(out).toHaveLength(N + 2);
  });

  it('a held whole output of 65,000 calls with text between them (130,000 events)', () => {
    let n = 0;
    const tools = new Map([['a', { name: 'a', parameters: { type: 'object' } }]]);
    const r = recoverMessage(
      { content: '[TOOL_CALLS]a{}x'.repeat(65_000), reasoning: null },
      { tools, newId: () => `c${n++}` },
    );
    expect(r.calls).toHaveLength(65_000);
  });
});
