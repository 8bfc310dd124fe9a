/**
 * An agent that makes many small parallel calls a turn (20 reads of ~110 characters) in a small
 * window: the estimate counted 12 bytes a message and nothing a call, short of what the backend
 * counted, so when the backend refused the prompt for its length the boundary
 * (policies/kit/overflow.ts) was placed at the start, nothing was cut, and the turn and every
 * later one were refused (20 reads a turn: from turn 5 of 30). Now each call costs its id and the
 * template's wrapping, and the backend's reported count over the estimate of the refused prompt
 * places the boundary (calibrationScale), remembered so later turns cut the same. Through the
 * real server and the openai SDK against the simulator refusing over its window as llama-server
 * does (its count: the request's JSON at 4 characters a token, ids included). The prompt's earlier
 * bytes change only at the boundary's steps: each answered request's messages are compared with
 * the previous answered one's.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startStack, type Stack } from '../server/stack.js';
import { rawElements } from './raw-json.js';

const WINDOW = 8192;
const WIDE = 20;
const TURNS = 30;
let stack: Stack;

beforeAll(async () => {
  stack = await startStack({
    sim: { personality: 'llama-server', nCtx: WINDOW, enforceWindow: true, strictHistory: true },
    file: { defaults: { vision: false, audio: false, contextWindow: WINDOW } },
  });
  stack.sim.setScenario((ctx) => ({
    call: Array.from({ length: WIDE }, (_, i) => ({
      name: 'Read',
      arguments: { path: `f${ctx.turn}_${i}.ts` },
    })),
  }));
});
afterAll(() => stack.close());

/** The first message index at which `next`'s raw messages differ from `prev`'s (prev's length: none). */
function firstChanged(prev: string, next: string): number {
  const before = rawElements(prev, 'messages') ?? [];
  const after = rawElements(next, 'messages') ?? [];
  let k = 0;
  while (k < before.length && after[k] === before[k]) k++;
  return k;
}

it(`${WIDE} parallel reads a turn in an ${WINDOW}-token window: ${TURNS} turns all answered`, async () => {
  const tools = [
    {
      type: 'function',
      function: { name: 'Read', parameters: { type: 'object', properties: { path: { type: 'string' } } } },
    },
  ];
  const history: unknown[] = [{ role: 'user', content: 'Read the files.' }];
  const answered: string[] = [];
  const sent: number[] = [];
  for (let k = 0; k < TURNS; k++) {
    const before = stack.sim.requests.length;
    const c = await stack.client.chat.completions.create({ model: 'sim', tools, messages: history } as never);
    const msg = c.choices[0]!.message;
    const calls = msg.tool_calls ?? [];
    expect(calls.length).toBe(WIDE);
    answered.push(stack.sim.requests.at(-1)!.rawBody);
    sent.push(stack.sim.requests.length - before);
    history.push(
      msg,
      ...calls.map((call, i) => ({
        role: 'tool',
        tool_call_id: call.id,
        content: `contents of file ${k}.${i}: ${'line of code\n'.repeat(8)}`,
      })),
    );
  }
  // The history is ~4x the window: cut it was.
  expect(JSON.stringify(history).length / 4).toBeGreaterThan(4 * WINDOW);
  // Each turn's answered prompt keeps the previous one's messages up to where it changes, and that
  // place never moves back past an earlier change (the boundary only moves on).
  const changes: number[] = [];
  for (let k = 1; k < answered.length; k++) {
    const at = firstChanged(answered[k - 1]!, answered[k]!);
    if (at < (rawElements(answered[k - 1]!, 'messages') ?? []).length) changes.push(at);
  }
  for (let k = 1; k < changes.length; k++) expect(changes[k]).toBeGreaterThanOrEqual(changes[k - 1]!);
  // Once the scale is learnt and the prompt far past the window, it is cut before it goes: the
  // last turns are answered at their first request, not refused first.
  expect(sent.slice(-10)).toEqual(Array(10).fill(1));
}, 120_000);
