/**
 * A tool parameter typed by a `$ref` (Pydantic's nested models) is resolved when a call's value
 * is typed or checked (parsers/kit/schema-values.ts: paramSchema, fitsSchema), once per call and
 * key: the pointer was split, unescaped and walked again every time, so a pointer of many
 * segments times a model output of many calls of that tool cost the product of the schema's size
 * and the output's (x4 each: 152 ms -> 7.0 s of CPU). Now each parameter schema's pointer is
 * followed once (a WeakMap on the schema object, as its enum's set already is).
 */
import { describe, expect, it } from 'vitest';
import { recoverMessage } from '../../parsers/recover.js';
import { fitsSchema, paramSchema } from '../../parsers/kit/schema-values.js';
import type { DeclaredTool } from '../../parsers/types.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';

/** A tool whose one parameter points `segments` segments deep (`#/$defs/x/x/.../int`). */
function tool(segments: number): DeclaredTool {
  return {
    name: 't',
    parameters: {
      type: 'object',
      properties: { p: { $ref: `#/$defs/${'x/'.repeat(segments)}int` } },
      $defs: { int: { type: 'integer' } },
    },
  } as DeclaredTool;
}

describe('a parameter typed by a long $ref pointer', () => {
  it('still types the value by what the pointer names', () => {
    const t = tool(0);
    expect(paramSchema(t, 'p')).toEqual({ type: 'integer' });
    expect(fitsSchema({ p: 1 }, t)).toBe(true);
    expect(fitsSchema({ p: 'x' }, t)).toBe(false);
    expect(paramSchema(tool(3), 'p')).toHaveProperty('$ref'); // names nothing: stays as it is
  });

  it('x4 the pointer and x4 the calls cost about x4, not x16 (Qwen3-Coder calls through the engine)', () => {
    // Size n: n calls of a tool whose pointer has 200n segments. A fresh tool each run, as each
    // request parses its own: its pointer is followed anew.
    const call = '<tool_call>\n<function=t>\n<parameter=p>\n7\n</parameter>\n</function>\n</tool_call>\n';
    const s = measureScaling(
      (n) => ({ text: call.repeat(n), segments: 200 * n, calls: n }),
      ({ text, segments, calls }) => {
        const opts = { tools: new Map([['t', tool(segments)]]), newId: () => 'id' };
        const r = recoverMessage({ content: text, reasoning: null }, opts);
        if (r.calls.length !== calls) throw new Error(`read ${r.calls.length} calls`);
        return r;
      },
      { from: 64, max: 4096 },
    );
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});
