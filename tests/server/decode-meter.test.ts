/**
 * server/decode-meter.ts: the tokens an upstream response generated, from its stream's events and
 * its reported usage, however its bytes are split; bounded CPU and memory (x1 vs x4).
 */
import { describe, expect, it } from 'vitest';
import { DecodeMeter, DecodePace, DecodePaces } from '../../server/decode-meter.js';
import { measureScaling, prng, withinBudget } from '../support/cost-scaling.js';

/** Feeds `body` in pieces of seeded random sizes (1 to `most` bytes); the meter's total. */
function meter(body: string, sse: boolean, seed = 1, most = 3000): number {
  const bytes = Buffer.from(body);
  const rand = prng(seed);
  const m = new DecodeMeter(sse);
  for (let i = 0; i < bytes.length; ) {
    const n = 1 + Math.floor(rand() * most);
    m.push(bytes.subarray(i, i + n));
    i += n;
  }
  return m.total();
}

const chunk = (text: string) =>
  `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: text } }] })}\n\n`;

/** vLLM's JSON answer (usage last); llama-server's puts its timings after the usage. */
const whole = (tokens: number, after = '') =>
  JSON.stringify({
    id: 'x',
    choices: [{ index: 0, message: { role: 'assistant', content: 'word '.repeat(tokens) } }],
    usage: { prompt_tokens: 12, completion_tokens: tokens, total_tokens: 12 + tokens },
  }).replace(/}$/, `${after}}`);

describe('DecodeMeter', () => {
  it("reads a JSON answer's completion_tokens, whatever follows it (llama-server's timings)", () => {
    expect(meter(whole(1234), false)).toBe(1234);
    const timings = `,"timings":{"prompt_n":12,"predicted_n":77,${'"x":1,'.repeat(30)}"predicted_ms":3.5}`;
    for (const seed of [1, 2, 3]) expect(meter(whole(77, timings), false, seed)).toBe(77);
  });

  it("reads the usage wherever it stands: vLLM's prompt_logprobs after it (the client asks for them)", () => {
    // vLLM's ChatCompletionResponse: usage, then prompt_logprobs (one map a prompt token).
    const promptLogprobs = `,"prompt_logprobs":[null,${Array.from(
      { length: 400 },
      (_, t) => `{"${t}":{"logprob":-0.5,"rank":1,"decoded_token":"\\"completion_tokens\\": 1"}}`,
    ).join(',')}]`;
    expect(promptLogprobs.length).toBeGreaterThan(20_000);
    for (const [seed, most] of [
      [1, 3000],
      [2, 40],
      [3, 7],
      [4, 1],
    ] as const)
      expect(meter(whole(1234, promptLogprobs), false, seed, most)).toBe(1234);
  });

  it('a count cut anywhere between reads is read whole; the largest count wins', () => {
    const body = '{"usage":{"prompt_tokens":5,"completion_tokens" :\n 987654,"total_tokens":987659}}';
    for (let cut = 1; cut < body.length; cut++) {
      const m = new DecodeMeter(false);
      m.push(Buffer.from(body.slice(0, cut)));
      m.push(Buffer.from(body.slice(cut)));
      expect(m.total(), `cut at ${cut}`).toBe(987654);
    }
    // Anthropic's message_start says output_tokens 1, its message_delta the total.
    const messages =
      'event: message_start\ndata: {"message":{"usage":{"input_tokens":9,"output_tokens":1}}}\n\n' +
      'event: message_delta\ndata: {"delta":{},"usage":{"output_tokens":612}}\n\n';
    for (const most of [1, 5, 3000]) expect(meter(messages, true, 1, most)).toBe(612);
    // A count still in its digits when the body ends is read.
    expect(meter('{"usage":{"completion_tokens":42', false, 1, 1)).toBe(42);
    // No count where the key is no key: no colon, or no digits after it.
    expect(meter('{"a":["completion_tokens", 5]}', false)).toBe(0);
    expect(meter('{"completion_tokens": "5"}', false)).toBe(0);
  });

  it('any split of a body reads as the body read whole (events, keys and counts cut anywhere)', () => {
    const rand = prng(7);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)]!;
    const pieces = [
      'data: {"x":1}\n\n',
      '"completion_tokens"',
      '"output_tokens"',
      ':',
      ' ',
      '\n',
      '"',
      '_tokens"',
      'data:',
      'dat',
      '12',
      '987654321',
      ',',
      '}',
      'x',
    ];
    for (let body = 0; body < 200; body++) {
      const sse = rand() < 0.5;
      const text = Array.from({ length: 5 + Math.floor(rand() * 60) }, () => pick(pieces)).join('');
      const whole = new DecodeMeter(sse);
      whole.push(Buffer.from(text));
      const expected = whole.total();
      for (const most of [1, 2, 5, 13])
        expect(
          meter(text, sse, body * 31 + most, most),
          `${JSON.stringify(text)} in pieces of 1-${most}`,
        ).toBe(expected);
    }
  });

  it("reads Messages' and Responses' output_tokens, not its details' fields", () => {
    const msg = JSON.stringify({
      type: 'message',
      content: [{ type: 'text', text: 'hi' }],
      usage: { input_tokens: 40, output_tokens: 321 },
    });
    expect(meter(msg, false)).toBe(321);
    const responses = JSON.stringify({
      object: 'response',
      usage: { input_tokens: 9, output_tokens: 55, output_tokens_details: { reasoning_tokens: 999 } },
      metadata: {},
    });
    expect(meter(responses, false)).toBe(55);
  });

  it("counts a stream's events, or its usage chunk when that says more (n choices)", () => {
    const events = Array.from({ length: 500 }, (_, i) => chunk(`w${i} `)).join('');
    for (const seed of [1, 2, 3]) expect(meter(`${events}data: [DONE]\n\n`, true, seed)).toBe(501);
    // One byte at a time: every event's `data:` cut between reads.
    const bytewise = new DecodeMeter(true);
    for (const b of Buffer.from(events)) bytewise.push(Buffer.of(b));
    expect(bytewise.total()).toBe(500);
    // Short reads: an event held whole in the bytes kept between reads counts once.
    for (const most of [3, 7, 19, 40]) expect(meter(events, true, most, most)).toBe(500);
    const usage = `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 4000 } })}\n\n`;
    expect(meter(`${events}${usage}data: [DONE]\n\n`, true)).toBe(4000);
  });

  it('a quoted pattern inside generated text is no count', () => {
    const text = 'the field "completion_tokens": 99999 and "output_tokens": 88888';
    const body = JSON.stringify({
      choices: [{ message: { content: text } }],
      usage: { completion_tokens: 7 },
    });
    expect(meter(body, false)).toBe(7);
    expect(meter(JSON.stringify({ choices: [{ message: { content: text } }] }), false)).toBe(0);
    // Not SSE: `data:` in a JSON answer is no event.
    expect(meter(JSON.stringify({ content: 'data: data: data:' }), false)).toBe(0);
  });

  it("DecodePace: the tokens a slot's time makes, learnt from answers of 64 tokens or more", () => {
    const pace = new DecodePace();
    expect(pace.tokensIn(5_000)).toBe(0);
    pace.learn(1_000, 10); // too short to teach
    expect(pace.tokensIn(5_000)).toBe(0);
    pace.learn(1_000, 500); // 2 ms a token
    expect(pace.tokensIn(5_000)).toBe(2_500);
    expect(pace.tokensIn(-1)).toBe(0);
    pace.learn(1e-9, 1e9);
    expect(pace.tokensIn(1e12)).toBeLessThanOrEqual(1 << 24);
  });

  it("DecodePaces: an owner is charged by its own pace, not by another's n: 16 answers", () => {
    const paces = new DecodePaces();
    // Another key's n: 16 answers: 16,000 tokens a second.
    for (let i = 0; i < 20; i++) paces.of('key many').learn(1_000, 16_000);
    // An agent's own answers: 1,000 tokens a second; it leaves a request after 10 s on the slot.
    paces.of('key agent').learn(1_000, 1_000);
    expect(paces.of('key agent').tokensIn(10_000)).toBe(10_000);
    // An owner that taught none is charged by the upstream's pace (every owner's answers).
    expect(paces.of('key new').tokensIn(10_000)).toBeGreaterThan(10_000);
    expect(paces.of(undefined).tokensIn(10_000)).toBeGreaterThan(10_000);
    // Owners held are bounded (the least recently used go).
    paces.of('address 0').learn(1_000, 1_000);
    for (let i = 1; i < 5_000; i++) paces.of(`address ${i}`).learn(1_000, 64);
    expect(paces.of('address 4999').tokensIn(1_000)).toBe(64);
    // address 0's own pace went: charged by the upstream's (now about 64 a second).
    expect(paces.of('address 0').tokensIn(1_000)).toBeLessThan(100);
  });

  it('a reported count is bounded', () => {
    expect(meter('{"usage":{"completion_tokens":999999999999}}', false)).toBeLessThanOrEqual(1 << 24);
  });

  it('costs linear CPU and constant memory in the body (x1 vs x4)', () => {
    const s = measureScaling(
      (n) => Buffer.from(Array.from({ length: n }, (_, i) => chunk(`w${i} `)).join('')),
      (body) => {
        const m = new DecodeMeter(true);
        for (let i = 0; i < body.length; i += 1500) m.push(body.subarray(i, i + 1500));
        return m.total();
      },
      { from: 64, max: 1 << 16 },
    );
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });

  it("costs linear CPU and constant memory in a body made of usage keys (a hostile upstream's; x1 vs x4)", () => {
    const s = measureScaling(
      (n) => Buffer.from(`{"x":[${'{"output_tokens": 7,"completion_tokens" :12},'.repeat(n)}0]}`),
      (body) => {
        const m = new DecodeMeter(true);
        for (let i = 0; i < body.length; i += 11) m.push(body.subarray(i, i + 11));
        return m.total();
      },
      { from: 64, max: 1 << 15 },
    );
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});
