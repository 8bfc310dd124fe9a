/**
 * Responses namespaces are flattened to chat names as `namespace__name` where two tools share a
 * name. A top-level tool may already be called that (`ns__f` beside namespace `ns` holding `f`,
 * and a top-level `f`): two functions went upstream as `ns__f`, a call was validated against one
 * and returned as the other. Each chat name now stands for one declaration.
 */
import { describe, expect, it } from 'vitest';
import { translateTools } from '../../protocol/responses/tools.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';
import { answerWithCall, proxyInFrontOf } from '../support/harness.js';

interface SentTool {
  function: { name: string; description?: string; parameters?: { required?: string[] } };
}

/** The upstream calls the tool whose description is `target` (the client's names stay unknown to it). */
let target = '';
const pair = proxyInFrontOf((req, res) => {
  const body = JSON.parse(req.body.toString()) as { tools: SentTool[] };
  const tool = body.tools.find((t) => t.function.description === target)!;
  const args = tool.function.parameters?.required?.includes('b') ? { b: 2 } : { a: 1 };
  answerWithCall(req, res, {
    id: 'call_1',
    type: 'function',
    function: { name: tool.function.name, arguments: JSON.stringify(args) },
  });
});

const fn = (name: string, description: string, field: 'a' | 'b') => ({
  type: 'function',
  name,
  description,
  parameters: {
    type: 'object',
    properties: { [field]: { type: 'integer' } },
    required: [field],
    additionalProperties: false,
  },
});

const tools = [
  fn('ns__f', 'top-level ns__f', 'a'),
  { type: 'namespace', name: 'ns', description: 'a namespace', tools: [fn('f', 'ns f', 'b')] },
  fn('f', 'top-level f', 'a'),
];

async function call(description: string, stream = false): Promise<Record<string, unknown>> {
  target = description;
  const res = await fetch(`${pair.proxy.origin}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm1', input: 'hi', tools, tool_choice: 'required', stream }),
  });
  expect(res.status).toBe(200);
  if (!stream) {
    const body = (await res.json()) as { output: Array<Record<string, unknown>> };
    return body.output.find((o) => o.type === 'function_call')!;
  }
  const text = await res.text();
  const done = [...text.matchAll(/^data: (.*)$/gm)]
    .map((m) => JSON.parse(m[1]!) as { type: string; item?: Record<string, unknown> })
    .find((e) => e.type === 'response.output_item.done' && e.item?.type === 'function_call');
  return done!.item!;
}

describe('Responses namespace names beside a top-level tool already named ns__f', () => {
  it('goes upstream as distinct names, deterministically', async () => {
    await call('ns f');
    const sent = JSON.parse(pair.upstream.requests.at(-1)!.body.toString()) as { tools: SentTool[] };
    const names = sent.tools.map((t) => t.function.name).filter((n) => n !== 'final_answer');
    expect(new Set(names).size).toBe(names.length);
    expect(names).toEqual(['ns__f', 'ns__f_2', 'f']);
  });

  for (const stream of [false, true]) {
    it(`returns each call as the tool it was (${stream ? 'streamed' : 'not streamed'})`, async () => {
      const nsCall = await call('ns f', stream);
      expect(nsCall).toMatchObject({ name: 'f', namespace: 'ns', arguments: '{"b":2}' });
      const topCall = await call('top-level ns__f', stream);
      expect(topCall).toMatchObject({ name: 'ns__f', arguments: '{"a":1}' });
      expect(topCall).not.toHaveProperty('namespace');
      const plain = await call('top-level f', stream);
      expect(plain).toMatchObject({ name: 'f', arguments: '{"a":1}' });
      expect(plain).not.toHaveProperty('namespace');
    });
  }
});

describe('namespace naming cost', () => {
  /** A namespace `ns` with `f` declared `dups` times, beside top-level f and ns__f, ns__f_2, ... */
  function hostile(n: number): unknown[] {
    const taken = Array.from({ length: n }, (_, i) => fn(i === 0 ? 'ns__f' : `ns__f_${i + 1}`, 't', 'a'));
    const dups = Array.from({ length: n }, () => fn('f', 'ns f', 'b'));
    return [...taken, { type: 'namespace', name: 'ns', tools: dups }, fn('f', 'top-level f', 'a')];
  }
  it('is linear: x4 the tools costs about x4, and the names stay unique', () => {
    const names = translateTools(hostile(50) as never).tools.map((t) => t.function.name);
    expect(names.filter((n) => n === 'ns__f_51').length).toBe(50); // each duplicate: one name
    expect(names.at(-1)).toBe('f');
    // 4,001 tools at x4: under the cap of declared tools (MAX_DECLARED_TOOLS, 4,096)
    // Quadratic (each duplicate searching past every taken name) would be x16: 4M lookups.
    const s = measureScaling(hostile, (tools) => translateTools(tools as never), { from: 125, max: 500 });
    expect(withinBudget(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});
