/**
 * Costs of the Messages and Responses translations that were the product of two sizes one
 * request controls, through the server with /health probed meanwhile (loop-probe.ts):
 * - an assistant turn of many hosted-tool blocks (a resumed Claude Code session): each note was
 *   placed after reading the end of the text so far, which flattened the whole growing string
 *   (blocks x text: 10k blocks, a 780 KB body, held the loop 25 s);
 * - Responses namespaces that flatten to one chat name (namespace `a__b` with `c`, namespace `a`
 *   with `b__c`, ...): each looked for its `_n` suffix from _2, past every one taken before it
 *   (declarations x suffixes x name length: an 18 MB body held the loop 27 s).
 * Each body is linear to read; what it costs must be too.
 */
import { describe, expect, it } from 'vitest';
import { cpuBound, healthLatencyDuring } from './loop-probe.js';
import { proxyInFrontOf, sendCompletion } from '../support/harness.js';

const pair = proxyInFrontOf((_req, res) =>
  sendCompletion(res, { role: 'assistant', content: 'done' }, 'stop'),
);

const post = (path: string, body: unknown) =>
  fetch(`${pair.proxy.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  }).then(async (r) => ({ status: r.status, text: await r.text() }));

/** A /health stall this long means the translation was not linear (each stalled 10 s or more). */
/** The stall bound for a loop thread's CPU time `ms`: 1 s (times `times`) at a small box's speed. */
const STALL_MS = (ms: number, times = 1) => cpuBound(ms, (f) => times * 1000 * f);

describe('Messages: one assistant turn of 5,000 hosted-tool blocks', () => {
  it('becomes one note per block, each on its own line, without a stall', async () => {
    const content = [
      { type: 'text', text: 'searching' },
      ...Array.from({ length: 5_000 }, (_, i) => ({
        type: 'server_tool_use',
        id: `srvtoolu_${i}`,
        name: 'web_search',
        input: { query: `q${i}` },
      })),
    ];
    const before = pair.upstream.requests.length;
    const m = await healthLatencyDuring(
      pair.proxy.origin,
      post('/v1/messages', {
        model: 'm1',
        max_tokens: 16,
        messages: [
          { role: 'user', content: 'look it up' },
          { role: 'assistant', content },
          { role: 'user', content: 'go on' },
        ],
      }),
    );
    expect(m.value.status).toBe(200);
    const sent = JSON.parse(pair.upstream.requests[before]!.body.toString()) as {
      messages: Array<{ role: string; content: string }>;
    };
    const turn = sent.messages.find((x) => x.role === 'assistant')!.content;
    const lines = turn.split('\n');
    expect(lines[0]).toBe('searching');
    expect(lines[1]).toContain('[web_search ran on the API this conversation began on, with {"query":"q0"}]');
    expect(lines[5_000]).toContain('"q4999"');
    expect(lines).toHaveLength(5_002); // the last note ends its line
    expect(m.cpuMs).toBeLessThan(STALL_MS(m.cpuMs));
  }, 60_000);
});

describe('Responses: 1,365 namespaces whose qualified names are all one name', () => {
  it('each declaration gets its own chat name, without a stall', async () => {
    // "a__a__...__a" (1,365 segments: 4,093 characters, under MAX_TOOL_NAME_CHARS; a longer name is
    // the client's 400 since redteam17) split at each "__": namespace = the segments before,
    // tool = the segments after, each tool name also declared at the top level (so it qualifies)
    const segments = Array.from({ length: 1_365 }, () => 'a');
    const tools: unknown[] = [];
    for (let p = 1; p < segments.length; p++) {
      const name = segments.slice(p).join('__');
      tools.push({ type: 'function', name, parameters: { type: 'object' } });
      tools.push({
        type: 'namespace',
        name: segments.slice(0, p).join('__'),
        description: `split ${p}`,
        tools: [{ type: 'function', name, parameters: { type: 'object' } }],
      });
    }
    const before = pair.upstream.requests.length;
    const m = await healthLatencyDuring(
      pair.proxy.origin,
      post('/v1/responses', { model: 'm1', input: 'hi', tools }),
    );
    expect(m.value.status).toBe(200);
    const sent = JSON.parse(pair.upstream.requests[before]!.body.toString()) as {
      tools: Array<{ function: { name: string } }>;
    };
    const names = sent.tools.map((t) => t.function.name);
    expect(new Set(names).size).toBe(names.length);
    const full = segments.join('__');
    expect(names).toContain(full);
    expect(names).toContain(`${full}_${segments.length - 1}`);
    expect(m.cpuMs).toBeLessThan(STALL_MS(m.cpuMs));
  }, 120_000);
});
