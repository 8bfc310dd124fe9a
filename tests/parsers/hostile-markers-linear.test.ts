/**
 * Issue 8 audit: inputs that could make the engine super-linear (many markers that never
 * match, many partial markers, long runs of `<`, `[` or `{`) stay linear in 1-char streaming.
 * Audit result: linear already (800k chars in ~0.5-1 s on the 2-core box); this guards it.
 * Generous bound: a quadratic regression on 400k chars takes minutes. The bounds are on this
 * process's CPU time, not the wall clock: a loaded box stretched a 1-char run of ~0.6 s of CPU
 * to 5.0 s of wall time and failed its 5 s bound (a full run at 70b243d, load ~10).
 */
import { describe, expect, it } from 'vitest';
import { createRecoveryStream } from '../../parsers/recover.js';
import { PARSERS } from '../../parsers/registry.js';
import { options, toolsOf } from './engine-helpers.js';

const tools = toolsOf({ name: 'f' });
const SIZE = 200_000;

/** CPU ms of this process (user + system) since `c0`. */
function cpuMs(c0: NodeJS.CpuUsage): number {
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000;
}

/** CPU ms of streaming `size` chars of `unit` repeated, `step` chars a push. */
function cost(unit: string, step: number, size = SIZE): number {
  const text = unit.repeat(Math.ceil(size / unit.length)).slice(0, size);
  const s = createRecoveryStream(options(tools));
  const c0 = process.cpuUsage();
  let out = '';
  for (let i = 0; i < text.length; i += step)
    for (const e of s.push({ content: text.slice(i, i + step) })) if (e.type === 'content') out += e.text;
  for (const e of s.finish()) if (e.type === 'content') out += e.text;
  // nothing is lost beyond control tokens a family removes
  expect(out.length).toBeLessThanOrEqual(text.length);
  return cpuMs(c0);
}

describe('hostile marker soup stays linear', () => {
  for (const unit of [
    '<',
    '[',
    '{',
    '<tool_call>',
    '<tool_cal',
    '<|python_tag|>',
    '[TOOL_CALLS]',
    '<｜tool▁calls▁begin｜',
  ]) {
    it(`${JSON.stringify(unit)} x ${SIZE} chars in 1-char chunks`, () => {
      expect(cost(unit, 1)).toBeLessThan(5000);
    });
  }

  it('every registered marker, repeated and truncated, in 16-char chunks', () => {
    const markers = [...new Set(PARSERS.flatMap((p) => p.spec.markers))];
    const c0 = process.cpuUsage();
    for (const m of markers) {
      cost(m, 16, 50_000);
      if (m.length > 2) cost(m.slice(0, -1), 16, 50_000);
    }
    // ~70 markers x 2 x 50k chars: about 2 s on the loaded box when linear
    expect(cpuMs(c0)).toBeLessThan(30_000);
  }, 120_000);
});
