/**
 * The client's `stop` strings on a forced request (policies/force-tool-use/client-stop.ts): held
 * back from the upstream, where they would cut the call's JSON, and applied to the answer text,
 * streamed exactly as not, whatever the split.
 */
import { describe, expect, it } from 'vitest';
import type { ChatCompletionChunk, ChatCompletionRequest } from '../../protocol/openai.js';
import { cutAtStop, heldStops, StopCut } from '../../policies/force-tool-use/client-stop.js';
import { createFinalAnswerStreamHook } from '../../policies/force-tool-use/stream.js';
import { judge, measureScaling, prng } from '../support/cost-scaling.js';
import {
  assemble,
  call,
  chunk,
  completion,
  ctxWith,
  runNonStream,
  runStream,
  request,
  splitAt,
  weatherTool,
} from './helpers.js';

describe('heldStops', () => {
  it('a string or a list of strings; empty strings dropped; too many or too long: not held', () => {
    expect(heldStops(request({ stop: '```' }))).toEqual(['```']);
    expect(heldStops(request({ stop: ['a', '', 'b'] }))).toEqual(['a', 'b']);
    expect(heldStops(request({ stop: [''] }))).toBeUndefined();
    expect(heldStops(request({ stop: null }))).toBeUndefined();
    expect(heldStops(request({ stop: [1] }))).toBeUndefined();
    expect(heldStops(request({ stop: Array.from({ length: 17 }, (_, i) => `s${i}`) }))).toBeUndefined();
    expect(heldStops(request({ stop: ['x'.repeat(257)] }))).toBeUndefined();
  });
});

describe('StopCut against cutAtStop', () => {
  const cases: Array<[string, string[]]> = [
    ['Done. Run:\n```sh\nls\n```', ['```']],
    ['one\n\ntwo', ['\n\n']],
    ['hello world', ['hello world', 'wor']],
    ['abcabd', ['abd', 'cab']],
    ['no stop here', ['zz']],
    ['smile 🙂🙂 then END and more', ['END', '🙂🙂 t']],
    ['aaaa', ['aa', 'aaa']],
    ['', ['x']],
  ];
  it('every split gives the whole text cut, and the same string matched', () => {
    const rand = prng(7);
    for (const [text, stops] of cases) {
      const whole = cutAtStop(text, stops);
      for (let k = 0; k < 60; k++) {
        const cuts = Array.from({ length: Math.floor(rand() * 6) }, () => Math.floor(rand() * text.length));
        const cut = new StopCut(stops);
        let got = '';
        for (const piece of splitAt(text, cuts)) got += cut.push(piece);
        got += cut.end();
        expect(got, JSON.stringify({ text, stops, cuts })).toBe(whole ? whole.text : text);
        expect(cut.matched).toBe(whole?.matched);
      }
      // One character at a time: never half a surrogate pair in a piece.
      const cut = new StopCut(stops);
      for (const ch of text.split('')) {
        const out = cut.push(ch);
        if (out !== '') expect(/[\ud800-\udbff]$/.test(out), JSON.stringify(out)).toBe(false);
      }
    }
  });
});

const forced = (extra: Partial<ChatCompletionRequest> = {}) =>
  request({ tools: [weatherTool], stop: ['```'], ...extra });

/** A stream of one final_answer call whose arguments come `size` characters a chunk. */
function finalAnswerChunks(args: string, size: number, finish = 'tool_calls'): ChatCompletionChunk[] {
  const out = [
    chunk({
      tool_calls: [
        { index: 0, id: 'c1', type: 'function', function: { name: 'final_answer', arguments: '' } },
      ],
    }),
  ];
  for (let i = 0; i < args.length; i += size)
    out.push(chunk({ tool_calls: [{ index: 0, function: { arguments: args.slice(i, i + size) } }] }));
  out.push(chunk({}, finish));
  return out;
}

describe('force-tool-use with the client stop', () => {
  it('goes upstream without stop; the answer ends before the stop string, streamed as not', () => {
    const ctx = ctxWith();
    const args = JSON.stringify({ answer: 'Done. Run:\n```sh\nls\n```\nThen look.' });
    const whole = runNonStream(
      completion({ tool_calls: [call('c1', 'final_answer', args)] }, 'tool_calls'),
      forced(),
      ctx,
    );
    expect(whole.sent.stop).toBeUndefined();
    expect(whole.sent.tool_choice).toBe('required');
    const choice = whole.response!.choices[0]!;
    expect(choice.message.content).toBe('Done. Run:\n');
    expect(choice.finish_reason).toBe('stop');
    expect(choice.stop_reason).toBe('```');
    for (const size of [1, 2, 3, 7, 1000]) {
      const { out } = runStream(finalAnswerChunks(args, size), forced(), ctx);
      const got = assemble(out);
      expect(got, `size ${size}`).toMatchObject({ content: 'Done. Run:\n', finish: 'stop', calls: [] });
      expect(out.at(-1)?.choices[0]?.stop_reason).toBe('```');
    }
  });

  it('a stop string JSON escapes (a blank line) still ends the answer', () => {
    const args = JSON.stringify({ answer: 'First part.\n\nSecond part.' });
    const req = forced({ stop: ['\n\n'] });
    const whole = runNonStream(
      completion({ tool_calls: [call('c1', 'final_answer', args)] }),
      req,
      ctxWith(),
    );
    expect(whole.response!.choices[0]!.message.content).toBe('First part.');
    expect(assemble(runStream(finalAnswerChunks(args, 1), req, ctxWith()).out).content).toBe('First part.');
  });

  it('a real call is never cut; prose without final_answer is cut the same', () => {
    const writeArgs = JSON.stringify({ city: 'a```b' });
    const res = runNonStream(
      completion({ tool_calls: [call('c1', 'get_weather', writeArgs)] }, 'tool_calls'),
      forced(),
      ctxWith(),
    );
    expect(res.response!.choices[0]!.message.tool_calls?.[0]?.function.arguments).toBe(writeArgs);
    expect(res.response!.choices[0]!.finish_reason).toBe('tool_calls');
    const prose = runNonStream(completion({ content: 'see ```x```' }), forced(), ctxWith());
    expect(prose.response!.choices[0]!.message.content).toBe('see ');
    expect(prose.response!.choices[0]!.finish_reason).toBe('stop');
    const streamed = runStream(
      ['see `', '``x', '```'].map((c) => chunk({ content: c })).concat(chunk({}, 'stop')),
      forced(),
      ctxWith(),
    );
    expect(assemble(streamed.out)).toMatchObject({ content: 'see ', finish: 'stop' });
  });

  it('not forced (the client named its tool_choice): stop goes upstream as it came', () => {
    const res = runNonStream(
      completion({ tool_calls: [call('c1', 'get_weather', '{"city":"x"}')] }, 'tool_calls'),
      forced({ tool_choice: 'required' }),
      ctxWith(),
    );
    expect(res.sent.stop).toEqual(['```']);
  });

  it('budget: sixteen long stop strings over an answer a character a chunk cost linear time', () => {
    const stops = Array.from({ length: 16 }, (_, i) => `${'x'.repeat(255)}${i}`);
    const run = (n: number) => {
      const hook = createFinalAnswerStreamHook({
        policy: 'force-tool-use',
        finalAnswerName: 'final_answer',
        forced: true,
        toolChoiceSent: 'required',
        stop: stops,
      });
      let sent = 0;
      const first = chunk({
        tool_calls: [
          {
            index: 0,
            id: 'c',
            type: 'function',
            function: { name: 'final_answer', arguments: '{"answer":"' },
          },
        ],
      });
      hook.onChunk(first);
      for (let i = 0; i < n; i++)
        for (const c of hook.onChunk(chunk({ tool_calls: [{ index: 0, function: { arguments: 'x' } }] })))
          sent += c.choices[0]?.delta.content?.length ?? 0;
      hook.onChunk(chunk({ tool_calls: [{ index: 0, function: { arguments: '"}' } }] }, 'tool_calls'));
      return sent;
    };
    // Held back: the 255 characters that could begin a stop string (and the decoder's one).
    expect(run(1000)).toBe(1000 - 256);
    const measure = () => measureScaling((n) => n, run, { from: 2_000, max: 64_000 });
    let s = measure();
    if (!judge(s, 5).time || !judge(s, 5).memory) s = measure();
    expect(judge(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});
