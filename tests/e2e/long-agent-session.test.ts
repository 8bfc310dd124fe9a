/**
 * A long agent session in a small window: a read a turn, fifty turns, through the real server
 * and the real SDKs (Messages streamed with Anthropic's, chat completions with OpenAI's) against
 * the simulator refusing over an 8,192-token window as llama-server does. Past
 * ~55 calls the calls themselves, the older results' notes and the last half window kept whole
 * were over the window whatever the results' share: every later turn was the backend's refusal
 * (Messages: "prompt is too long"), the session over. Now the older tool turns past an eighth of
 * the window are left out, calls and all (policies/tool-result-cap/older-turns.ts): every turn is
 * answered, and the prompt changes only as docs/prefix.md's exception 9 allows: at most once per
 * quarter window of growth, and never at a message it had already cut or left out.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../server/stack.js';
import { rawElements } from './raw-json.js';

const WINDOW = 8192;
const TURNS = 50;
/** Toolproof's quarter-window step, in the bytes it counts (3 a token). */
const STEP_BYTES = (WINDOW / 4) * 3;

/** A file of ~1,600 characters (~400 tokens), different per `k`. */
const readFile = (k: number) =>
  Array.from({ length: 40 }, (_, l) => `file${k}.ts:${l}: export const value${l} = ${k * 100 + l};`).join(
    '\n',
  );

let stack: Stack;
let anthropic: Anthropic;
beforeAll(async () => {
  stack = await startStack({
    sim: { personality: 'llama-server', nCtx: WINDOW, enforceWindow: true, strictHistory: true },
    file: { defaults: { vision: false, audio: false, contextWindow: WINDOW } },
  });
  anthropic = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0, timeout: 60_000 });
  // The model reads one more file each turn.
  stack.sim.setScenario((ctx) => ({ call: [{ name: 'Read', arguments: { path: `f${ctx.turn}.ts` } }] }));
});
afterAll(() => stack.close());

/**
 * What each turn sent upstream last (the request the backend answered), checked turn to turn:
 * none refused at the end; a turn that changes the prompt does so only after every message the
 * previous turn had already cut or left out, and no more often than the client's history crossed
 * a quarter-window step (counted on its JSON, longer than toolproof's estimate: an upper bound).
 */
async function longSession(
  turn: (history: unknown[]) => Promise<unknown[]>,
  first: unknown,
): Promise<string[]> {
  const fails: string[] = [];
  const history: unknown[] = [first];
  let prev: string[] | undefined;
  let changes = 0;
  let size = JSON.stringify(history).length;
  let steps = 0;
  for (let k = 0; k < TURNS; k++) {
    const before = stack.sim.requests.length;
    let items: unknown[];
    try {
      items = await turn(history);
    } catch (err) {
      fails.push(`turn ${k}: ${(err as Error).message.slice(0, 300)}`);
      break;
    }
    history.push(...items);
    const sent = stack.sim.requests.slice(before).filter((r) => r.path.endsWith('/chat/completions'));
    const messages = rawElements(sent.at(-1)!.rawBody, 'messages') ?? [];
    if (prev) {
      const at = prev.findIndex((m, i) => messages[i] !== m);
      if (at !== -1) {
        changes++;
        const decided = prev.findLastIndex((m) => m.includes('toolproof left out'));
        if (at <= decided) fails.push(`turn ${k}: message ${at} changed, already decided (up to ${decided})`);
      }
    }
    prev = messages;
    const grown = JSON.stringify(history).length;
    steps += Math.floor(grown / STEP_BYTES) - Math.floor(size / STEP_BYTES);
    size = grown;
  }
  if (!prev?.some((m) => m.includes('and the older tool calls after it'))) fails.push('no turn was left out');
  // The first turn known over changes it too; then once a step at most.
  if (changes > steps + 1) fails.push(`${changes} changes for ${steps} steps`);
  return fails;
}

/** The agent's one tool, as the Messages API declares it. */
const messagesTools = [
  {
    name: 'Read',
    description: 'Read a file',
    input_schema: { type: 'object', properties: { path: { type: 'string' } } },
  },
];

describe('a long agent session in an 8k window: every turn answered, the prefix kept', () => {
  it('Messages, streamed (Anthropic SDK)', async () => {
    const fails = await longSession(
      async (history) => {
        const m = await anthropic.messages
          .stream({ model: 'sim', max_tokens: 200, tools: messagesTools, messages: history } as never)
          .finalMessage();
        const use = m.content.find((b) => b.type === 'tool_use');
        if (!use) throw new Error(`no call: ${JSON.stringify(m.content)}`);
        return [
          { role: 'assistant', content: m.content },
          {
            role: 'user',
            content: [{ type: 'tool_result', tool_use_id: use.id, content: readFile(history.length) }],
          },
        ];
      },
      { role: 'user', content: 'Read the files.' },
    );
    expect(fails).toEqual([]);
  }, 300_000);

  it("Messages, a system reminder beside every result (Claude Code's habit), not streamed", async () => {
    // Kept apart from their turns, the lines grew the prompt ~100 tokens a turn for good: "prompt
    // is too long: 8632 tokens > 8192 maximum" at turn 28 and every turn after. Now 150 turns
    // answer, 37 messages sent at the end, the prompt changing 50 times in 60 quarter-window steps.
    const reminder = (k: number) =>
      `<system-reminder>\nTurn ${k}. ${'The files read earlier may have changed on disk since; read them again before editing them, and keep the task list current. '.repeat(3)}\n</system-reminder>`;
    const fails = await longSession(
      async (history) => {
        const m = await anthropic.messages.create({
          model: 'sim',
          max_tokens: 200,
          tools: messagesTools,
          messages: history,
        } as never);
        const use = (m as Anthropic.Message).content.find((b) => b.type === 'tool_use');
        if (!use) throw new Error(`no call: ${JSON.stringify((m as Anthropic.Message).content)}`);
        return [
          { role: 'assistant', content: (m as Anthropic.Message).content },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: use.id, content: readFile(history.length) },
              { type: 'text', text: reminder(history.length) },
            ],
          },
        ];
      },
      { role: 'user', content: 'Read the files.' },
    );
    expect(fails).toEqual([]);
  }, 300_000);

  it('chat completions, not streamed (OpenAI SDK)', async () => {
    const tools = [
      {
        type: 'function',
        function: { name: 'Read', parameters: { type: 'object', properties: { path: { type: 'string' } } } },
      },
    ];
    const fails = await longSession(
      async (history) => {
        const c = await stack.client.chat.completions.create({
          model: 'sim',
          tools,
          messages: history,
        } as never);
        const msg = c.choices[0]!.message;
        const call = msg.tool_calls?.[0];
        if (!call) throw new Error(`no call: ${JSON.stringify(msg)}`);
        return [msg, { role: 'tool', tool_call_id: call.id, content: readFile(history.length) }];
      },
      { role: 'user', content: 'Read the files.' },
    );
    expect(fails).toEqual([]);
  }, 300_000);
});
