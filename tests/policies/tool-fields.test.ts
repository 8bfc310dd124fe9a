import { describe, expect, it } from 'vitest';
import { toolFieldsPolicy, withoutToolFields } from '../../policies/tool-fields/index.js';
import { ctxWith, request, runNonStream, completion, weatherTool } from './helpers.js';

const run = (req: ReturnType<typeof request>) => {
  const d = toolFieldsPolicy.onRequest!(req, ctxWith(), req);
  if (d.action !== 'continue') throw new Error('rejected');
  return d;
};

describe('tool-fields', () => {
  it('drops tool_choice, parallel_tool_calls and an empty tools array from a request without tools', () => {
    const req = request({ tools: [], tool_choice: 'required', parallel_tool_calls: false, temperature: 0 });
    const d = run(req);
    expect(d.request).toEqual({ model: 'm', messages: req.messages, temperature: 0 });
    expect(d.effects).toEqual([
      {
        policy: 'tool-fields',
        kind: 'dropped-tool-fields',
        count: 1,
        detail: { fields: ['tools', 'tool_choice', 'parallel_tool_calls'] },
      },
    ]);
    expect(req.tool_choice).toBe('required'); // never mutated
  });

  it('leaves a request with tools, or with no tool-only field, as it is (the same object)', () => {
    const withTools = request({ tools: [weatherTool], tool_choice: 'auto', parallel_tool_calls: true });
    expect(run(withTools).request).toBe(withTools);
    const plain = request({ temperature: 1 });
    expect(run(plain).request).toBe(plain);
    expect(withoutToolFields(plain).fields).toEqual([]);
  });

  it('through the whole table: a compaction turn is not forced and goes without tool_choice', () => {
    const original = request({ tool_choice: 'auto' });
    const out = runNonStream(completion({ content: 'A summary.' }), original, ctxWith());
    expect(out.sent.tool_choice).toBeUndefined();
    expect(out.sent.tools).toBeUndefined();
    expect(out.effects.some((e) => e.kind === 'forced')).toBe(false);
    expect(out.response?.choices[0]?.message.content).toBe('A summary.');
  });

  it('the same bytes on every turn', () => {
    const req = request({ tool_choice: 'none' });
    expect(JSON.stringify(run(req).request)).toBe(JSON.stringify(run(req).request));
  });
});
