import { describe, expect, it } from 'vitest';
import { cutToolResult } from '../../policies/tool-result-cap/cut.js';
import { toolResultCapPolicy } from '../../policies/tool-result-cap/index.js';
import { ctxWith } from './helpers.js';

const log = (n: number) => Array.from({ length: n }, (_, i) => `line ${i} ${'x'.repeat(40)}`).join('\n');

describe('tool-result-cap', () => {
  it('keeps a result that fits, and cuts a long one to head and tail with a marker', () => {
    expect(cutToolResult('short', 100)).toBe('short');
    const text = log(50_000);
    const cut = cutToolResult(text, 1000);
    expect(cut.length).toBeLessThan(3000 + 400);
    expect(cut.startsWith('line 0 ')).toBe(true);
    expect(cut.endsWith(`line 49999 ${'x'.repeat(40)}`)).toBe(true);
    expect(cut).toMatch(
      /\[\.\.\. toolproof left out \d+ of this tool result's \d+ characters \(\d+ lines\) to fit the model's context window; re-run with a narrower command/,
    );
    // From the result's own characters: the same every time.
    expect(cutToolResult(text, 1000)).toBe(cut);
  });

  it('cuts tool messages only, and costs about linear time (x4 input, at most ~x4 time)', () => {
    const big = log(20_000);
    const req = {
      model: 'm',
      messages: [
        { role: 'user', content: big },
        { role: 'tool', tool_call_id: 'c', content: big },
      ],
    };
    const d = toolResultCapPolicy.onRequest!(req, ctxWith({}, { maxToolResultTokens: 500 }), req);
    if (d.action !== 'continue') throw new Error('rejected');
    expect(d.request.messages[0]!.content).toBe(big);
    expect(String(d.request.messages[1]!.content).length).toBeLessThan(2000);
    expect(d.effects).toEqual([{ policy: 'tool-result-cap', kind: 'tool-result-cut', count: 1 }]);
    const time = (t: string) => {
      const s = performance.now();
      for (let i = 0; i < 20; i++) cutToolResult(t, 500);
      return performance.now() - s;
    };
    const one = log(100_000);
    const four = log(400_000);
    time(one);
    expect(time(four)).toBeLessThan(time(one) * 8 + 20);
  });
});
