/**
 * The stream's fast lane (server/chat/fast-lane.ts, policies/light-delta.ts) must be
 * exactly the full path: the same bytes to the client, the same end chunks, effects and retry,
 * for any stream. Each stream runs through the real policy chain twice, once parsing every
 * event (the full path) and once as the stream driver runs it (template, light deltas, spliced
 * answer frames), and the two are compared byte for byte.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ChatCompletionChunk, ChatCompletionRequest } from '../../protocol/openai.js';
import type { PolicyContext } from '../../policies/types.js';
import { argsOnly, createFastLane, learnArgsTemplate, matchArgs } from '../../server/chat/fast-lane.js';
import { createStreamChain } from '../../policies/composition.js';
import { ctxWith, prepare, request, weatherTool } from '../policies/helpers.js';

const frame = (c: ChatCompletionChunk): string => `data: ${JSON.stringify(c)}\n\n`;

function run(
  payloads: readonly string[],
  original: ChatCompletionRequest,
  ctx: PolicyContext,
  lane: boolean,
) {
  const { policies, sent, memos, effects, ctx: attemptCtx } = prepare(original, ctx);
  const chain = createStreamChain(policies, attemptCtx, memos, sent, original, effects);
  const fast = lane ? createFastLane(chain, frame) : null;
  let text = '';
  let taken = 0;
  const sink = {
    chunk: (c: ChatCompletionChunk) => {
      text += frame(c);
    },
    framed: (t: string) => {
      text += t;
    },
  };
  for (const p of payloads) {
    if (fast?.take(p, sink)) {
      taken++;
      continue;
    }
    const chunk = JSON.parse(p) as ChatCompletionChunk;
    for (const c of chain.push(chunk)) text += frame(c);
    fast?.learn(p, chunk);
  }
  const end = chain.end();
  return {
    text,
    end: end.chunks.map(frame).join(''),
    effects: JSON.stringify(end.effects),
    retry: JSON.stringify(end.retry ?? null),
    taken,
  };
}

// ---- streams as upstreams write them ----

type Style = 'openai' | 'llama';

function event(style: Style, choice: Record<string, unknown>, extra: Record<string, unknown> = {}): string {
  const chunk =
    style === 'openai'
      ? {
          id: 'chatcmpl-1',
          object: 'chat.completion.chunk',
          created: 7,
          model: 'm',
          choices: [choice],
          ...extra,
        }
      : {
          choices: [choice],
          created: 7,
          id: 'chatcmpl-1',
          model: 'm',
          system_fingerprint: 'b1-x',
          object: 'chat.completion.chunk',
          ...extra,
        };
  return JSON.stringify(chunk);
}

function choiceOf(
  delta: Record<string, unknown>,
  finish: string | null,
  logprobs: boolean,
): Record<string, unknown> {
  return logprobs
    ? { index: 0, delta, logprobs: null, finish_reason: finish }
    : { index: 0, delta, finish_reason: finish };
}

/** The JSON text of the final_answer arguments, cut at the given sizes (anywhere: inside escapes, between surrogates). */
function cut(text: string, sizes: readonly number[]): string[] {
  const out: string[] = [];
  let at = 0;
  for (const n of sizes) {
    if (at >= text.length) break;
    out.push(text.slice(at, at + n));
    at += n;
  }
  if (at < text.length) out.push(text.slice(at));
  return out;
}

const answerText = fc.constantFrom(
  'It is sunny.',
  'Ça va « bien ».\n\nTwo lines',
  'quote " backslash \\ tab \t end',
  'emoji 😀 and 𝄞 clef',
  ' leading spaces',
  '',
  'ctrl \u0001 and \u2028 sep',
  '{"answer": "nested"}',
);

/** Odd events spliced into the stream: each either takes the full path or must match exactly. */
const oddEvent = (style: Style, lp: boolean) =>
  fc.constantFrom<string>(
    event(style, choiceOf({ content: 'stray text ' }, null, lp)),
    event(style, choiceOf({}, null, lp)),
    event(style, choiceOf({ tool_calls: [{ index: 0, function: { arguments: '' } }] }, null, lp)),
    event(style, choiceOf({ tool_calls: [{ function: { arguments: ' ' }, index: 0 }] }, null, lp)),
    event(
      style,
      choiceOf({ tool_calls: [{ index: 0, function: { arguments: '' } }], content: 'x' }, null, lp),
    ),
    event(style, {
      index: 0,
      delta: { tool_calls: [{ index: 0, function: { arguments: '' } }] },
      logprobs: { content: [] },
      finish_reason: null,
    }),
    event(
      style,
      choiceOf(
        {
          tool_calls: [
            {
              index: 1,
              id: 'w1',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
            },
          ],
        },
        null,
        lp,
      ),
    ),
    event(style, choiceOf({ tool_calls: [{ index: 0, function: { arguments: '' } }] }, null, lp), {
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    }),
    event(style, choiceOf({ tool_calls: [{ index: 0, function: { arguments: '' } }] }, null, lp), {
      timings: { n: 1 },
    }),
    `{"id":"chatcmpl-2","object":"chat.completion.chunk","created":7,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":""}}]},"finish_reason":null}]}`,
    JSON.stringify({
      id: 'chatcmpl-1',
      object: 'chat.completion.chunk',
      created: 7,
      model: 'm',
      choices: [],
      usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
    }),
  );

const streamArb = fc
  .record({
    style: fc.constantFrom<Style>('openai', 'llama'),
    lp: fc.boolean(),
    answer: answerText,
    sizes: fc.array(fc.integer({ min: 1, max: 6 }), { maxLength: 60 }),
    headArgs: fc.boolean(),
    finishWithArgs: fc.boolean(),
    finish: fc.constantFrom('tool_calls', 'stop', 'length'),
    odd: fc.array(fc.tuple(fc.nat(), fc.nat({ max: 10 })), { maxLength: 4 }),
    escapeAscii: fc.boolean(),
    twoChoices: fc.boolean(),
    // A real call streams through the lane too (held for the judge, or passed on).
    name: fc.constantFrom('final_answer', 'final_answer', 'get_weather'),
  })
  .map((r) => {
    const args = JSON.stringify(r.name === 'final_answer' ? { answer: r.answer } : { city: r.answer });
    const pieces = cut(args, r.sizes);
    const head = r.headArgs ? (pieces.shift() ?? '') : '';
    const last = r.finishWithArgs ? (pieces.pop() ?? '') : '';
    const events: string[] = [
      event(
        r.style,
        choiceOf(
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              {
                index: 0,
                id: 'call_1',
                type: 'function',
                function: { name: r.name, arguments: head },
              },
            ],
          },
          null,
          r.lp,
        ),
      ),
    ];
    for (const p of pieces) {
      let e = event(
        r.style,
        choiceOf({ tool_calls: [{ index: 0, function: { arguments: p } }] }, null, r.lp),
      );
      // An upstream that escapes differently from JSON.stringify: never learned, may still match.
      if (r.escapeAscii)
        e = e.replace(/[^\x20-\x7e]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
      events.push(e);
    }
    events.push(
      event(
        r.style,
        choiceOf(
          last === '' ? {} : { tool_calls: [{ index: 0, function: { arguments: last } }] },
          r.finish,
          r.lp,
        ),
      ),
    );
    const odd = fc.sample(oddEvent(r.style, r.lp), { numRuns: r.odd.length, seed: r.odd.length });
    r.odd.forEach(([pos], i) => {
      events.splice(1 + (pos % events.length), 0, odd[i]!);
    });
    if (r.twoChoices) {
      // A second choice in the middle: that event takes the full path.
      const at = Math.floor(events.length / 2);
      const two = JSON.parse(events[at]!) as { choices: Record<string, unknown>[] };
      two.choices.push({ ...two.choices[0], index: 1 });
      events[at] = JSON.stringify(two);
    }
    return events;
  });

const ctxArb = fc.record({
  maxRetries: fc.constantFrom(0, 1),
  retriesUsed: fc.constantFrom(0, 1),
  parallel: fc.constantFrom(undefined, false),
  toolChoice: fc.constantFrom(undefined, 'required' as const),
});

describe('stream fast lane', () => {
  it('property: the same bytes, end chunks, effects and retry as the full path', () => {
    let taken = 0;
    let events = 0;
    fc.assert(
      fc.property(streamArb, ctxArb, (payloads, c) => {
        const original = request({
          tools: [weatherTool],
          ...(c.parallel === false ? { parallel_tool_calls: false } : {}),
          ...(c.toolChoice ? { tool_choice: c.toolChoice } : {}),
        });
        const ctx = ctxWith({ retriesUsed: c.retriesUsed }, { maxRetries: c.maxRetries });
        const slow = run(payloads, original, ctx, false);
        const fast = run(payloads, original, ctx, true);
        expect(fast.text).toBe(slow.text);
        expect(fast.end).toBe(slow.end);
        expect(fast.effects).toBe(slow.effects);
        expect(fast.retry).toBe(slow.retry);
        taken += fast.taken;
        events += payloads.length;
      }),
      { numRuns: 400, seed: 1201 },
    );
    // The lane is really exercised (most events of these streams are plain fragments).
    expect(taken / events).toBeGreaterThan(0.25);
  });

  /** The first event of a final_answer call: its id and name, no arguments yet. */
  const finalAnswerHead = (flag: boolean) =>
    event(
      'openai',
      choiceOf(
        {
          role: 'assistant',
          tool_calls: [
            { index: 0, id: 'c', type: 'function', function: { name: 'final_answer', arguments: '' } },
          ],
        },
        null,
        flag,
      ),
    );

  it('takes nearly every event of a long forced answer', () => {
    const pieces = cut(JSON.stringify({ answer: 'word '.repeat(200) }), Array(400).fill(3));
    const payloads = [
      finalAnswerHead(true),
      ...pieces.map((p) =>
        event('openai', choiceOf({ tool_calls: [{ index: 0, function: { arguments: p } }] }, null, true)),
      ),
      event('openai', choiceOf({}, 'tool_calls', true)),
    ];
    const original = request({ tools: [weatherTool] });
    const slow = run(payloads, original, ctxWith(), false);
    const fast = run(payloads, original, ctxWith(), true);
    expect(fast.text).toBe(slow.text);
    expect(fast.end).toBe(slow.end);
    expect(fast.taken).toBe(pieces.length - 1);
  });

  it('answer text spliced from the payload is the text JSON.stringify writes (raw surrogates, escapes)', () => {
    const head = finalAnswerHead(false);
    const args = (lit: string) =>
      event(
        'openai',
        choiceOf({ tool_calls: [{ index: 0, function: { arguments: 'ab' } }] }, null, false),
      ).replace('"ab"', lit);
    // Raw (unescaped) surrogates in the upstream's text, alone and paired, beside plain and escaped fragments.
    const lits = [
      '"{\\"answer\\": \\""',
      '"plain "',
      '"\ud83d"',
      '"\ude00 x"',
      '"x\ude00 y"',
      '"a\ud83d b"',
      '"😀"',
      '"a\\\\tb"',
      '"é "',
      '"\\"}"',
    ];
    const payloads = [head, ...lits.map(args), event('openai', choiceOf({}, 'tool_calls', false))];
    const original = request({ tools: [weatherTool] });
    const slow = run(payloads, original, ctxWith(), false);
    const fast = run(payloads, original, ctxWith(), true);
    expect(fast.text).toBe(slow.text);
    expect(fast.end).toBe(slow.end);
    expect(fast.taken).toBe(lits.length - 1);
  });

  it('a template matches only one JSON string literal in the fragment slot', () => {
    const p = event(
      'openai',
      choiceOf({ tool_calls: [{ index: 0, function: { arguments: 'ab' } }] }, null, false),
    );
    const t = learnArgsTemplate(p, argsOnly(JSON.parse(p))!)!;
    expect(t).not.toBeNull();
    const at = (lit: string) => p.replace('"ab"', lit);
    expect(matchArgs(t, at('"x\\"y"'))).toBe('x"y');
    expect(matchArgs(t, at('"\\ud83d"'))).toBe('\ud83d');
    expect(matchArgs(t, at('"é😀"'))).toBe('é😀');
    expect(matchArgs(t, at('""'))).toBe('');
    // Not one string literal: a smuggled key, a number, a raw control character, an unclosed string.
    expect(matchArgs(t, at('"a","name":"x"'))).toBeUndefined();
    expect(matchArgs(t, at('1'))).toBeUndefined();
    expect(matchArgs(t, at('"a\u0001"'))).toBeUndefined();
    expect(matchArgs(t, at('"a\\"'))).toBeUndefined();
    expect(matchArgs(t, p.replace('chatcmpl-1', 'chatcmpl-9'))).toBeUndefined();
  });

  it('learns no template when the delta has a twin elsewhere in the event', () => {
    // The split point is found by searching for the delta's text: a second copy of it (an
    // extension field, before or after the choices) leaves the event on the full path.
    const p = event(
      'openai',
      choiceOf({ tool_calls: [{ index: 0, function: { arguments: 'ab' } }] }, null, false),
    );
    const chunk = JSON.parse(p) as Record<string, unknown> & { choices: { delta: unknown }[] };
    const twin = { delta: { tool_calls: [{ index: 0, function: { arguments: 'ab' } }] } };
    const before = JSON.stringify({ x_echo: twin, ...chunk });
    const after = JSON.stringify({ ...chunk, x_echo: twin });
    expect(learnArgsTemplate(before, argsOnly(JSON.parse(before))!)).toBeNull();
    expect(learnArgsTemplate(after, argsOnly(JSON.parse(after))!)).toBeNull();
    // The twin with another fragment still shares the delta's opening: not learned either.
    const other = JSON.stringify({
      x_echo: { delta: { tool_calls: [{ index: 0, function: { arguments: 'zz' } }] } },
      ...chunk,
    });
    expect(learnArgsTemplate(other, argsOnly(JSON.parse(other))!)).toBeNull();
  });

  it('learns no template from text JSON.stringify would not write', () => {
    const p = event(
      'openai',
      choiceOf({ tool_calls: [{ index: 0, function: { arguments: 'é' } }] }, null, false),
    );
    const pretty = JSON.stringify(JSON.parse(p), null, 1);
    expect(learnArgsTemplate(pretty, argsOnly(JSON.parse(pretty))!)).toBeNull();
    const escaped = p.replace('é', '\\u00e9');
    expect(learnArgsTemplate(escaped, argsOnly(JSON.parse(escaped))!)).toBeNull();
    expect(
      argsOnly(JSON.parse(p.replace('"index":0,"function"', '"function"').replace('}}]}', '},"index":0}]}'))),
    ).toBeNull();
  });
});
