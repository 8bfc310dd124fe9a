/**
 * Held-out style probes of /v1/messages and /v1/responses with the real SDKs: for each upstream
 * behaviour (a final answer, calls, a leak, cuts, reasoning, tool_choice variants, broken
 * arguments), the non-streamed answer and the SDK's accumulation of the stream are equal, the
 * stream is a valid event sequence, and the mapping (stop_reason / status, blocks / items) is the
 * API's own. The upstream behaves the same for both requests (tests/redteam/front-doors.ts).
 */
import type Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_MODEL_SETTINGS } from '../../protocol/settings.js';
import {
  bothMessages,
  bothResponses,
  type FrontDoors,
  normalizeMessage,
  normalizeResponse,
  type PlannedTurn,
  startFrontDoors,
} from './front-doors.js';

const citySchema = {
  type: 'object' as const,
  properties: { city: { type: 'string' } },
  required: ['city'],
};
const weatherA: Anthropic.Tool = { name: 'get_weather', input_schema: citySchema };
const weatherR: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'get_weather',
  parameters: citySchema,
  strict: false,
};

const answer = (text: string) => ({ name: 'final_answer', arguments: JSON.stringify({ answer: text }) });
const weather = (city: string, id?: string) => ({
  name: 'get_weather',
  arguments: JSON.stringify({ city }),
  ...(id ? { id } : {}),
});

interface Case {
  name: string;
  plan: PlannedTurn[];
  anthropic?: Partial<Anthropic.MessageCreateParamsNonStreaming>;
  responses?: Partial<OpenAI.Responses.ResponseCreateParamsNonStreaming>;
  /** Anthropic: stop_reason and block types. */
  stop: Anthropic.StopReason;
  blocks: string[];
  /** Responses: status and output item types. */
  status: OpenAI.Responses.ResponseStatus;
  items: string[];
}

const cases: Case[] = [
  {
    name: 'a final answer',
    plan: [{ calls: [answer('Hello world, ünïcödé 🎉')] }],
    stop: 'end_turn',
    blocks: ['text'],
    status: 'completed',
    items: ['message'],
  },
  {
    name: 'one call',
    plan: [{ calls: [weather('Paris')] }],
    stop: 'tool_use',
    blocks: ['tool_use'],
    status: 'completed',
    items: ['function_call'],
  },
  {
    name: 'two parallel calls',
    plan: [{ calls: [weather('Paris', 'c1'), weather('Rome', 'c2')] }],
    stop: 'tool_use',
    blocks: ['tool_use', 'tool_use'],
    status: 'completed',
    items: ['function_call', 'function_call'],
  },
  {
    name: 'a leaked <tool_call> in content',
    plan: [{ content: '<tool_call>{"name":"get_weather","arguments":{"city":"Oslo"}}</tool_call>' }],
    stop: 'tool_use',
    blocks: ['tool_use'],
    status: 'completed',
    items: ['function_call'],
  },
  {
    name: 'text then a call',
    plan: [{ content: 'Let me check.', calls: [weather('Paris')] }],
    stop: 'tool_use',
    blocks: ['text', 'tool_use'],
    status: 'completed',
    items: ['message', 'function_call'],
  },
  {
    name: 'a final answer cut by max tokens',
    plan: [{ calls: [{ name: 'final_answer', arguments: '{"answer":"Hello wor' }], finish: 'length' }],
    stop: 'max_tokens',
    blocks: ['text'],
    status: 'incomplete',
    items: ['message'],
  },
  {
    name: 'reasoning, then a final answer',
    plan: [{ reasoning: 'thinking hard', calls: [answer('42')] }],
    stop: 'end_turn',
    blocks: ['thinking', 'text'],
    status: 'completed',
    items: ['reasoning', 'message'],
  },
  {
    name: 'a content filter stop',
    plan: [{ content: 'bad', finish: 'content_filter' }],
    stop: 'refusal',
    blocks: ['text'],
    status: 'incomplete',
    items: ['message'],
  },
  {
    name: 'tool_choice none, the model calls anyway: text, never a call',
    plan: [{ calls: [weather('Paris')] }],
    anthropic: { tool_choice: { type: 'none' } },
    responses: { tool_choice: 'none' },
    stop: 'end_turn',
    blocks: ['text'],
    status: 'completed',
    items: ['message'],
  },
  {
    name: 'parallel calls disabled, the model makes two: one',
    plan: [{ calls: [weather('Paris', 'c1'), weather('Rome', 'c2')] }],
    anthropic: { tool_choice: { type: 'auto', disable_parallel_tool_use: true } },
    responses: { parallel_tool_calls: false },
    stop: 'tool_use',
    blocks: ['tool_use'],
    status: 'completed',
    items: ['function_call'],
  },
  {
    name: 'arguments that are not JSON, twice (retries ran out)',
    plan: [{ calls: [{ name: 'get_weather', arguments: 'hello' }] }],
    stop: 'tool_use',
    blocks: ['tool_use'],
    status: 'completed',
    items: ['function_call'],
  },
  {
    name: 'arguments with trailing garbage, twice',
    plan: [{ calls: [{ name: 'get_weather', arguments: '{"city":"x"}x' }] }],
    stop: 'tool_use',
    blocks: ['tool_use'],
    status: 'completed',
    items: ['function_call'],
  },
  {
    name: 'arguments that are an array, twice',
    plan: [{ calls: [{ name: 'get_weather', arguments: '[1,2]' }] }],
    stop: 'tool_use',
    blocks: ['tool_use'],
    status: 'completed',
    items: ['function_call'],
  },
  {
    name: 'a call cut by max tokens inside its arguments',
    plan: [{ calls: [{ name: 'get_weather', arguments: '{"city":"Par' }], finish: 'length' }],
    stop: 'max_tokens',
    blocks: ['tool_use'],
    status: 'incomplete',
    items: ['function_call'],
  },
];

/** Block starts and stops pair up in index order; message_start first, message_stop last. */
function expectValidMessageEvents(events: Anthropic.MessageStreamEvent[]): void {
  expect(events[0]!.type).toBe('message_start');
  expect(events.at(-1)!.type).toBe('message_stop');
  expect(events.at(-2)!.type).toBe('message_delta');
  let open: number | null = null;
  let next = 0;
  for (const e of events) {
    if (e.type === 'content_block_start') {
      expect(open).toBeNull();
      expect(e.index).toBe(next++);
      open = e.index;
    } else if (e.type === 'content_block_delta') {
      expect(e.index).toBe(open);
    } else if (e.type === 'content_block_stop') {
      expect(e.index).toBe(open);
      open = null;
    }
  }
  expect(open).toBeNull();
}

function expectValidResponseEvents(events: OpenAI.Responses.ResponseStreamEvent[]): void {
  expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
  expect(events[0]!.type).toBe('response.created');
  expect(['response.completed', 'response.incomplete']).toContain(events.at(-1)!.type);
}

/**
 * With a retry possible, a turn is held and judged before it goes out; without one (maxRetries
 * 0) deltas pass live and are only constrained on the way: both paths must give the same answer.
 */
describe.each([
  { mode: 'a retry possible (held turns)', maxRetries: 1 },
  { mode: 'no retries (live deltas)', maxRetries: 0 },
])('$mode', ({ maxRetries }) => {
  let fd: FrontDoors;
  beforeAll(async () => {
    fd = await startFrontDoors({
      config: { defaults: { ...DEFAULT_MODEL_SETTINGS, maxRetries } },
    });
  });
  afterAll(() => fd.close());

  describe.each(cases)('$name', (c) => {
    it('/v1/messages: create equals stream().finalMessage(), blocks and stop_reason mapped', async () => {
      fd.plan(c.plan);
      const { plain, streamed, events } = await bothMessages(fd, {
        model: 'm',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'hi' }],
        tools: [weatherA],
        ...c.anthropic,
      });
      expect(normalizeMessage(streamed)).toEqual(normalizeMessage(plain));
      expect(plain.stop_reason).toBe(c.stop);
      expect(plain.content.map((b) => b.type)).toEqual(c.blocks);
      for (const b of plain.content) {
        // A tool_use input is always a JSON object (Anthropic's type; SDKs index into it).
        if (b.type === 'tool_use') expect(Object.prototype.toString.call(b.input)).toBe('[object Object]');
      }
      expect(plain.usage.output_tokens).toBeGreaterThan(0);
      expect(streamed.usage).toEqual(plain.usage);
      expectValidMessageEvents(events);
    });

    it('/v1/responses: create equals stream().finalResponse(), items and status mapped', async () => {
      fd.plan(c.plan);
      const { plain, streamed, events } = await bothResponses(fd, {
        model: 'm',
        input: 'hi',
        tools: [weatherR],
        ...c.responses,
      });
      expect(normalizeResponse(streamed)).toEqual(normalizeResponse(plain));
      expect(plain.status).toBe(c.status);
      expect(plain.output.map((i) => i.type)).toEqual(c.items);
      expect(plain.usage?.output_tokens).toBeGreaterThan(0);
      expectValidResponseEvents(events);
    });
  });
});
