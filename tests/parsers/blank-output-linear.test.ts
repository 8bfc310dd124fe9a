/**
 * Issue 8 (A1): model output made of blank lines streamed one token at a time used to cost
 * quadratic time (40k "\n\n" deltas: 8 s), because the leading-whitespace checks in the think
 * splitter and the scanner re-read the whole concatenated buffer on every push.
 */
import { describe, expect, it } from 'vitest';
import { processCpuMs } from '../hardening/loop-probe.js';
import { createRecoveryStream } from '../../parsers/recover.js';
import { options, toolsOf } from './engine-helpers.js';

const tools = toolsOf({ name: 'get_weather' });

function feed(
  first: string,
  token: string,
  n: number,
  startsInReasoning = false,
): { ms: number; text: string } {
  const s = createRecoveryStream(options(tools, { startsInReasoning }));
  const t0 = processCpuMs();
  let text = '';
  for (const e of s.push({ content: first })) if (e.type === 'content') text += e.text;
  for (let i = 0; i < n; i++)
    for (const e of s.push({ content: token })) if (e.type === 'content') text += e.text;
  for (const e of s.finish()) if (e.type === 'content') text += e.text;
  return { ms: processCpuMs() - t0, text };
}

describe('blank output streamed token by token is linear', () => {
  // Generous bound for a loaded 2-core box: this took 8-40 s before the fix, ~0.1 s after.
  it('80k blank-line deltas before anything else finish in well under 3 s', () => {
    const r = feed('', '\n\n', 80_000);
    expect(r.ms).toBeLessThan(3000);
    // whitespace-only content is null (nothing emitted)
    expect(r.text).toBe('');
  });

  it('blank lines then text keep every byte', () => {
    const s = createRecoveryStream(options(tools));
    const t0 = processCpuMs();
    let text = '';
    for (let i = 0; i < 80_000; i++)
      for (const e of s.push({ content: '\n\n' })) if (e.type === 'content') text += e.text;
    for (const e of [...s.push({ content: 'Hello' }), ...s.finish()])
      if (e.type === 'content') text += e.text;
    expect(processCpuMs() - t0).toBeLessThan(3000);
    expect(text).toBe(`${'\n\n'.repeat(80_000)}Hello`);
  });

  it('blank lines after prose stay linear too', () => {
    const r = feed('Hello', '\n\n', 80_000);
    expect(r.ms).toBeLessThan(3000);
    expect(r.text).toBe(`Hello${'\n\n'.repeat(80_000)}`);
  });
});
