/**
 * Issue 18 item 3, the rest: an upstream answer with many more `choices` than the request's `n`
 * (40k in one chunk took 3-12 s of event loop, a leak-recovery engine per choice). The request
 * is a contract: choices whose index is not below `n` (default 1, at most 128) are dropped, the
 * same way streamed and not, and counted (`toolproof_tool_call_normalizations_total`,
 * kind `unasked-choice`).
 */
import { describe, expect, it } from 'vitest';
import { proxyInFrontOf, streamOrJson, textCompletion, textCompletionStream } from '../support/harness.js';
import { cpuFactor, healthLatencyDuring, leastOf } from './loop-probe.js';

let choices = 3;

const content = (i: number) => `answer ${i} <tool_call>{"name": "nope", "arguments": {}}</tool_call>`;

const contents = (n: number) => Array.from({ length: n }, (_, i) => content(i));

const pair = proxyInFrontOf(
  streamOrJson(
    () => textCompletionStream(contents(choices)),
    () => textCompletion(contents(choices)),
  ),
);

const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }];

async function ask(streamed: boolean, n: number | undefined): Promise<{ status: number; text: string }> {
  const res = await fetch(`${pair.proxy.origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'm1',
      stream: streamed,
      ...(n !== undefined ? { n } : {}),
      messages: [{ role: 'user', content: 'go' }],
      tools,
    }),
  });
  return { status: res.status, text: await res.text() };
}

/** Each choice's text and finish reason, by index: a whole answer's, or a stream's assembled. */
function byIndex(streamed: boolean, text: string): Record<number, { content: string; finish: unknown }> {
  const out: Record<number, { content: string; finish: unknown }> = {};
  const add = (c: { index: number; finish_reason?: unknown }, piece: unknown) => {
    const e = (out[c.index] ??= { content: '', finish: null });
    if (typeof piece === 'string') e.content += piece;
    if (c.finish_reason) e.finish = c.finish_reason;
  };
  if (!streamed) {
    const body = JSON.parse(text) as { choices: { index: number; message: { content: unknown } }[] };
    for (const c of body.choices) add(c, c.message.content);
    return out;
  }
  for (const line of text.split('\n')) {
    if (!line.startsWith('data: {')) continue;
    const chunk = JSON.parse(line.slice(6)) as {
      choices?: { index: number; delta?: { content?: unknown } }[];
    };
    for (const c of chunk.choices ?? []) add(c, c.delta?.content);
  }
  return out;
}

async function unaskedCount(): Promise<number> {
  const text = await (await fetch(`${pair.proxy.origin}/metrics`)).text();
  const line = text
    .split('\n')
    .find(
      (l) => l.startsWith('toolproof_tool_call_normalizations_total{') && l.includes('kind="unasked-choice"'),
    );
  return line ? Number(line.split(' ').at(-1)) : 0;
}

describe('choices beyond the request n', () => {
  it('are dropped, streamed as not, and counted', async () => {
    choices = 5;
    for (const n of [undefined, 2]) {
      const before = await unaskedCount();
      const whole = await ask(false, n);
      const streamed = await ask(true, n);
      expect(whole.status).toBe(200);
      expect(streamed.status).toBe(200);
      const a = byIndex(false, whole.text);
      const b = byIndex(true, streamed.text);
      expect(Object.keys(a).map(Number)).toEqual(n === undefined ? [0] : [0, 1]);
      expect(b).toEqual(a);
      expect(await unaskedCount()).toBe(before + 2 * (5 - (n ?? 1)));
    }
  });

  it("an n past 128 (OpenAI's limit) is refused as the client's mistake, not cut silently", async () => {
    choices = 1;
    for (const streamed of [false, true]) {
      const r = await ask(streamed, 129);
      expect(r.status).toBe(400);
      expect(JSON.parse(r.text).error.message).toMatch(/\bn\b/);
    }
    expect((await ask(false, 128)).status).toBe(200);
  });

  it('/health stays fast while one upstream chunk carries 40k choices', async () => {
    choices = 40_000;
    const m = await leastOf(
      5,
      async () => {
        const r = await healthLatencyDuring(pair.proxy.origin, ask(true, undefined));
        // At a small box's speed (cpuFactor, at least 1: measured only when needed, cpuBound).
        return { ...r, cpuMs: r.cpuMs / (r.cpuMs < 300 ? 1 : cpuFactor()) };
      },
      (r) => r.cpuMs,
      300,
    );
    // measured: 2.8-12 s before (every choice judged), tens of ms after (JSON.parse of 4 MB);
    // 100 ms of wall was met with 1 ms to spare at load 8 (the parse itself is most of it), 300
    // crossed (313) on a loaded 2-core box: the stall is held to 300 ms of the loop's CPU time
    expect(m.value.status).toBe(200);
    expect(Object.keys(byIndex(true, m.value.text))).toEqual(['0']);
    expect(m.cpuMs).toBeLessThan(300);
  }, 120_000);
});
