/**
 * A client's tool schema runs on the model's arguments (corrective-retry's call checks, a
 * forced final_answer's schema), on the event loop every stream shares. The compile estimate
 * (validator-cache.ts) bounded a schema's code; nothing bounded how often that code ran, nor
 * what ajv copied while it ran:
 * - a `$ref` DAG (`d0 = anyOf[d1, d1]`, ... 20 definitions, 1.3 KB) applied its last definition
 *   2^20 times to `{"x":"a"}`: 2.7 s, doubling per definition;
 * - an `enum` of 4,000 values as the `items` of 100,000 strings: 2.8 s;
 * - ajv copies every error gathered so far at each failing call (allErrors' `concat`): 2,000
 *   failing items of a recursive schema 61 ms, 8,000 2.3 s;
 * - ajv inlined a referenced definition at every `$ref`: 160 refs to a 40-property definition
 *   (6 KB, estimated ~50 ms) compiled 6,400 property checks in 2 s.
 * Now the generated code counts its steps (policies/kit/validation/step-meter.ts), paid from the
 * request's compile budget, and a `$ref` is a call: past what a validation may take the call
 * goes unchecked and says so, as a schema too costly to compile does.
 */
import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../protocol/openai.js';
import { validateArguments } from '../../policies/kit/validation/validate-arguments.js';
import { cpuBound, healthLatencyDuring } from '../hardening/loop-probe.js';
import { cpuMsOf, measureScaling, withinBudget } from '../support/cost-scaling.js';
import { proxyInFrontOfChat } from '../support/fake-upstream.js';

/** `d0 = anyOf[d1, d1]`, ..., `dk = leaf`: the leaf reached 2^k ways. */
function refDag(k: number, leaf: JsonObject = { type: 'number' }): JsonObject {
  const defs: JsonObject = {};
  for (let i = 0; i < k; i++)
    defs[`d${i}`] = { anyOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
  defs[`d${k}`] = leaf;
  return { type: 'object', properties: { x: { $ref: '#/$defs/d0' } }, $defs: defs };
}

describe('one call checked against a hostile schema', () => {
  it('a $ref DAG of 20 anyOf definitions on {"x":"a"}: stopped and said so (was 2.7 s)', () => {
    const schema = refDag(20);
    validateArguments(refDag(3), { x: 'a' }); // warm
    let result: ReturnType<typeof validateArguments> | undefined;
    const t = cpuMsOf(() => {
      result = validateArguments(schema, { x: 'a' });
    });
    expect(result).toMatchObject({ valid: true, unenforcedBy: 'cost' });
    expect(result?.schemaError).toContain('steps');
    expect(t, `${t.toFixed(0)} ms CPU`).toBeLessThan(cpuBound(t, (f) => 400 * f));
    // A DAG that fits is still checked.
    expect(validateArguments(refDag(8), { x: 'a' }).valid).toBe(false);
    expect(validateArguments(refDag(8), { x: 1 }).valid).toBe(true);
  });

  it('an enum of 4,000 values as the items of 100,000 strings: stopped (was 2.8 s)', () => {
    const enumSchema = (n: number): JsonObject => ({
      type: 'object',
      properties: { a: { type: 'array', items: { enum: Array.from({ length: n }, (_, i) => `v${i}`) } } },
    });
    const args = { a: Array.from({ length: 100_000 }, () => 'zz') };
    let result: ReturnType<typeof validateArguments> | undefined;
    const t = cpuMsOf(() => {
      result = validateArguments(enumSchema(4000), args);
    });
    expect(result?.unenforcedBy).toBe('cost');
    expect(t, `${t.toFixed(0)} ms CPU`).toBeLessThan(cpuBound(t, (f) => 400 * f));
    expect(validateArguments(enumSchema(4000), { a: ['v1', 'zz'] }).issues[0]?.path).toBe('/a/1');
  });

  it('failing items of a recursive $ref schema: x4 items cost about x4 (was x37: every error copied per item)', () => {
    const schema: JsonObject = {
      type: 'object',
      properties: { a: { type: 'array', items: { $ref: '#/$defs/n' } } },
      $defs: { n: { anyOf: [{ type: 'number' }, { type: 'array', items: { $ref: '#/$defs/n' } }] } },
    };
    const items = (n: number) => ({ a: Array.from({ length: n }, () => 'x') });
    const r = validateArguments(schema, items(8000));
    expect(r.valid).toBe(false);
    expect(r.issues.at(-1)?.message).toContain('more problems');
    const s = measureScaling(items, (x) => validateArguments(schema, x), { from: 500, max: 2000 });
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });

  it('n refs to a definition of n properties: x4 the schema compiles in about x4 (inlined at every ref: x16)', () => {
    let fresh = 0;
    // A distinct schema each run (the description), so each run compiles.
    const refs = (n: number): JsonObject => {
      const props: JsonObject = {};
      for (let i = 0; i < n; i++) props[`p${i}`] = { type: 'string', maxLength: 5 };
      const properties: JsonObject = {};
      for (let j = 0; j < n; j++) properties[`r${j}`] = { $ref: '#/$defs/big' };
      return {
        type: 'object',
        description: `run ${fresh++}`,
        properties,
        $defs: { big: { type: 'object', properties: props } },
      };
    };
    const args = { r0: { p0: 'too long' } };
    const first = validateArguments(refs(80), args);
    expect(first.unenforcedBy).toBeUndefined(); // compiled (under the estimate's limit) and checked
    expect(first.issues[0]?.path).toBe('/r0/p0');
    // Size n: n refs to n properties, built in the run (a fresh schema compiles; the same one
    // would come from the cache). Fixed at 20 and 80: past ~80 the estimate refuses to compile.
    const s = measureScaling(
      (n) => n,
      (n) => validateArguments(refs(n), args),
      { from: 20, max: 20 },
    );
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});

describe('the metered code reads what ajv writes', () => {
  it('property names that look like code (quotes, brackets, `for(`, `vErrors.concat(`) are still checked', () => {
    const names = [
      '"',
      '\\',
      'for(',
      '}',
      '{',
      ')',
      '/*',
      '\u2028',
      '`',
      'return function x(){',
      'vErrors.concat(',
      '\\"){for(;;){',
    ];
    const properties: JsonObject = {};
    for (const n of names) properties[n] = { type: 'integer', enum: [1, 2], description: n };
    const schema: JsonObject = { type: 'object', properties, required: names };
    const good = validateArguments(schema, Object.fromEntries(names.map((n) => [n, 1])));
    expect(good).toEqual({ valid: true, issues: [] });
    const bad = validateArguments(schema, Object.fromEntries(names.map((n) => [n, 'x'])));
    expect(bad.valid).toBe(false);
    expect(bad.schemaError).toBeUndefined();
    expect(bad.issues.length).toBeGreaterThanOrEqual(names.length);
  });
});

describe('through the server: eight calls of a tool whose schema is a $ref DAG', () => {
  const dagTool = {
    type: 'function',
    function: { name: 'dag', description: 'hostile', parameters: refDag(18) },
  };
  const calls = Array.from({ length: 8 }, (_, i) => ({
    id: `call_${i}`,
    type: 'function',
    function: { name: 'dag', arguments: '{"x":"a"}' },
  }));
  const pair = proxyInFrontOfChat((_body, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        id: 'chatcmpl-dag',
        object: 'chat.completion',
        created: 1,
        model: 'm1',
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: null, tool_calls: calls },
            finish_reason: 'tool_calls',
          },
        ],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      }),
    );
  });

  it('are answered without holding the loop (the request pays for its checks; was ~0.8 s a call)', async () => {
    const request = fetch(`${pair.proxy.origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm1', messages: [{ role: 'user', content: 'hi' }], tools: [dagTool] }),
    }).then(async (res) => ({ status: res.status, body: (await res.json()) as Record<string, unknown> }));
    const m = await healthLatencyDuring(pair.proxy.origin, request);
    expect(m.value.status).toBe(200);
    const choice = (m.value.body.choices as Array<{ message: { tool_calls?: unknown[] } }>)[0];
    expect(choice?.message.tool_calls).toHaveLength(8);
    expect(m.cpuMs, `loop thread ${m.cpuMs.toFixed(0)} ms CPU between two turns`).toBeLessThan(
      cpuBound(m.cpuMs, (f) => 400 * f),
    );
  }, 60_000);
});
