/**
 * An output budget the window cannot hold beside the prompt. vLLM refuses a request whose
 * `max_tokens` and prompt together pass the model's window, even when the prompt alone fits: "This
 * model's maximum context length is N tokens. However, you requested C output tokens and your
 * prompt contains at least P input tokens, ..." (vllm/renderers/params.py). An agent sends the same
 * budget every turn (opencode and Claude Code 32,000 output tokens on a 32k model) and its prompt
 * only grows: every turn was refused. toolproof read the refusal as a prompt over the window and,
 * with nothing to cut, relayed it. Now the request goes again without the budget (the backend gives
 * the answer the rest of the window), the budget is remembered with the refused prompt per
 * upstream, model and key, and the session's later turns go without it from the start, their
 * messages the client's, byte for byte; another prompt with that budget (a short one that fits
 * beside it) goes with the client's max_tokens, the bound it asked. Through the
 * real server and the openai and anthropic SDKs on all three doors against the simulator as that
 * vLLM (a 4,096-token window, a budget of 4,000), each door on a model of its own.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../server/stack.js';
import { prefixBreak } from './raw-json.js';
import { threeTurns } from '../support/three-turns.js';

type Obj = Record<string, unknown>;
const ANSWER = 'Done.';
/** An agent's system prompt: ~600 tokens as the simulator counts, far inside the window alone. */
const SYSTEM = `You are a coding agent. ${'Follow the repository conventions and keep changes small. '.repeat(40)}`;
const BUDGET = 4000;

let stack: Stack;
let anthropic: Anthropic;
beforeAll(async () => {
  stack = await startStack({
    sim: {
      personality: 'vllm',
      maxModelLen: 4096,
      enforceWindow: true,
      enforceOutputBudget: true,
      scenario: [{ say: ANSWER }],
    },
  });
  anthropic = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0, timeout: 30_000 });
});
afterAll(() => stack.close());

const upstream = () => stack.sim.requests.filter((r) => r.path.endsWith('/chat/completions'));

const session = (turn: (history: string[]) => Promise<string>) => threeTurns(upstream, ANSWER, turn);

function expectWithoutBudget(run: { attempts: number[]; bodies: string[] }) {
  expect(run.attempts).toEqual([2, 1, 1]); // refused once, on the first turn
  for (const body of run.bodies) {
    const sent = JSON.parse(body) as Obj;
    expect(sent.max_tokens).toBeUndefined();
    expect(sent.max_completion_tokens).toBeUndefined();
    expect(body).toContain(SYSTEM); // nothing of the prompt cut
  }
  for (const k of [1, 2]) expect(prefixBreak(run.bodies[0]!, run.bodies[k]!)).toBeNull();
}

const turns = (history: string[]) =>
  history.map((text, i) =>
    i % 2 === 0 ? { role: 'assistant' as const, content: text } : { role: 'user' as const, content: text },
  );

describe('an output budget the window cannot hold beside the prompt', () => {
  it('chat: max_tokens 4,000 in a 4,096 window; three turns answered', async () => {
    const run = await session(async (history) => {
      const c = await stack.client.chat.completions.create({
        model: 'sim',
        max_tokens: BUDGET,
        messages: [
          { role: 'system', content: SYSTEM },
          { role: 'user', content: 'Fix the bug.' },
          ...turns(history),
        ],
      });
      return c.choices[0]?.message.content ?? '';
    });
    expectWithoutBudget(run);
  });

  it('Responses, streamed: max_output_tokens', async () => {
    const run = await session(async (history) => {
      const res = await stack.client.responses
        .stream({
          model: 'm',
          instructions: SYSTEM,
          max_output_tokens: BUDGET,
          input: [{ role: 'user', content: 'Fix the bug.' }, ...turns(history)],
        } as never)
        .finalResponse();
      expect(res.status).toBe('completed');
      return res.output_text;
    });
    expectWithoutBudget(run);
  });

  it('Messages, streamed: max_tokens, as Claude Code sends its budget', async () => {
    const run = await session(async (history) => {
      const m = await anthropic.messages
        .stream({
          model: 'm1',
          max_tokens: BUDGET,
          system: SYSTEM,
          messages: [{ role: 'user', content: 'Fix the bug.' }, ...turns(history)],
        })
        .finalMessage();
      return m.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
    });
    expectWithoutBudget(run);
    const metrics = await (await fetch(`${stack.origin}/metrics`)).text();
    expect(metrics).toMatch(/toolproof_upstream_refusals_total\{[^}]*decision="output-budget-refused"\} 1$/m);
    expect(metrics).not.toMatch(/decision="(context-window-learnt|prompt-over-window)"/);
  });

  it('a prompt over the window by itself too: the budget goes, then the older results are cut', async () => {
    const read = (k: number) => [
      {
        role: 'assistant' as const,
        content: null,
        tool_calls: [
          {
            id: `call_${k}`,
            type: 'function' as const,
            function: { name: 'read', arguments: `{"path":"f${k}"}` },
          },
        ],
      },
      {
        role: 'tool' as const,
        tool_call_id: `call_${k}`,
        content: `file ${k}\n${'x'.repeat(70)}\n`.repeat(60),
      },
    ];
    const run = await session(async (history) => {
      const c = await stack.client.chat.completions.create({
        model: 'm2',
        max_tokens: BUDGET,
        tools: [{ type: 'function', function: { name: 'read', parameters: { type: 'object' } } }],
        messages: [
          { role: 'system', content: SYSTEM },
          { role: 'user', content: 'Read the files.' },
          ...[1, 2, 3, 4].flatMap(read),
          ...turns(history),
        ],
      });
      return c.choices[0]?.message.content ?? '';
    });
    // turn 1: the budget refused, then the prompt (the window learnt), then answered cut; later
    // turns go without the budget and cut from the start
    expect(run.attempts).toEqual([3, 1, 1]);
    for (const body of run.bodies) {
      expect((JSON.parse(body) as Obj).max_tokens).toBeUndefined();
      expect(body).toContain('toolproof left out');
    }
    for (const k of [1, 2]) expect(prefixBreak(run.bodies[0]!, run.bodies[k]!)).toBeNull();
  });

  // The client's max_tokens is a bound: a drop remembered for the budget alone sent a short prompt
  // (another session on the same key) without it, and the backend could answer up to the window
  // less that prompt, past the bound. Only the refused session's later turns, whose prompt begins
  // with the refused one, go without it from the start.
  type Ask = (system: string | undefined, history: string[]) => Promise<string>;
  const chatAsk =
    (model: string, stream: boolean): Ask =>
    async (system, history) => {
      const messages = [
        ...(system === undefined ? [] : [{ role: 'system' as const, content: system }]),
        { role: 'user' as const, content: 'Fix the bug.' },
        ...turns(history),
      ];
      if (!stream) {
        const c = await stack.client.chat.completions.create({ model, max_tokens: BUDGET, messages });
        return c.choices[0]?.message.content ?? '';
      }
      let text = '';
      const s = await stack.client.chat.completions.create({
        model,
        max_tokens: BUDGET,
        messages,
        stream: true,
      });
      for await (const chunk of s) text += chunk.choices[0]?.delta.content ?? '';
      return text;
    };
  const messagesAsk =
    (model: string, stream: boolean): Ask =>
    async (system, history) => {
      const body = {
        model,
        max_tokens: BUDGET,
        ...(system === undefined ? {} : { system }),
        messages: [{ role: 'user' as const, content: 'Fix the bug.' }, ...turns(history)],
      };
      const m = stream
        ? await anthropic.messages.stream(body).finalMessage()
        : await anthropic.messages.create(body);
      return m.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
    };

  it.each([
    ['chat', chatAsk('c1', false)],
    ['chat, streamed', chatAsk('c2', true)],
    ['Messages', messagesAsk('a1', false)],
    ['Messages, streamed', messagesAsk('a2', true)],
  ] as const)(
    '%s: a short prompt with the refused budget keeps its max_tokens; the long session still drops it',
    async (_door, ask) => {
      const sentBudget = (body: string) => {
        const sent = JSON.parse(body) as Obj;
        return sent.max_completion_tokens ?? sent.max_tokens;
      };
      const history: string[] = [];
      const attempts: number[] = [];
      const bodies: string[] = [];
      const turn = async (system: string | undefined, h: string[]) => {
        const before = upstream().length;
        expect(await ask(system, h)).toBe(ANSWER);
        const mine = upstream().slice(before);
        attempts.push(mine.length);
        return mine.at(-1)!.rawBody;
      };
      bodies.push(await turn(SYSTEM, history));
      history.push(ANSWER, 'turn 2: go on');
      // another session on the same key and model, the same budget, a prompt that fits beside it
      const short = await turn(undefined, []);
      expect(sentBudget(short)).toBe(BUDGET);
      for (let t = 2; t < 4; t++) {
        bodies.push(await turn(SYSTEM, history));
        history.push(ANSWER, `turn ${t + 1}: go on`);
      }
      expect(attempts).toEqual([2, 1, 1, 1]);
      for (const body of bodies) expect(sentBudget(body)).toBeUndefined();
      for (const k of [1, 2]) expect(prefixBreak(bodies[0]!, bodies[k]!)).toBeNull();
    },
  );

  it('a smaller budget that fits goes as the client sent it', async () => {
    const before = upstream().length;
    await stack.client.chat.completions.create({
      model: 'sim',
      max_tokens: 200,
      messages: [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: 'Fix the bug.' },
      ],
    });
    const mine = upstream().slice(before);
    expect(mine).toHaveLength(1);
    expect((JSON.parse(mine[0]!.rawBody) as Obj).max_tokens).toBe(200);
  });
});
