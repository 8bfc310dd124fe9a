/**
 * Logprobs ride with the text they describe (server/chat/logprobs-carrier.ts): a chunk's logprobs
 * wait in a queue while the stream hooks hold its text, and go out merged with the text when it
 * is let out. Held text is up to maxHeldBytes (1 MB by default) of output that opens like a call
 * (`{"…`), one queued logprobs object per token; the merge copied the growing array once per
 * object, the square of the tokens held: 32,000 one-token chunks of a held answer held the event
 * loop 19 s when it was released (8,000: ~0.3 s). The merge, x1 vs x4 held chunks, by CPU time.
 */
import { describe, expect, it } from 'vitest';
import { LogprobsCarrier } from '../../server/chat/logprobs-carrier.js';
import type { ChatCompletionChunk } from '../../protocol/openai.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';

const identity = { id: 'c1', model: 'm1', created: 1 };

function chunk(token: string): ChatCompletionChunk {
  return {
    ...identity,
    object: 'chat.completion.chunk',
    choices: [
      {
        index: 0,
        delta: { content: token },
        logprobs: { content: [{ token, logprob: -0.25, bytes: null, top_logprobs: [] }], refusal: null },
        finish_reason: null,
      },
    ],
  } as ChatCompletionChunk;
}

describe('logprobs of held text, merged when it is let out', () => {
  it('keeps every entry, in order', () => {
    const carrier = new LogprobsCarrier();
    for (let i = 0; i < 5; i++) carrier.take(chunk(`t${i}`));
    const [out] = carrier.end([], identity);
    const lp = out!.choices[0]!.logprobs as { content: Array<{ token: string }>; refusal: null };
    expect(lp.content.map((e) => e.token)).toEqual(['t0', 't1', 't2', 't3', 't4']);
    expect(lp.refusal).toBeNull();
  });

  it('costs about x4 for x4 chunks held (was the square: 5,000 -> 20,000 chunks, 86 ms -> 3.1 s)', () => {
    const held = (n: number) => Array.from({ length: n }, (_, i) => chunk(`w${i % 10} `));
    const s = measureScaling(
      held,
      (chunks) => {
        const carrier = new LogprobsCarrier();
        for (const c of chunks) carrier.take(c);
        return carrier.end([], identity);
      },
      // Fixed at 8,000 and 32,000 chunks: the copy per object (concat) read x8, within the
      // budget, where the default growth stopped (4,000), and x66 here
      { from: 8_000, max: 8_000 },
    );
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});
