/**
 * Values refused of a prompt, not of the model (UpstreamRefusal.values.ofPrompt: output-budget's
 * max_tokens the window could not hold beside the prompt): read back only for a request whose
 * messages begin with the refused request's, with the same tools and max tokens (no shorter, so
 * refused again); any other prompt carrying the value goes as the client wrote it.
 */
import { describe, expect, it } from 'vitest';
import { POLICIES } from '../../policies/registry.js';
import type { ChatCompletionRequest, ChatMessage } from '../../protocol/openai.js';
import { rememberedValues, rememberPromptValues } from '../../server/chat/refusals.js';
import { FallbackMemory } from '../../server/fallback-memory.js';
import type { ResolvedRoute } from '../../server/routing.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';

const route = {
  name: 'default',
  client: { label: 'up' },
  settings: { fallbackTtlSeconds: 600 },
} as unknown as ResolvedRoute;

const session = (turns: number, first = 'Fix the bug.'): ChatMessage[] => [
  { role: 'system', content: 'You are a coding agent.' },
  { role: 'user', content: first },
  ...Array.from({ length: turns }, (_, i): ChatMessage[] => [
    { role: 'assistant', content: `step ${i}` },
    { role: 'user', content: `go on ${i}` },
  ]).flat(),
];
const req = (messages: ChatMessage[], extra: Partial<ChatCompletionRequest> = {}): ChatCompletionRequest => ({
  model: 'sim',
  max_tokens: 4000,
  messages,
  ...extra,
});
const BUDGET = 'output-budget:4000';
const values = (memory: FallbackMemory, r: ChatCompletionRequest, key?: string) => [
  ...rememberedValues(POLICIES, memory, route, r, key),
];

describe('values refused of a prompt', () => {
  it("are read back for the refused prompt and the same session's later turns only", () => {
    const memory = new FallbackMemory();
    const refused = req(session(1));
    rememberPromptValues(memory, route, refused, 'output-budget', [BUDGET], 'k');
    expect(values(memory, refused, 'k')).toEqual([BUDGET]);
    expect(values(memory, req(session(3)), 'k')).toEqual([BUDGET]);
    // shorter, another session, other tools, another budget, another key: judged on their own
    expect(values(memory, req(session(0)), 'k')).toEqual([]);
    expect(values(memory, req(session(3, 'Say hi.')), 'k')).toEqual([]);
    expect(values(memory, req(session(3), { tools: [] }), 'k')).toEqual([]);
    expect(values(memory, req(session(3), { max_tokens: 3000 }), 'k')).toEqual([]);
    expect(values(memory, req(session(3)), 'other')).toEqual([]);
    expect(values(memory, req(session(3)))).toEqual([]);
  });

  it('costs linear CPU in the messages once a mark is held (x1 vs x4)', () => {
    const memory = new FallbackMemory();
    rememberPromptValues(memory, route, req(session(1, 'another session')), 'output-budget', [BUDGET], 'k');
    const s = measureScaling(
      (n) => req(session(n)),
      (r) => rememberedValues(POLICIES, memory, route, r, 'k'),
      { from: 64, max: 1 << 14 },
    );
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});
