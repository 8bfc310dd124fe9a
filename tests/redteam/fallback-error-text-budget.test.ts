/**
 * A request toolproof forced to tool_choice "required" (forceToolUse, the default) that the
 * upstream refuses is read for the "this backend cannot do required" messages
 * (policies/tool-choice-fallback.ts): every string of the error body, up to 16 KB of them. The
 * reader measured what it had gathered by joining all of it again at every value it visited: an
 * error body of many short strings (1 MB, under the error read's cap: 262,000 of them) cost the
 * square of the strings up to 16 KB, and a 16 KB join for every value after: seconds of the event
 * loop from one hostile upstream's 400, for every client at once.
 */
import { describe, expect, it } from 'vitest';
import { isRequiredRejection } from '../../policies/tool-choice-fallback.js';
import { cpuBound, healthLatencyDuring } from '../hardening/loop-probe.js';
import { cpuMsOf, measureScaling, withinBudget } from '../support/cost-scaling.js';
import { proxyInFrontOfChat } from '../support/fake-upstream.js';
import { weatherTool } from '../server/stack.js';

/** An error body of `n` one-character strings in an array (4 bytes each). */
const manyStrings = (n: number) => ({ error: { message: 'bad request', errors: Array(n).fill('a') } });

describe('the required-rejection reader over an error body of many strings', () => {
  it('still finds the message after many strings (and not past 16 KB of them)', () => {
    const known = '`tool_choice` must either be a named tool, "auto", or "none".';
    expect(isRequiredRejection(400, { errors: [...Array(1000).fill('x'), known] }).rejected).toBe(true);
    expect(isRequiredRejection(400, { errors: [...Array(20_000).fill('x'), known] }).rejected).toBe(false);
  });

  it('costs about x4 for x4 strings under 16 KB (was the square: x16)', () => {
    // Size n: n one-character strings; x4 stays under the 16 KB the reader gathers.
    const s = measureScaling(manyStrings, (body) => isRequiredRejection(400, body), {
      from: 500,
      max: 4_000,
    });
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });

  it('262,000 strings (a 1 MB body) read in milliseconds', () => {
    const body = manyStrings(262_000);
    const t = cpuMsOf(() => isRequiredRejection(400, body));
    expect(t, `${t.toFixed(0)} ms CPU`).toBeLessThan(cpuBound(t, (f) => 100 * f));
  });
});

describe('through the server: a forced request refused with such a body', () => {
  const body = JSON.stringify(manyStrings(262_000));
  const pair = proxyInFrontOfChat((_req, res) => {
    res.writeHead(400, { 'content-type': 'application/json' });
    res.end(body);
  });

  it('is relayed as the upstream’s 400 without holding the loop', async () => {
    const request = fetch(`${pair.proxy.origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'm1',
        messages: [{ role: 'user', content: 'hi' }],
        tools: [weatherTool],
      }),
    }).then(async (res) => ({ status: res.status, text: await res.text() }));
    const m = await healthLatencyDuring(pair.proxy.origin, request);
    expect(m.value.status).toBe(400);
    // The fallback's reader ran: the upstream saw toolproof's own "required".
    const sent = pair.upstream.requests[0] as { tool_choice?: unknown };
    expect(sent.tool_choice).toBe('required');
    expect(m.cpuMs, `loop thread ${m.cpuMs.toFixed(0)} ms CPU between two turns`).toBeLessThan(
      cpuBound(m.cpuMs, (f) => 400 * f),
    );
  }, 60_000);
});
