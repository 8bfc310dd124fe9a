/**
 * Names a client sends, not yet length-checked, put in a Set: V8 hashes a string past 16,383
 * characters by its length alone, so n distinct long names of one length compare each new one
 * with all before it (tests/redteam/long-values-set.test.ts's hazard, protocol/string-set.ts's
 * fix). Found in the newest readers: the Responses door's `additional_tools` items (the tools a
 * conversation adds, deduplicated by name before any name is checked: the 400 for a long name
 * came after the quadratic Set), and the Messages door's `tool_reference` blocks (the deferred
 * tools a conversation loaded, read when a tool has `defer_loading`). x1 vs x4
 * (tests/support/cost-scaling.ts).
 */
import { describe, expect, it } from 'vitest';
import { translateRequest as translateMessages } from '../../protocol/anthropic/request.js';
import type { MessagesRequest } from '../../protocol/anthropic/types.js';
import { translateRequest as translateResponses } from '../../protocol/responses/request.js';
import type { ResponsesRequest } from '../../protocol/responses/types.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';

/** `n` names of 17,000 characters, alike but for their last characters. */
const names = (n: number) =>
  Array.from({ length: n }, (_, i) => `t${'a'.repeat(17_000)}${String(i).padStart(6, '0')}`);

/** Runs `f`, a 400 or not: the cost is what is measured. */
function settle(f: () => unknown): unknown {
  try {
    return f();
  } catch (err) {
    return err;
  }
}

describe('long names a client sends, in a set (x1 vs x4)', () => {
  it('Responses additional_tools items', () => {
    const make = (n: number): ResponsesRequest =>
      ({
        model: 'm',
        input: [
          { type: 'additional_tools', tools: names(n).map((name) => ({ type: 'function', name })) },
          { type: 'message', role: 'user', content: 'hi' },
        ],
      }) as unknown as ResponsesRequest;
    const refused = settle(() => translateResponses(make(2))) as Error;
    expect(refused.message).toMatch(/at most \d+ characters/);
    const s = measureScaling(make, (req) => settle(() => translateResponses(req)), { from: 16, max: 4096 });
    expect(withinBudget(s, 5).time, JSON.stringify(s)).toBe(true);
  });

  it("Messages tool_reference blocks, read for a tool's defer_loading", () => {
    const make = (n: number): MessagesRequest =>
      ({
        model: 'm',
        max_tokens: 10,
        tools: [{ name: 'search', defer_loading: true, input_schema: { type: 'object' } }],
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'tu', name: 'tool_search', input: {} }] },
          {
            role: 'user',
            content: [
              {
                type: 'tool_result',
                tool_use_id: 'tu',
                content: names(n).map((tool_name) => ({ type: 'tool_reference', tool_name })),
              },
            ],
          },
        ],
      }) as unknown as MessagesRequest;
    const s = measureScaling(make, (req) => settle(() => translateMessages(req)), { from: 16, max: 4096 });
    expect(withinBudget(s, 5).time, JSON.stringify(s)).toBe(true);
  });
});
