/**
 * The ids of a streamed choice's calls were checked for a repeat by a scan over the calls sent
 * so far (policies/normalize-tool-calls/stream.ts TakenIds): an upstream streaming n calls in one
 * choice cost n²/2 compares. Through the server, 5,000 vs 20,000 calls of short ids cost 154 vs
 * 1,776 ms of CPU on the chat door (Messages 130 vs 1,880, Responses 285 vs 2,353); 80,000 calls
 * (~12 MB) some 25 s. Past 16 calls the ids are now kept in a StringSet: 147 vs 537 ms (81 vs
 * 652, 241 vs 1,080); the hook alone at 4,000 vs 16,000 calls: 40 vs 641 ms before, 5 vs 27 after.
 * A repeated id still gets a fresh one.
 */
import { describe, expect, it } from 'vitest';
import { normalizeToolCalls } from '../../policies/normalize-tool-calls/index.js';
import { createNormalizeStreamHook } from '../../policies/normalize-tool-calls/stream.js';
import type { ChatCompletion, ChatCompletionChunk } from '../../protocol/openai.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';
import { proxyInFrontOf } from '../support/harness.js';

const chunk = (delta: object, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm1', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

// The upstream streams as many calls as the user message asks for, one a chunk; `dup` repeats
// the first call's id on the last call.
const pair = proxyInFrontOf((req, res) => {
  const body = JSON.parse(req.body.toString()) as { messages: { content: string }[] };
  const [count, dup] = body.messages.at(-1)!.content.split(' ');
  const n = Number(count);
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const parts: string[] = [];
  for (let i = 0; i < n; i++) {
    const id = dup === 'dup' && i === n - 1 ? 'id0' : `id${i}`;
    parts.push(
      chunk({ tool_calls: [{ index: i, id, type: 'function', function: { name: 'f', arguments: '{}' } }] }),
    );
  }
  res.end(`${parts.join('')}${chunk({}, 'tool_calls')}data: [DONE]\n\n`);
});

const request = (said: string) =>
  JSON.stringify({
    model: 'm1',
    stream: true,
    messages: [{ role: 'user', content: said }],
    tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
  });

const post = async (text: string) => {
  const res = await fetch(`${pair.proxy.origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: text,
  });
  return { status: res.status, text: await res.text() };
};

describe('many calls streamed in one choice', () => {
  it('a repeated id past the first 16 calls still gets a fresh one', async () => {
    const r = await post(request('40 dup'));
    const ids = [...r.text.matchAll(/"id":"([^"]+)","type":"function"/g)].map((m) => m[1]);
    expect(ids).toHaveLength(40);
    expect(new Set(ids).size).toBe(40);
    expect(ids[0]).toBe('id0');
    expect(ids[39]).toMatch(/^call_/);
  });

  it('x4 the calls cost about x4 in the stream hook, not x16', () => {
    // The hook alone (the server's own per-call work would hide the product below ~20,000 calls).
    const chunks = (n: number): ChatCompletionChunk[] =>
      Array.from({ length: n }, (_, i) => ({
        id: 'c',
        object: 'chat.completion.chunk',
        created: 1,
        model: 'm1',
        choices: [
          {
            index: 0,
            delta: {
              tool_calls: [
                { index: i, id: `id${i}`, type: 'function', function: { name: 'f', arguments: '{}' } },
              ],
            },
            finish_reason: null,
          },
        ],
      }));
    const s = measureScaling(
      chunks,
      (list) => {
        const hook = createNormalizeStreamHook('normalize-tool-calls');
        let out = 0;
        for (const c of list) out += hook.onChunk!(c).length;
        return out;
      },
      { from: 2_000, max: 8_000, targetMs: 30 },
    );
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });

  it('a whole answer of n calls whose 20 KB ids are alike but for their ends: about x4, not x16', () => {
    // V8 hashes a string past 16,383 characters by its length alone: a Set of such ids compared
    // each with all the others.
    const answer = (n: number): ChatCompletion => ({
      id: 'c',
      object: 'chat.completion',
      created: 1,
      model: 'm1',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: null,
            tool_calls: Array.from({ length: n }, (_, i) => ({
              id: `${'a'.repeat(20_000)}${String(i).padStart(6, '0')}`,
              type: 'function' as const,
              function: { name: 'f', arguments: '{}' },
            })),
          },
          finish_reason: 'tool_calls',
        },
      ],
    });
    const s = measureScaling(answer, (a) => normalizeToolCalls(a).response, { from: 64, max: 512 });
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});
