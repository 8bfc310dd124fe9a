/**
 * Hardening (issue 8): per-request work over the declared tools must be linear, and the tool
 * count is capped. 100k tools used to block the event loop for 11.5 s: buildCatalogue looked
 * each declared name up in the offered list (quadratic), and every undeclared call listed every
 * tool in its feedback.
 */
import { describe, expect, it } from 'vitest';
import { processCpuMs } from '../hardening/loop-probe.js';
import { buildCatalogue, checkCalls, MAX_LISTED_TOOLS } from '../../policies/corrective-retry/call-checks.js';
import type { ChatCompletionRequest, ToolCall } from '../../protocol/openai.js';

const toolList = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    type: 'function' as const,
    function: { name: `tool_${i}`, parameters: { type: 'object', properties: { q: { type: 'string' } } } },
  }));

const call = (name: string, args = '{}'): ToolCall => ({
  id: `call_${name}`,
  type: 'function',
  function: { name, arguments: args },
});

describe('catalogue and call checks are linear in the tool count', () => {
  it('100k tools: catalogue and 1000 bad calls in seconds at most (quadratic before: 12 s+ unloaded)', () => {
    // Linear costs ~30 ms here unloaded; the bound is loose for a shared, loaded 2-core box.
    const tools = toolList(100_000);
    const original = { model: 'm', messages: [], tools } as unknown as ChatCompletionRequest;
    const sent = {
      ...original,
      tools: [...tools, { type: 'function', function: { name: 'final_answer' } }],
    } as unknown as ChatCompletionRequest;
    const start = processCpuMs();
    const cat = buildCatalogue(sent, original);
    const checks = checkCalls(
      Array.from({ length: 1000 }, (_, i) => call(`missing_${i}`)),
      cat,
      true,
    );
    const ms = processCpuMs() - start;
    expect(cat.finalAnswerName).toBe('final_answer');
    expect(cat.offered).toHaveLength(100_001);
    expect(checks.every((c) => c.problem === 'undeclared-tool')).toBe(true);
    expect(ms).toBeLessThan(8000);
  });

  it('feedback lists at most MAX_LISTED_TOOLS names and counts the rest', () => {
    const tools = toolList(500);
    const req = { model: 'm', messages: [], tools } as unknown as ChatCompletionRequest;
    const [check] = checkCalls([call('nope')], buildCatalogue(req, req), true);
    expect(check?.feedback).toContain(`tool_${MAX_LISTED_TOOLS - 1} and`);
    expect(check?.feedback).not.toContain(`tool_${MAX_LISTED_TOOLS},`);
    expect(check?.feedback).toContain(`and ${500 - MAX_LISTED_TOOLS} more`);
  });

  it('an unenforced schema part is reported on the check', () => {
    const tools = [{ type: 'function', function: { name: 't', parameters: { $ref: '#' } } }];
    const req = { model: 'm', messages: [], tools } as unknown as ChatCompletionRequest;
    const [check] = checkCalls([call('t', '{"a":1}')], buildCatalogue(req, req), true);
    expect(check?.problem).toBeUndefined();
    expect(check?.unenforced?.[0]).toContain('could not be applied');
  });
});

describe('arguments that are no JSON object', () => {
  const tools = toolList(1);
  const original = { model: 'm', messages: [], tools } as unknown as ChatCompletionRequest;
  const sent = {
    ...original,
    tools: [...tools, { type: 'function', function: { name: 'final_answer' } }],
  } as unknown as ChatCompletionRequest;
  const cat = buildCatalogue(sent, original);

  it.each([
    ['not JSON', '{"q": ', 'are not valid JSON: {"q": '],
    ['JSON but an array', '[1,2]', 'must be a JSON object, got [1,2]'],
  ])('%s: invalid-json, with what they are and what to do next', (_kind, args, what) => {
    const [check] = checkCalls([call('tool_0', args)], cat, true);
    expect(check?.problem).toBe('invalid-json');
    expect(check?.feedback).toBe(
      `Error: the arguments of this tool_0 call ${what}. ` +
        'Call tool_0 again with the arguments as one JSON object, or call final_answer to reply to the user.',
    );
  });
});
