/**
 * A corrective retry replays the answer's calls under the name the upstream knows each tool by
 * (policies/corrective-retry/retry-request.ts): a name no backend takes (a dot, past 64
 * characters: Claude Code's MCP tools) has an alias, and the retry looked for that alias among
 * the tools sent, one scan of the tools per call. The client declares the tools (up to 4,096),
 * the model (or a hostile upstream) writes the calls: n tools and 4n calls cost n x 4n, 1,024
 * tools and 5,000 invalid calls 24-63 ms, 4,096 and 20,000 305-364 ms on the loop, against
 * 15-22 ms for the same calls to tools whose names need no alias. Now the sent names are a Set,
 * built once per retry.
 */
import { describe, expect, it } from 'vitest';
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import type { CallCheck } from '../../policies/corrective-retry/call-checks.js';
import { buildRetryRequest } from '../../policies/corrective-retry/retry-request.js';
import { toolNameAlias } from '../../policies/kit/tool-name-alias.js';
import { compareCosts, cpuMsOf, measureScaling, withinBudget } from '../support/cost-scaling.js';

/** A name with dots has an alias (toolNameAlias); with underscores it is its own. */
let sep = '.';
const nameOf = (i: number) => `mcp${sep}server${sep}tool_${i}`;

function input(n: number, aliased = false): { sent: ChatCompletionRequest; checks: CallCheck[] } {
  const sent = {
    model: 'm',
    messages: [{ role: 'user', content: 'hi' }],
    tools: Array.from({ length: n }, (_, i) => ({
      type: 'function',
      function: { name: aliased ? toolNameAlias(nameOf(i)) : nameOf(i), parameters: { type: 'object' } },
    })),
  } as ChatCompletionRequest;
  const checks = Array.from({ length: 4 * n }, (_, i) => ({
    call: { id: `c${i}`, type: 'function', function: { name: nameOf(i % n), arguments: '{}' } },
    name: nameOf(i % n),
    feedback: 'missing a',
    issues: [],
  })) as unknown as CallCheck[];
  return { sent, checks };
}

describe('a corrective retry of 4n calls to n tools whose names have aliases', () => {
  it('replays each call under the name sent: the alias when the tools went aliased', () => {
    const plain = input(3);
    expect(buildRetryRequest(plain.sent, null, plain.checks, undefined).messages.at(-13)).toMatchObject({
      tool_calls: plain.checks.map((c) => ({ function: { name: c.name } })),
    });
    const aliased = input(3, true);
    const names = (
      buildRetryRequest(aliased.sent, null, aliased.checks, undefined).messages.at(-13) as {
        tool_calls: Array<{ function: { name: string } }>;
      }
    ).tool_calls.map((c) => c.function.name);
    expect(names).toEqual(aliased.checks.map((c) => toolNameAlias(c.name)));
  });

  it('4,096 tools and 20,000 calls cost about what they cost under names that need no alias', () => {
    const cpuOf = (which: string) => {
      sep = which;
      const { sent, checks } = input(4096);
      return cpuMsOf(() => buildRetryRequest(sent, null, checks, undefined));
    };
    // Measured: x15-20 before (305-364 vs 15-22 ms).
    const c = compareCosts(
      () => cpuOf('.'),
      () => cpuOf('_'),
      (aliased, own) => aliased < 4 * own + 20,
    );
    sep = '.';
    expect(c.ok, JSON.stringify(c)).toBe(true);
  }, 60_000);

  it('x4 the tools and the calls cost about x4, not x16', () => {
    const s = measureScaling(
      (n) => input(n),
      ({ sent, checks }) => buildRetryRequest(sent, null, checks, undefined),
      { from: 256, max: 8192 },
    );
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  }, 60_000);
});
