/**
 * A parameter's schema is read for each value of each call the model writes (XML-ish formats
 * write every value as text, typed by the schema: parsers/kit/schema-values.ts). The types an
 * `anyOf` lists were gathered, and each tried, again for every call: a tool whose parameter is an
 * `anyOf` of n alternatives times a model output of m calls cost n x m (5,000 x 250: 497 ms of
 * CPU, 20,000 x 1,000: 11.4 s, x23 for x4 each, the engine alone). The same for a `type` list
 * and the alternative a nested value is typed by. Now each is read
 * once per schema object and each type kept once: 35 vs 184 ms.
 *
 * Through the real server: the upstream answers with m Qwen3-Coder calls (as text: leak
 * recovery reads them) to a request declaring a tool of n alternatives; m and n scale together.
 */
import { describe, expect, it } from 'vitest';
import { measureScalingAsync, withinBudget } from '../support/cost-scaling.js';
import { proxyInFrontOf, textCompletion } from '../support/harness.js';

const call = (value: string) =>
  `<tool_call>\n<function=t>\n<parameter=p>\n${value}\n</parameter>\n</function>\n</tool_call>\n`;

// The upstream answers with as many calls as the user message asks for, a number each or (for
// `nested`) an object whose one field is a number written as text.
const pair = proxyInFrontOf((req, res) => {
  const body = JSON.parse(req.body.toString()) as { messages: { content: string }[] };
  const [calls, kind] = body.messages.at(-1)!.content.split(' ');
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(textCompletion(call(kind === 'nested' ? '{"a": "3"}' : '7').repeat(Number(calls))));
});

type Kind = 'anyOf' | 'type' | 'nested';
const numbers = (n: number) => Array.from({ length: n }, () => ({ type: 'number' }));

/** n alternatives in the parameter's anyOf (or n types in its list), n / 4 calls. */
const body = (n: number, kind: Kind) => {
  const p =
    kind === 'anyOf'
      ? { anyOf: numbers(n) }
      : kind === 'type'
        ? { type: Array.from({ length: n }, () => 'number') }
        : { anyOf: [...numbers(n), { type: 'object', properties: { a: { type: 'integer' } } }] };
  const parameters = { type: 'object', properties: { p } };
  return JSON.stringify({
    model: 'm1',
    messages: [{ role: 'user', content: `${Math.max(1, n / 4)} ${kind}` }],
    tools: [{ type: 'function', function: { name: 't', parameters } }],
  });
};

const post = async (text: string) => {
  const res = await fetch(`${pair.proxy.origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: text,
  });
  return {
    status: res.status,
    json: (await res.json()) as { choices: { message: { tool_calls?: unknown[] } }[] },
  };
};

describe('a parameter schema read once per schema, not once per call', () => {
  it('the calls are still read, their values typed as before', async () => {
    const r = await post(body(8, 'anyOf'));
    expect(r.status).toBe(200);
    const calls = r.json.choices[0]!.message.tool_calls as { function: { arguments: string } }[];
    expect(calls).toHaveLength(2);
    // typed by the schema: a number
    expect(JSON.parse(calls[0]!.function.arguments)).toEqual({ p: 7 });
    // the object alternative types the nested text
    const q = await post(body(8, 'nested'));
    const nested = q.json.choices[0]!.message.tool_calls as { function: { arguments: string } }[];
    expect(nested.map((c) => JSON.parse(c.function.arguments))).toEqual([{ p: { a: 3 } }, { p: { a: 3 } }]);
  });

  for (const kind of ['anyOf', 'type', 'nested'] as const) {
    it(`x4 the ${kind} list and x4 the calls cost about x4 of the request's CPU, not x16`, async () => {
      const s = await measureScalingAsync(
        (n) => body(n, kind),
        async (text) => {
          const r = await post(text);
          if (r.status !== 200) throw new Error(`status ${r.status}`);
        },
        { from: 2_000, max: 2_000 },
      );
      expect(withinBudget(s, 20), JSON.stringify(s)).toEqual({ time: true, memory: true });
    });
  }
});
