/**
 * The attempt loop (server/chat/pipeline.ts) through the real server, against a scripted
 * upstream: streamed and non-streamed answers to the same upstream behaviour are identical,
 * retries and fallbacks included, a cut answer sent again and a policy's refusal sent again too
 * (the same upstream attempts, the same harness); retry outcomes are true; failures after the headers end the
 * stream with an error event; odd upstream responses are upstream faults, never crashes.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatCompletionChunk } from '../../protocol/openai.js';
import { POLICIES } from '../../policies/registry.js';
import type { Policy } from '../../policies/types.js';
import type { PolicyEffect } from '../../policies/registry.js';
import {
  assemble,
  type ScriptedReply,
  type ScriptedStack,
  startScriptedStack,
  type Turn,
  turnChunks,
  turnCompletion,
} from './scripted-upstream.js';
import { strictWeatherTool as weather } from './stack.js';
import { logCapture } from './test-utils.js';
import { FallbackMemory } from '../../server/fallback-memory.js';

const ask = {
  model: 'm',
  messages: [{ role: 'user' as const, content: 'Weather in Paris?' }],
  tools: [weather],
};

/** The turns the upstream gives, attempt after attempt, and how it cuts its streams. */
let turns: Array<Turn & { fail?: true; cut?: true; refuse?: true }> = [];
let step = 3;
let attempt = 0;
let failWith: ScriptedReply | undefined;

function reply(body: Record<string, unknown>): ScriptedReply {
  if (failWith) return failWith;
  const turn = turns[Math.min(attempt++, turns.length - 1)] ?? {};
  if (turn.fail) return { json: { error: { message: 'CUDA out of memory' } }, status: 500 };
  // vLLM with the xgrammar backend refusing a schema keyword (a policy's refusal: sent again
  // without the keywords, before any byte reached the client).
  if (turn.refuse)
    return {
      json: {
        error: {
          message: 'The provided JSON schema contains features not supported by xgrammar.',
          type: 'BadRequestError',
          code: 400,
        },
      },
      status: 400,
    };
  // The connection closed after the headers, before the end (a backend restarted mid-answer):
  // the stream after its role chunk, the whole body after its first bytes.
  if (turn.cut)
    return body.stream === true
      ? {
          raw: `data: ${JSON.stringify(turnChunks({}, step)[0])}\n\n`,
          contentType: 'text/event-stream',
          destroyAfter: true,
        }
      : { raw: '{"id":"chatcmpl-scripted","choices":[{"index":0,"mess', destroyAfter: true };
  if (body.stream !== true) return { json: turnCompletion(turn) };
  // As vLLM does: a usage chunk (no choices) when the request asks for it.
  const usage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage
    ? [
        {
          id: 'chatcmpl-scripted',
          object: 'chat.completion.chunk',
          created: 1,
          model: 'm',
          choices: [],
          usage: (turnCompletion(turn) as { usage: unknown }).usage,
        },
      ]
    : [];
  return { sse: [...turnChunks(turn, step), ...usage], pieces: [7, 13, 5, 31] };
}

let stack: ScriptedStack;
// Each request's log line: its `harness` trace is compared between the two modes too.
const log = logCapture();
beforeAll(async () => {
  stack = await startScriptedStack((body) => reply(body), {
    build: { logger: { level: 'info', stream: log.stream } },
  });
});

let requestSeq = 0;

/** The `harness` trace of the request's log line (written when the response ended). */
const harnessOf = async (reqId: string): Promise<unknown> => (await log.requestLine(reqId)).harness;
afterAll(() => stack.close());

/** A second tool whose schema holds a keyword xgrammar refuses (a Pydantic set[str]). */
const tagTool = {
  type: 'function' as const,
  function: {
    name: 'tag_cities',
    parameters: {
      type: 'object',
      properties: { cities: { type: 'array', items: { type: 'string' }, uniqueItems: true } },
    },
  },
};

/**
 * Each request starts with nothing remembered of earlier refusals (a policy's, or tool_choice
 * "required" rejected): both modes meet the same upstream.
 */
function forgetRefusals(): void {
  const state = stack.app.toolproof as { memory: unknown };
  const deps = stack.app.toolproof.chatDeps as { refusals: unknown; memory: unknown };
  deps.refusals = new FallbackMemory();
  state.memory = deps.memory = new FallbackMemory();
}

async function both(
  script: Array<Turn & { cut?: true; refuse?: true }>,
  asked: Omit<typeof ask, 'tools'> & { tools: object[] } = ask,
): Promise<{
  streamed: Outcome;
  whole: Outcome;
  traces: { streamed: unknown; whole: unknown };
  /** How many upstream attempts each mode made: [whole, streamed]. */
  attempts: number[];
}> {
  turns = script;
  attempt = 0;
  const wholeId = `parity-${++requestSeq}`;
  const streamedId = `parity-${++requestSeq}`;
  const attempts: number[] = [];
  let whole: Outcome;
  forgetRefusals();
  try {
    const completion = await stack.client.chat.completions.create(asked as typeof ask, {
      headers: { 'x-request-id': wholeId },
    });
    const msg = completion.choices[0]!.message;
    whole = {
      content: msg.content && msg.content.length > 0 ? msg.content : null,
      calls: (msg.tool_calls ?? []).map((c) => ({
        id: c.id,
        name: (c as { function: { name: string } }).function.name,
        arguments: (c as { function: { arguments: string } }).function.arguments,
      })),
      finish: completion.choices[0]!.finish_reason,
    };
  } catch (err) {
    whole = { error: (err as { code?: string }).code ?? String(err) };
  }
  attempts.push(attempt);
  attempt = 0;
  forgetRefusals();
  const chunks: ChatCompletionChunk[] = [];
  let streamed: Outcome;
  try {
    const stream = await stack.client.chat.completions.create(
      { ...(asked as typeof ask), stream: true },
      { headers: { 'x-request-id': streamedId } },
    );
    for await (const c of stream) chunks.push(c as unknown as ChatCompletionChunk);
    streamed = assemble(chunks);
  } catch (err) {
    streamed = { error: (err as { code?: string }).code ?? String(err) };
  }
  attempts.push(attempt);
  const traces = { streamed: await harnessOf(streamedId), whole: await harnessOf(wholeId) };
  return { streamed, whole, traces, attempts };
}

/** What the client got: the answer, or the error's code. */
type Outcome = ReturnType<typeof assemble> | { error: string };

const answer = (text: string) => ({ name: 'final_answer', arguments: JSON.stringify({ answer: text }) });

describe('streamed equals non-streamed, retries included', () => {
  const city = fc.constantFrom('Paris', 'Tōkyō', 'a "quoted" city', 'São Paulo\n');
  const text = fc.constantFrom('', 'Let me check. ', 'Sure:\n', 'prose claiming it ran the tool. ');
  const turn: fc.Arbitrary<Turn & { cut?: true; refuse?: true }> = fc.oneof(
    city.map((c) => ({ calls: [{ name: 'get_weather', arguments: JSON.stringify({ city: c }) }] })),
    fc.tuple(text, city).map(([t, c]) => ({
      content: t,
      calls: [{ name: 'get_weather', arguments: JSON.stringify({ town: c }) }],
    })),
    text.map((t) => ({ content: t, calls: [{ name: 'get_forecast', arguments: '{}' }] })),
    fc.tuple(text, city).map(([t, c]) => ({
      content: `${t}<tool_call>{"name": "get_weather", "arguments": {"city": "${c.replace(/\W/g, '')}"}}</tool_call>`,
    })),
    text.map((t) => ({ content: `${t}<tool_call>{"name": "get_weather", "arguments": {"city": ` })),
    fc.constantFrom('It is sunny.', 'Ça va « bien ».\n\nTwo lines').map((a) => ({ calls: [answer(a)] })),
    fc.constantFrom('Done.').map((a) => ({
      calls: [answer(a), { name: 'get_forecast', arguments: '{}' }],
    })),
    fc.constant({ cut: true as const }),
    fc.constant({ refuse: true as const }),
  );

  it('property: any two attempts, cuts and refusals included, any chunking', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(turn, { minLength: 1, maxLength: 2 }),
        fc.integer({ min: 1, max: 9 }),
        async (script, s) => {
          step = s;
          const { streamed, whole, traces, attempts } = await both(script, {
            ...ask,
            tools: [weather, tagTool],
          });
          expect(streamed).toEqual(whole);
          expect(traces.streamed).toEqual(traces.whole);
          expect(attempts[1]).toBe(attempts[0]);
        },
      ),
      { numRuns: 40, seed: 7 },
    );
  }, 60_000);

  it('a broken envelope that is retried never reaches the streaming client', async () => {
    step = 2;
    const { streamed, whole } = await both([
      { content: 'Checking. <tool_call>{"name": "get_weather", "arguments": {"city": ' },
      { calls: [{ name: 'get_weather', arguments: '{"city":"Paris"}' }] },
    ]);
    expect(streamed).toEqual(whole);
    expect(streamed).toMatchObject({ content: null, calls: [{ name: 'get_weather' }] });
  });
});

describe('retry outcomes are true', () => {
  async function retryOutcomes(): Promise<Record<string, number>> {
    const text = await (await fetch(stack.url.replace('/v1', '/metrics'))).text();
    const out: Record<string, number> = {};
    for (const line of text.split('\n')) {
      const m = /^toolproof_retries_total\{.*outcome="(\w+)".*\} (\d+)/.exec(line);
      if (m) out[m[1]!] = (out[m[1]!] ?? 0) + Number(m[2]);
    }
    return out;
  }

  it('a retry that fails again is counted failed, not fixed', async () => {
    const before = await retryOutcomes();
    turns = [{ calls: [{ name: 'get_forecast', arguments: '{}' }] }];
    attempt = 0;
    const res = await stack.client.chat.completions.create(ask);
    expect(res.choices[0]!.message.tool_calls?.[0]).toMatchObject({ function: { name: 'get_forecast' } });
    const after = await retryOutcomes();
    expect((after.failed ?? 0) - (before.failed ?? 0)).toBe(1);
    expect(after.fixed ?? 0).toBe(before.fixed ?? 0);
  });

  it('a retry that ends in an upstream error is counted failed', async () => {
    const before = await retryOutcomes();
    turns = [{ calls: [{ name: 'get_forecast', arguments: '{}' }] }, { fail: true }];
    attempt = 0;
    const res = await fetch(`${stack.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...ask, stream: true }),
    });
    // Nothing of the answer went out (the first attempt's call was held): the upstream's own
    // status and the error body, as the non-streamed request gets them.
    expect(res.status).toBe(500);
    expect(await res.text()).toContain('CUDA out of memory');
    const after = await retryOutcomes();
    expect((after.failed ?? 0) - (before.failed ?? 0)).toBe(1);
  });
});

describe('re-asks of leaked call text toolproof could not read are counted (issue 30)', () => {
  async function reasks(): Promise<Record<string, number>> {
    const text = await (await fetch(stack.url.replace('/v1', '/metrics'))).text();
    const out: Record<string, number> = {};
    for (const line of text.split('\n')) {
      const m = /^toolproof_leak_reasks_total\{(.*)\} (\d+)/.exec(line);
      if (!m) continue;
      const format = /format="([^"]*)"/.exec(m[1]!)?.[1];
      const cause = /cause="([^"]*)"/.exec(m[1]!)?.[1];
      out[`${format}/${cause}`] = (out[`${format}/${cause}`] ?? 0) + Number(m[2]);
    }
    return out;
  }

  it('an unreadable hermes envelope re-asked counts once per request, streamed or not', async () => {
    const before = await reasks();
    step = 3;
    const { streamed, whole } = await both([
      { content: 'Checking. <tool_call>{"name": "get_weather" "arguments": {"city": "Paris"}}</tool_call>' },
      { calls: [{ name: 'get_weather', arguments: '{"city":"Paris"}' }] },
    ]);
    expect(streamed).toEqual(whole);
    expect(whole).toMatchObject({ calls: [{ name: 'get_weather' }] });
    const after = await reasks();
    expect((after['hermes/unreadable'] ?? 0) - (before['hermes/unreadable'] ?? 0)).toBe(2);
  });

  it('a leak that was read, then re-asked for its arguments, is not a re-ask of a leak', async () => {
    const before = await reasks();
    turns = [
      { content: '<tool_call>{"name": "get_weather", "arguments": {"town": "Paris"}}</tool_call>' },
      { calls: [{ name: 'get_weather', arguments: '{"city":"Paris"}' }] },
    ];
    attempt = 0;
    const res = await stack.client.chat.completions.create(ask);
    expect(res.choices[0]!.message.tool_calls?.[0]).toMatchObject({ function: { name: 'get_weather' } });
    expect(attempt).toBe(2);
    expect(await reasks()).toEqual(before);
  });
});

describe('failures after the headers, odd upstream responses', () => {
  it('a streaming request answered with a non-SSE 200 gets an error, and the process lives on', async () => {
    // Large enough that toolproof abandons the body before it was read.
    failWith = { raw: `<html>${'proxy error '.repeat(400_000)}</html>`, contentType: 'text/html' };
    await expect(stack.client.chat.completions.create({ ...ask, stream: true })).rejects.toMatchObject({
      status: 502,
    });
    failWith = undefined;
    await new Promise((r) => setTimeout(r, 50));
    turns = [{ calls: [{ name: 'get_weather', arguments: '{"city":"Paris"}' }] }];
    attempt = 0;
    const ok = await stack.client.chat.completions.create(ask);
    expect(ok.choices[0]!.message.tool_calls?.[0]).toBeDefined();
  });

  it('a non-streamed body cut mid-way is a 502 that says cut, not unreachable nor a 500, on each door', async () => {
    // The upstream answered, then closed: TP_ERR_UPSTREAM_CUT_OFF; the backend was reached.
    failWith = { raw: '{"id":"x","choices":[{"index":0,"mess', destroyAfter: true };
    const post = (path: string, body: unknown) =>
      fetch(`${stack.url.replace(/\/v1$/, '')}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const chat = await post('/v1/chat/completions', ask);
    const responses = await post('/v1/responses', { model: ask.model, input: 'Weather in Paris?' });
    const messages = await post('/v1/messages', {
      model: ask.model,
      max_tokens: 50,
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
    });
    failWith = undefined;
    for (const res of [chat, responses, messages]) expect(res.status).toBe(502);
    expect(((await chat.json()) as { error: { code: string } }).error.code).toBe('TP_ERR_UPSTREAM_CUT_OFF');
    expect(((await responses.json()) as { error: { code: string } }).error.code).toBe(
      'TP_ERR_UPSTREAM_CUT_OFF',
    );
    const m = (await messages.json()) as { type: string; error: { type: string; message: string } };
    expect(m.error.type).toBe('api_error');
    expect(m.error.message).toMatch(/closed the response body before it ended/);
    expect(m.error.message).not.toMatch(/unreachable/);
  });

  it("llama-server's parse failure as a stream error event is salvaged like the non-streamed 500", async () => {
    const message =
      'Failed to parse input at pos 12: <tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>';
    failWith = { sse: [{ error: { code: 500, message, type: 'server_error' } }], endWithoutDone: true };
    const chunks: ChatCompletionChunk[] = [];
    for await (const c of await stack.client.chat.completions.create({ ...ask, stream: true }))
      chunks.push(c as unknown as ChatCompletionChunk);
    failWith = { json: { error: { code: 500, message, type: 'server_error' } }, status: 500 };
    const whole = await stack.client.chat.completions.create(ask);
    failWith = undefined;
    const streamed = assemble(chunks);
    expect(streamed.calls).toEqual([
      expect.objectContaining({ name: 'get_weather', arguments: '{"city":"Oslo"}' }),
    ]);
    expect(streamed.calls[0]!.id).toBe(whole.choices[0]!.message.tool_calls![0]!.id);
    expect(streamed.finish).toBe(whole.choices[0]!.finish_reason);
  });
});

describe("toolproof's own bugs", () => {
  it('an exception in a stream hook after the headers ends the stream with an internal error event and [DONE]', async () => {
    const broken: Policy<PolicyEffect> = {
      name: 'broken',
      enabled: () => true,
      createStreamHook: () => ({
        onChunk: () => {
          throw new TypeError('boom');
        },
        onEnd: () => ({ chunks: [], effects: [] }),
      }),
    };
    // The headers wait for the answer's first byte or the first quiet keep-alive interval (50 ms
    // here): the upstream holds its answer until the client has them.
    let release: () => void = () => undefined;
    const hold = new Promise<void>((r) => {
      release = r;
    });
    const s = await startScriptedStack(
      (body) =>
        body.stream === true
          ? { sse: turnChunks({ content: 'hello there' }), hold }
          : { json: turnCompletion({ content: 'hello' }) },
      { build: { policies: [...POLICIES, broken] }, config: { streamKeepAliveMs: 50 } },
    );
    try {
      const res = await fetch(`${s.url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ ...ask, stream: true }),
      });
      expect(res.status).toBe(200);
      release();
      const text = await res.text();
      expect(text).toContain('"code":"TP_ERR_INTERNAL"');
      expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
      expect(text).not.toContain('upstream');
      const metrics = await (await fetch(s.url.replace('/v1', '/metrics'))).text();
      expect(metrics).toMatch(/toolproof_internal_errors_total\{model="m"\} 1/);
      expect(metrics).not.toMatch(/toolproof_upstream_errors_total\{[^}]*kind="mid_stream"/);
    } finally {
      await s.close();
    }
  });
});
