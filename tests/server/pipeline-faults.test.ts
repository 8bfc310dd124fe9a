/**
 * Streamed equals non-streamed on faulty upstreams too (issue 18, item 9): the same upstream
 * behaviour, sent once as a whole body and once as a stream, gives the client the same answer
 * (or the same error) and the request the same harness trace. Faults: a tool call without a
 * name, a response without choices, several choices with logprobs, text in the role chunk.
 * Through the real server on loopback, against a scripted upstream.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ScriptedReply, type ScriptedStack, startScriptedStack } from './scripted-upstream.js';
import { strictWeatherTool as weather } from './stack.js';
import { logCapture } from './test-utils.js';

/** One choice of the upstream's answer: text (cut into tokens) and calls, a name possibly missing. */
interface ChoiceSpec {
  content: string;
  calls: ReadonlyArray<{ name?: string; arguments: string }>;
}

/** What the upstream does, in both modes. */
interface Behaviour {
  choices: ChoiceSpec[];
  /** The upstream sends logprobs (one entry per text token), as asked. */
  logprobs: boolean;
  /** The first text token rides in the role chunk (some backends do that). */
  roleText: boolean;
  step: number;
  /** The client's tool_choice (absent: toolproof may force tool use). */
  toolChoice?: 'auto';
}

const BASE = { id: 'chatcmpl-faulty', created: 1_700_000_000, model: 'm' };

function tokens(text: string, step: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += step) out.push(text.slice(i, i + step));
  return out;
}

const entry = (token: string) => ({ token, logprob: -0.25, bytes: null, top_logprobs: [] });
const finishOf = (c: ChoiceSpec) => (c.calls.length > 0 ? 'tool_calls' : 'stop');

function wholeBody(b: Behaviour): object {
  return {
    ...BASE,
    object: 'chat.completion',
    choices: b.choices.map((c, index) => ({
      index,
      message: {
        role: 'assistant',
        content: c.content || null,
        ...(c.calls.length > 0
          ? {
              tool_calls: c.calls.map((call, i) => ({
                id: `call_${index}_${i}`,
                type: 'function',
                function: {
                  ...(call.name !== undefined ? { name: call.name } : {}),
                  arguments: call.arguments,
                },
              })),
            }
          : {}),
      },
      ...(b.logprobs ? { logprobs: { content: tokens(c.content, b.step).map(entry) } } : {}),
      finish_reason: finishOf(c),
    })),
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
  };
}

function streamEvents(b: Behaviour): object[] {
  const chunk = (index: number, delta: object, finish: string | null = null, token?: string) => ({
    ...BASE,
    object: 'chat.completion.chunk',
    choices: [
      {
        index,
        delta,
        ...(b.logprobs ? { logprobs: token === undefined ? null : { content: [entry(token)] } } : {}),
        finish_reason: finish,
      },
    ],
  });
  const out: object[] = [];
  b.choices.forEach((c, index) => {
    const toks = tokens(c.content, b.step);
    if (b.roleText && toks.length > 0)
      out.push(chunk(index, { role: 'assistant', content: toks[0] }, null, toks[0]));
    else out.push(chunk(index, { role: 'assistant', content: '' }));
    for (const t of b.roleText ? toks.slice(1) : toks) out.push(chunk(index, { content: t }, null, t));
    c.calls.forEach((call, i) => {
      out.push(
        chunk(index, {
          tool_calls: [
            {
              index: i,
              id: `call_${index}_${i}`,
              type: 'function',
              function: { ...(call.name !== undefined ? { name: call.name } : {}), arguments: '' },
            },
          ],
        }),
      );
      for (const piece of tokens(call.arguments, b.step))
        out.push(chunk(index, { tool_calls: [{ index: i, function: { arguments: piece } }] }));
    });
    out.push(chunk(index, {}, finishOf(c)));
  });
  out.push({
    ...BASE,
    object: 'chat.completion.chunk',
    choices: [],
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
  });
  return out;
}

type Outcome =
  | { error: string }
  | {
      choices: Array<{
        content: string | null;
        calls: Array<{ name: string; arguments: string }>;
        finish: string | null;
        logprobs: string[];
      }>;
    };

type Msg = {
  content?: string | null;
  tool_calls?: Array<{ function: { name?: string; arguments: string } }>;
};

function wholeOutcome(status: number, body: Record<string, unknown>): Outcome {
  if (status !== 200) return { error: (body.error as { code: string }).code };
  const choices = body.choices as Array<{
    index: number;
    message: Msg;
    finish_reason: string | null;
    logprobs?: { content?: Array<{ token: string }> } | null;
  }>;
  return {
    choices: [...choices]
      .sort((a, b) => a.index - b.index)
      .map((c) => ({
        content: c.message.content ? c.message.content : null,
        calls: (c.message.tool_calls ?? []).map((t) => ({
          name: t.function.name ?? '',
          arguments: t.function.arguments,
        })),
        finish: c.finish_reason,
        logprobs: (c.logprobs?.content ?? []).map((e) => e.token),
      })),
  };
}

function streamedOutcome(status: number, text: string): Outcome {
  if (status !== 200) return { error: (JSON.parse(text) as { error: { code: string } }).error.code };
  const byIndex = new Map<
    number,
    {
      content: string;
      calls: Array<{ name: string; arguments: string }>;
      finish: string | null;
      logprobs: string[];
    }
  >();
  for (const line of text.split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    const ev = JSON.parse(line.slice(6)) as {
      error?: { code: string };
      choices?: Array<{
        index: number;
        delta?: {
          content?: string | null;
          tool_calls?: Array<{ index: number; function?: { name?: string; arguments?: string } }>;
        };
        finish_reason: string | null;
        logprobs?: { content?: Array<{ token: string }> } | null;
      }>;
    };
    if (ev.error) return { error: ev.error.code };
    for (const c of ev.choices ?? []) {
      let acc = byIndex.get(c.index);
      if (!acc) byIndex.set(c.index, (acc = { content: '', calls: [], finish: null, logprobs: [] }));
      if (typeof c.delta?.content === 'string') acc.content += c.delta.content;
      for (const td of c.delta?.tool_calls ?? []) {
        acc.calls[td.index] ??= { name: '', arguments: '' };
        if (td.function?.name) acc.calls[td.index]!.name += td.function.name;
        if (td.function?.arguments) acc.calls[td.index]!.arguments += td.function.arguments;
      }
      if (c.finish_reason) acc.finish = c.finish_reason;
      for (const e of c.logprobs?.content ?? []) acc.logprobs.push(e.token);
    }
  }
  return {
    choices: [...byIndex.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, a]) => ({ ...a, content: a.content === '' ? null : a.content })),
  };
}

let behaviour: Behaviour;
let stack: ScriptedStack;
const log = logCapture();
beforeAll(async () => {
  stack = await startScriptedStack(
    (body): ScriptedReply =>
      body.stream === true
        ? { sse: streamEvents(behaviour), pieces: [11, 29, 7] }
        : { json: wholeBody(behaviour) },
    { build: { logger: { level: 'info', stream: log.stream } } },
  );
});
afterAll(() => stack.close());

let seq = 0;
/** The `harness` trace of the request's log line (written when the response ended). */
const harnessOf = async (reqId: string): Promise<unknown> => (await log.requestLine(reqId)).harness;

async function both(b: Behaviour): Promise<{ whole: Outcome; streamed: Outcome; traces: unknown[] }> {
  behaviour = b;
  const ask = {
    model: 'm',
    messages: [{ role: 'user', content: 'Weather in Paris?' }],
    tools: [weather],
    ...(b.choices.length > 1 ? { n: b.choices.length } : {}),
    ...(b.logprobs ? { logprobs: true } : {}),
    ...(b.toolChoice ? { tool_choice: b.toolChoice } : {}),
  };
  const send = (stream: boolean, id: string) =>
    fetch(`${stack.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': id },
      body: JSON.stringify({ ...ask, stream }),
    });
  const wholeId = `faults-${++seq}`;
  const streamedId = `faults-${++seq}`;
  const w = await send(false, wholeId);
  const whole = wholeOutcome(w.status, (await w.json()) as Record<string, unknown>);
  const s = await send(true, streamedId);
  const streamed = streamedOutcome(s.status, await s.text());
  return { whole, streamed, traces: [await harnessOf(wholeId), await harnessOf(streamedId)] };
}

const text = fc.constantFrom(
  '',
  'Sunny.',
  'Let me check the weather for you. ',
  '<b>Note</b>: ok',
  '< not a tag',
);
const goodCall = fc
  .constantFrom('Paris', 'Oslo')
  .map((city) => ({ name: 'get_weather', arguments: JSON.stringify({ city }) }));
const namelessCall = fc.constant({ arguments: '{"city":"Paris"}' });
const choice: fc.Arbitrary<ChoiceSpec> = fc.record({
  content: text,
  calls: fc.oneof(
    fc.constant([]),
    goodCall.map((c) => [c]),
    namelessCall.map((c) => [c]),
  ),
});

describe('streamed equals non-streamed on faulty upstreams', () => {
  it('property: nameless calls, several choices, logprobs, text in the role chunk, any chunking', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          choices: fc.array(choice, { minLength: 1, maxLength: 3 }),
          logprobs: fc.boolean(),
          roleText: fc.boolean(),
          step: fc.integer({ min: 1, max: 7 }),
          toolChoice: fc.constantFrom(undefined, 'auto' as const),
        }),
        async (b) => {
          const { whole, streamed, traces } = await both(b);
          expect(streamed).toEqual(whole);
          expect(traces[1]).toEqual(traces[0]);
        },
      ),
      { numRuns: 80, seed: 18 },
    );
  }, 120_000);

  it('a tool call without a name is an upstream fault in both modes', async () => {
    const { whole, streamed } = await both({
      choices: [{ content: '', calls: [{ arguments: '{"city":"Paris"}' }] }],
      logprobs: false,
      roleText: false,
      step: 4,
    });
    expect(whole).toEqual({ error: 'TP_ERR_UPSTREAM_BAD_RESPONSE' });
    expect(streamed).toEqual(whole);
  });

  it('a response without choices is an upstream fault in both modes', async () => {
    const { whole, streamed } = await both({ choices: [], logprobs: false, roleText: false, step: 4 });
    expect(whole).toEqual({ error: 'TP_ERR_UPSTREAM_BAD_RESPONSE' });
    expect(streamed).toEqual(whole);
  });

  it('every choice keeps its logprobs when streamed, held text included', async () => {
    const { whole, streamed } = await both({
      choices: [
        { content: '<b>Hi</b>: ok', calls: [{ name: 'get_weather', arguments: '{"city":"Oslo"}' }] },
        { content: 'plain', calls: [] },
      ],
      logprobs: true,
      roleText: false,
      step: 1,
    });
    expect(whole).toMatchObject({
      choices: [{ logprobs: [...'<b>Hi</b>: ok'] }, { logprobs: [...'plain'] }],
    });
    expect(streamed).toEqual(whole);
  });

  it('text in the role chunk that a hook holds is sent once', async () => {
    for (const toolChoice of [undefined, 'auto' as const]) {
      const { whole, streamed } = await both({
        choices: [{ content: '<b>hi</b>', calls: [] }],
        logprobs: false,
        roleText: true,
        step: 1,
        ...(toolChoice ? { toolChoice } : {}),
      });
      expect(whole).toMatchObject({ choices: [{ content: '<b>hi</b>' }] });
      expect(streamed).toEqual(whole);
    }
  });
});
