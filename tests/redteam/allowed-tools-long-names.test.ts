/**
 * tool_choice `allowed_tools` (protocol/allowed-tools.ts) lists names the client picks, of any
 * length: the declared tools' names are capped at MAX_TOOL_NAME_CHARS, the allowed list's are
 * not. Its names went into a plain Set, and V8 hashes a string past 16,383 characters by its
 * length alone: n names of 20 KB alike but for their ends compared each with all the others
 * (256 vs 1,024 names: 15-36 vs 494-552 ms, x14-37). Through the real server the request's
 * own linear work (~40 ns a byte) hides most of it: 640 such names cost 1.5-1.65x what as many
 * names of as many bytes, each of its own length, cost, on the chat and Responses doors; at the
 * 32 MB body limit (1,900 names of 16.4 KB) ~2 s of the loop. Now a StringSet (a long name keyed
 * by its digest): linear, and the doors serve such a list as any other.
 */
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { narrowChatAllowedTools } from '../../protocol/allowed-tools.js';
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';
import { answerJson, proxyInFrontOf, textCompletion } from '../support/harness.js';

const pair = proxyInFrontOf(answerJson(textCompletion('done')));

/** `n` names of 20,006 characters, alike but for their last six. */
const longs = (n: number) =>
  Array.from({ length: n }, (_, i) => `${'a'.repeat(20_000)}${String(i).padStart(6, '0')}`);

const chatRequest = (names: string[]): ChatCompletionRequest => ({
  model: 'm1',
  messages: [{ role: 'user', content: 'hi' }],
  tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
  tool_choice: {
    type: 'allowed_tools',
    allowed_tools: {
      mode: 'auto',
      tools: [...names, 'f'].map((name) => ({ type: 'function', function: { name } })),
    },
  } as never,
});

const client = () => new OpenAI({ baseURL: `${pair.proxy.origin}/v1`, apiKey: 'none', maxRetries: 0 });

describe('allowed_tools of many long names', () => {
  it('the allowed names are read in linear CPU (x1 vs x4), and narrow as before', () => {
    const narrowed = narrowChatAllowedTools(chatRequest(longs(3)));
    expect(narrowed?.tools?.map((t) => ('function' in t ? t.function.name : ''))).toEqual(['f']);
    expect(narrowed?.tool_choice).toBe('auto');
    const s = measureScaling(longs, (names) => narrowChatAllowedTools(chatRequest(names)), {
      from: 16,
      max: 1024,
    });
    expect(withinBudget(s, 5).time, JSON.stringify(s)).toBe(true);
  });

  it('chat completions and Responses serve a list of long names alike (openai SDK)', async () => {
    const names = longs(64);
    const chat = await client().chat.completions.create(chatRequest(names) as never);
    expect((chat as OpenAI.ChatCompletion).choices[0]?.message.content).toBe('done');
    const response = await client().responses.create({
      model: 'm1',
      input: 'hi',
      tools: [{ type: 'function', name: 'f', parameters: { type: 'object' }, strict: false }],
      tool_choice: {
        type: 'allowed_tools',
        mode: 'auto',
        tools: [...names, 'f'].map((name) => ({ type: 'function', name })),
      },
    });
    expect(response.output_text).toBe('done');
  }, 30_000);
});
