/**
 * Tool results that each fit the window but together overflow it (an agent's many `cat`s and
 * test runs, none over the window on its own): the backend refused the turn, and every later one,
 * since the agent sends its whole history again; the agent's compaction request carries the same
 * results and was refused too. The session was over. Now the older results are cut (head and
 * tail, with the single-result cut's note), decided from each result's own text, its place in the
 * prompt and the window, so the next turn, with more messages, sends the same bytes for what it
 * shares with this one. Through the real server and the real SDKs against the simulator refusing
 * over its window as llama-server does, three turns of one session, streamed and not, on chat
 * completions and Messages; the window known (read from /props at start-up) or learnt from the
 * backend's refusal.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseContextOverflow } from '../../protocol/context-overflow.js';
import { resolveCapabilities } from '../../server/capability-probe.js';
import { windowFromRefusal } from '../../server/context-window.js';
import { collectStream, startStack, type Stack } from '../server/stack.js';
import { rawElements } from './raw-json.js';

const WINDOW = 8192;
const MARK = "to fit the model's context window";
/** A result of `chars` characters of log lines, different per `id`: ~2,300 tokens, a quarter of the window or so. */
const result = (id: number, chars = 7000) =>
  Array.from({ length: Math.ceil(chars / 50) }, (_, i) => `r${id} line ${i}: ${'x'.repeat(36)}`)
    .join('\n')
    .slice(0, chars);
/** Five of them: ~35,000 characters, past the simulator's 8,192 tokens (4 characters a token). */
const RESULTS = 5;

/** Whether `next`'s raw messages begin with `prev`'s, byte for byte (the prompt's prefix holds). */
function extendsMessages(prev: string, next: string): boolean {
  const before = rawElements(prev, 'messages') ?? [];
  const after = rawElements(next, 'messages') ?? [];
  return before.length > 0 && after.length > before.length && before.every((m, k) => after[k] === m);
}

function commonPrefix(a: string, b: string): number {
  let i = 0;
  while (i < a.length && i < b.length && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

function chatRequests(stack: Stack) {
  return stack.sim.requests.filter((r) => r.path.endsWith('/chat/completions'));
}

/**
 * A turn over the window: the prompt goes as the client sent it (bytes alone cannot say it is
 * over: English and code run ~4 bytes a token), the backend refuses it for its length, and it goes
 * again with the older results cut. Returns what was sent the second time.
 */
function refusedThenCut(stack: Stack): string {
  const reqs = chatRequests(stack);
  expect(reqs).toHaveLength(2);
  expect(reqs[0]!.rawBody).not.toContain(MARK);
  expect(reqs[1]!.rawBody).toContain(MARK);
  return reqs[1]!.rawBody;
}

/**
 * The same, or, for a prompt past six bytes a token of the window (over it whatever the
 * tokenizer) or one that begins with a prompt the backend refused so (an earlier turn of the
 * session: server/over-window.ts), cut ahead and sent once. Returns what was sent cut, and how.
 */
function cutSent(stack: Stack): { raw: string; ahead: boolean } {
  const reqs = chatRequests(stack);
  if (reqs.length === 2) return { raw: refusedThenCut(stack), ahead: false };
  expect(reqs).toHaveLength(1);
  expect(reqs[0]!.rawBody).toContain(MARK);
  return { raw: reqs[0]!.rawBody, ahead: true };
}

const chatTools = [
  {
    type: 'function' as const,
    function: { name: 'run', parameters: { type: 'object', properties: { cmd: { type: 'string' } } } },
  },
];

/**
 * A chat history of `n` tool calls, each answered by a result of its own; `session` tells one
 * test's session from another's (a prompt refused as over the window is remembered for the
 * prompts that begin with it: server/over-window.ts).
 */
function chatHistory(n: number, session = ''): Array<Record<string, unknown>> {
  const history: Array<Record<string, unknown>> = [{ role: 'user', content: `Look at the logs.${session}` }];
  for (let i = 0; i < n; i++) history.push(...chatCall(i));
  return history;
}

function chatCall(i: number): Array<Record<string, unknown>> {
  return [
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: `c${i}`, type: 'function', function: { name: 'run', arguments: `{"cmd":"cat log${i}"}` } },
      ],
    },
    { role: 'tool', tool_call_id: `c${i}`, content: result(i) },
  ];
}

async function chatTurn(stack: Stack, history: unknown[], stream: boolean): Promise<string> {
  const params = { model: 'sim', messages: history as never, tools: chatTools };
  if (!stream) return (await stack.client.chat.completions.create(params)).choices[0]?.message.content ?? '';
  return (await collectStream(await stack.client.chat.completions.create({ ...params, stream: true })))
    .content;
}

const sim = { personality: 'llama-server', scenario: 'demo', enforceWindow: true, nCtx: WINDOW } as const;

describe(`${RESULTS} tool results of ~2,300 tokens each in a window of ${WINDOW}, known`, () => {
  let stack: Stack;
  let anthropic: Anthropic;
  beforeAll(async () => {
    const probe = await startStack({ sim });
    // The window as toolproof reads it at start-up (main.ts resolves capabilities before listening).
    const config = await resolveCapabilities(probe.app.toolproof.config);
    await probe.close();
    expect(config.defaults.contextWindow).toBe(WINDOW);
    stack = await startStack({ sim, config: { defaults: config.defaults } });
    anthropic = new Anthropic({ baseURL: stack.origin, apiKey: 'x', maxRetries: 0, timeout: 30_000 });
  });
  afterAll(() => stack.close());

  it("each result fits the window; together they are past it: the backend's own refusal, with n_prompt_tokens and n_ctx", async () => {
    const history = chatHistory(RESULTS);
    for (const m of history)
      if (m.role === 'tool') expect((m.content as string).length / 3).toBeLessThan(WINDOW);
    const res = await fetch(`${stack.sim.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim', messages: history, tools: chatTools }),
    });
    expect(res.status).toBe(400);
    const raw = await res.text();
    // llama-server's server_task_result_error::to_json, keys in its order.
    expect(raw).toMatch(
      /^\{"error":\{"code":400,"message":"request \(\d+ tokens\) exceeds the available context size \(8192 tokens\), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":\d+,"n_ctx":8192\}\}$/,
    );
    const body = JSON.parse(raw) as { error: { n_prompt_tokens: number } };
    expect(body.error.n_prompt_tokens).toBeGreaterThan(WINDOW);
    expect(parseContextOverflow(body)).toEqual({ max: WINDOW, prompt: body.error.n_prompt_tokens });
    expect(windowFromRefusal(400, body)).toBe(WINDOW);
  });

  for (const stream of [false, true]) {
    it(`chat${stream ? ' (streamed)' : ''}: three turns answered, the older results cut, the same bytes every turn`, async () => {
      const history = chatHistory(RESULTS, ` three ${stream}`);
      const sent: string[] = [];
      const ahead: boolean[] = [];
      for (let turn = 0; turn < 3; turn++) {
        stack.sim.reset();
        const answer = await chatTurn(stack, history, stream);
        expect(answer).toBeTruthy();
        const cut = cutSent(stack);
        sent.push(cut.raw);
        ahead.push(cut.ahead);
        history.push(
          { role: 'assistant', content: `answer ${turn}` },
          { role: 'user', content: `next ${turn}` },
        );
      }
      // Refused once: later turns begin with the refused prompt, over the window too, and go cut
      // from the start (before, each was refused once more).
      expect(ahead).toEqual([false, true, true]);
      for (const raw of sent) {
        const messages = (JSON.parse(raw) as { messages: Array<{ role: string; content: string }> }).messages;
        const results = messages.filter((m) => m.role === 'tool').map((m) => m.content);
        expect(results).toHaveLength(RESULTS);
        // The oldest is cut with the note, the newest is whole.
        expect(results[0]).toContain(MARK);
        expect(results[0]!.startsWith('r0 line 0:')).toBe(true);
        expect(results.at(-1)).toBe(result(RESULTS - 1));
      }
      // Each turn's messages begin with the previous turn's, byte for byte: the prefix holds.
      for (let i = 1; i < sent.length; i++) expect(extendsMessages(sent[i - 1]!, sent[i]!)).toBe(true);
    });

    it(`chat${stream ? ' (streamed)' : ''}: each turn another result; earlier cuts stay the same bytes`, async () => {
      const history = chatHistory(RESULTS - 1, ` another ${stream}`);
      const sent: string[] = [];
      const ahead: boolean[] = [];
      for (let turn = 0; turn < 4; turn++) {
        history.push(...chatCall(RESULTS - 1 + turn));
        stack.sim.reset();
        expect(await chatTurn(stack, history, stream)).toBeTruthy();
        const cut = cutSent(stack);
        sent.push(cut.raw);
        ahead.push(cut.ahead);
      }
      // Refused, then cut, once: each later turn begins with the refused prompt and is cut ahead,
      // with the same bytes a refusal would have given (checked below). Before, every turn was
      // refused until the history was far past the window (eight results, ~56,000 bytes).
      expect(ahead).toEqual([false, true, true, true]);
      for (let i = 1; i < sent.length; i++) {
        const before = sent[i - 1]!;
        // Whatever the previous turn cut is in what both turns share, unchanged.
        const lastCut = before.lastIndexOf(MARK);
        if (lastCut !== -1) expect(commonPrefix(before, sent[i]!)).toBeGreaterThan(lastCut);
      }
      expect(sent.at(-1)).toContain(MARK);
    });

    it(`messages${stream ? ' (streamed)' : ''}: three turns answered, the same bytes every turn`, async () => {
      const messages: Anthropic.MessageParam[] = [{ role: 'user', content: `Look at the logs. ${stream}` }];
      for (let i = 0; i < RESULTS; i++)
        messages.push(
          {
            role: 'assistant',
            content: [
              { type: 'tool_use', id: `toolu_${i}`, name: 'Bash', input: { command: `cat log${i}` } },
            ],
          },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: `toolu_${i}`, content: result(i) }] },
        );
      const sent: string[] = [];
      for (let turn = 0; turn < 3; turn++) {
        stack.sim.reset();
        const params = {
          model: 'sim',
          max_tokens: 200,
          messages,
          tools: [{ name: 'Bash', input_schema: { type: 'object' as const, properties: {} } }],
        };
        const msg = stream
          ? await anthropic.messages.stream(params).finalMessage()
          : await anthropic.messages.create(params);
        expect(msg.type).toBe('message');
        const cut = cutSent(stack);
        expect(cut.ahead).toBe(turn > 0);
        sent.push(cut.raw);
        messages.push(
          { role: 'assistant', content: `answer ${turn}` },
          { role: 'user', content: `next ${turn}` },
        );
      }
      for (const raw of sent) expect(raw).toContain(MARK);
      for (let i = 1; i < sent.length; i++) expect(extendsMessages(sent[i - 1]!, sent[i]!)).toBe(true);
    });
  }

  for (const stream of [false, true])
    it(`chat${stream ? ' (streamed)' : ''}: a history that fits by its tokens is sent whole, though over the window at 3 bytes a token`, async () => {
      // Four results: ~28,000 characters, ~7,300 tokens at the simulator's 4 a token (under 8,192),
      // ~9,300 at 3 bytes a token. Cutting it would lose context the model could use, and change
      // the prompt ahead of the agent's own compaction. The session's longer prompt was refused
      // (above): a prompt it begins with is not taken for over the window.
      const history = chatHistory(RESULTS - 1, ` another ${stream}`);
      stack.sim.reset();
      expect(await chatTurn(stack, history, stream)).toBeTruthy();
      const reqs = chatRequests(stack);
      expect(reqs).toHaveLength(1);
      expect(reqs[0]!.rawBody).not.toContain(MARK);
      expect(JSON.stringify(history).length / 3).toBeGreaterThan(WINDOW);
    });

  it('the compaction request (the whole history, no tools) is answered too', async () => {
    const history = chatHistory(RESULTS);
    const summary = await stack.client.chat.completions.create({
      model: 'sim',
      messages: [...history, { role: 'user', content: 'Summarize the conversation so far.' }] as never,
    });
    expect(summary.choices[0]?.message.content).toBeTruthy();
  });
});

describe(`the same session, the window unknown: learnt from llama-server's refusal (n_ctx)`, () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ sim });
    expect(stack.app.toolproof.config.defaults.contextWindow).toBe(0);
  });
  afterAll(() => stack.close());

  for (const stream of [false, true])
    it(`chat${stream ? ' (streamed)' : ''}: refused once, then every turn answered with the same bytes`, async () => {
      const history = chatHistory(RESULTS, ` learnt ${stream}`);
      const sent: string[] = [];
      const perTurn: number[] = [];
      for (let turn = 0; turn < 3; turn++) {
        stack.sim.reset();
        expect(await chatTurn(stack, history, stream)).toBeTruthy();
        const reqs = chatRequests(stack);
        perTurn.push(reqs.length);
        sent.push(reqs.at(-1)!.rawBody);
        history.push(
          { role: 'assistant', content: `answer ${turn}` },
          { role: 'user', content: `next ${turn}` },
        );
      }
      // Every turn is over the window: the first refused for its length, then sent cut (the window
      // learnt at the refusal is remembered per upstream and model, and so is the refused prompt:
      // the later turns begin with it, and go cut from the start; before, each was refused too).
      expect(perTurn).toEqual([2, 1, 1]);
      for (const raw of sent) expect(raw).toContain(MARK);
      for (let i = 1; i < sent.length; i++) expect(extendsMessages(sent[i - 1]!, sent[i]!)).toBe(true);
    });
});

describe('the same session, a contextWindow configured past the backend’s (32768 set, 8192 served)', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ sim, file: { defaults: { contextWindow: 32768 } } });
  });
  afterAll(() => stack.close());

  it('the smaller window the refusal names is learnt: refused once, then every turn answered with the same bytes', async () => {
    const history = chatHistory(RESULTS);
    const sent: string[] = [];
    const perTurn: number[] = [];
    for (let turn = 0; turn < 3; turn++) {
      stack.sim.reset();
      expect(await chatTurn(stack, history, turn === 1)).toBeTruthy();
      const reqs = chatRequests(stack);
      perTurn.push(reqs.length);
      sent.push(reqs.at(-1)!.rawBody);
      history.push(
        { role: 'assistant', content: `answer ${turn}` },
        { role: 'user', content: `next ${turn}` },
      );
    }
    expect(perTurn).toEqual([2, 1, 1]);
    for (const raw of sent) expect(raw).toContain(MARK);
    for (let i = 1; i < sent.length; i++) expect(extendsMessages(sent[i - 1]!, sent[i]!)).toBe(true);
    const metrics = await (await fetch(`${stack.origin}/metrics`)).text();
    expect(metrics).toMatch(
      /toolproof_upstream_refusals_total\{[^}]*decision="context-window-learnt"[^}]*\} 1/,
    );
    // The later turns begin with the refused prompt: cut from the start, never refused.
    expect(metrics).not.toMatch(/decision="prompt-over-window"/);
  });
});
