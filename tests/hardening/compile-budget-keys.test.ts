/**
 * The compile budget (server/compile-budget.ts) is fair between keys: with several keys, one key
 * draws at most half of the process's budget for compiling tool schemas, so a key that sends a
 * distinct, costly schema with every request cannot leave another key's tool calls unchecked.
 * Before, the per-process bucket was one for all keys: key A's requests drained it and key B's
 * first request, with a fresh schema, went unenforced (toolproof_schemas_unenforced_total rose
 * by B's one tool; measured: +1, after: +0).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { patternSchema } from '../policies/pattern-schema.js';
import { answerJson, proxyInFrontOf } from '../support/harness.js';

const A = 'sk-compile-a-0000000001';
const B = 'sk-compile-b-0000000002';

// The buckets refill with performance.now(): held still from before the app starts, what A
// spends stays spent however slowly a loaded box compiles (a fast one compiles faster than the
// refill, and A drains the bucket with requests one after another).
beforeAll(() => {
  vi.useFakeTimers({ toFake: ['performance'] });
});
afterAll(() => {
  vi.useRealTimers();
});

let answer = '';
const pair = proxyInFrontOf(
  answerJson(() => answer),
  {
    file: {
      defaults: { forceToolUse: false },
      keys: [
        { name: 'a', key: A },
        { name: 'b', key: B },
      ],
    },
  },
);

let seed = 0;
/** One request whose one tool has a fresh schema of `props` patterns, called validly. */
async function send(key: string, props: number): Promise<void> {
  const { schema, args } = patternSchema(`k${seed++}`, props);
  answer = JSON.stringify({
    id: 'c1',
    object: 'chat.completion',
    created: 1,
    model: 'm1',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'c0', type: 'function', function: { name: 't', arguments: JSON.stringify(args) } },
          ],
        },
        finish_reason: 'tool_calls',
      },
    ],
  });
  const res = await fetch(`${pair.proxy.origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({
      model: 'm1',
      messages: [{ role: 'user', content: 'go' }],
      tools: [{ type: 'function', function: { name: 't', parameters: schema } }],
    }),
  });
  expect(res.status).toBe(200);
  await res.text();
}

async function unenforced(): Promise<number> {
  const text = await (await fetch(`${pair.proxy.origin}/metrics`)).text();
  return Number(/toolproof_schemas_unenforced_total\{model="m1",cause="budget"\} (\d+)/.exec(text)?.[1] ?? 0);
}

describe('the schema compile budget between keys', () => {
  it("key A's costly schemas leave key B's next schema checked", async () => {
    // A: ~47k units each (a schema of 40 patterns and the patterns' RE2 compiles, in one
    // request's 60k), until the budget cuts A; then one more, whose patterns (600 units each)
    // take what is left: the process's bucket ends near empty when A alone draws on it.
    for (let i = 0; i < 40 && (await unenforced()) === 0; i++) await send(A, 40);
    expect(await unenforced()).toBeGreaterThan(0); // A was cut by the budget
    await send(A, 40);
    const before = await unenforced();
    await send(B, 20); // ~24k units
    expect((await unenforced()) - before).toBe(0);
  }, 60_000);
});
