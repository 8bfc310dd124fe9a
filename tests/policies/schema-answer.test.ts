/**
 * Answers in the client's JSON schema (policies/force-tool-use/schema-answer.ts): the decision
 * both paths share, what a bad or odd schema becomes, and what a big answer costs: a stream of
 * the answer in N fragments and its check cost about x4 for x4 the input (held whole, decided
 * once at the end).
 */
import { describe, expect, it } from 'vitest';
import { answerFormatOf } from '../../policies/kit/answer-format.js';
import {
  checkSchemaContent,
  decodeSchemaAnswer,
  SchemaAnswerDecoder,
} from '../../policies/force-tool-use/schema-answer.js';
import { createFinalAnswerStreamHook } from '../../policies/force-tool-use/stream.js';
import { judge, measureScaling } from '../support/cost-scaling.js';
import { chunk, request } from './helpers.js';

const schema = {
  type: 'object',
  properties: { items: { type: 'array', items: { type: 'string', maxLength: 40 } } },
  required: ['items'],
};
const format = answerFormatOf(
  request({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema } } }),
)!;

describe('answer format facts', () => {
  it('an object schema is the parameters; others wrapped; json_object any object; a non-object schema value is bad', () => {
    expect(format).toEqual({ kind: 'json_schema', parameters: schema, wrapped: false });
    const wrapped = answerFormatOf(
      request({
        response_format: { type: 'json_schema', json_schema: { name: 'n', schema: { type: 'number' } } },
      }),
    );
    expect(wrapped?.wrapped).toBe(true);
    expect(answerFormatOf(request({ response_format: { type: 'json_object' } }))?.parameters).toEqual({
      type: 'object',
    });
    expect(answerFormatOf(request({ response_format: { type: 'text' } }))).toBeUndefined();
    expect(
      answerFormatOf(
        request({ response_format: { type: 'json_schema', json_schema: { name: 'n', schema: 'x' } } }),
      )?.bad,
    ).toMatch(/must be a JSON schema object/);
  });
});

describe('the schema answer decision', () => {
  it('valid, invalid, not JSON; a wrapped value comes back bare', () => {
    expect(decodeSchemaAnswer('{"items":["a"]}', format)).toMatchObject({
      text: '{"items":["a"]}',
      invalid: false,
      outcome: 'valid',
    });
    expect(decodeSchemaAnswer('{"items":[1]}', format)).toMatchObject({ invalid: true, outcome: 'invalid' });
    expect(decodeSchemaAnswer('{"items":', format)).toMatchObject({
      text: '{"items":',
      invalid: true,
      raw: true,
      outcome: 'not-json',
    });
    const num = answerFormatOf(
      request({
        response_format: { type: 'json_schema', json_schema: { name: 'n', schema: { type: 'number' } } },
      }),
    )!;
    expect(decodeSchemaAnswer('{"answer": 4.5}', num)).toMatchObject({ text: '4.5', outcome: 'valid' });
    expect(checkSchemaContent('4.5', num)).toBe('valid');
    expect(checkSchemaContent('"x"', num)).toBe('invalid');
    expect(checkSchemaContent('not json', format)).toBe('not-json');
  });

  it('the stream decoder holds everything and decides like the whole answer', () => {
    const d = new SchemaAnswerDecoder(format, undefined);
    expect(d.push('{"items":')).toBe('');
    expect(d.finish()).toBe('');
    expect(d.decide('{"items":["a"]}')).toEqual(decodeSchemaAnswer('{"items":["a"]}', format));
  });

  it('budget: an answer streamed in 4x the fragments (4x the bytes) costs about 4x, not 16x', () => {
    const run = (n: number) => {
      const hook = createFinalAnswerStreamHook({
        policy: 'force-tool-use',
        finalAnswerName: 'final_answer',
        forced: true,
        toolChoiceSent: 'required',
        retriesLeft: true,
        answer: format,
      });
      hook.onChunk(
        chunk({
          tool_calls: [
            {
              index: 0,
              id: 'c',
              type: 'function',
              function: { name: 'final_answer', arguments: '{"items":[' },
            },
          ],
        }),
      );
      for (let i = 0; i < n; i++)
        hook.onChunk(
          chunk({ tool_calls: [{ index: 0, function: { arguments: `${i ? ',' : ''}"item ${i % 100}"` } }] }),
        );
      return hook.onChunk(chunk({ tool_calls: [{ index: 0, function: { arguments: ']}' } }] }, 'tool_calls'));
    };
    const text = run(2_000)
      .map((c) => c.choices[0]?.delta.content ?? '')
      .join('');
    expect(JSON.parse(text).items).toHaveLength(2_000);
    // CPU medians of interleaved 1x/4x runs (tests/support/cost-scaling.ts); over the budget, it
    // is measured once more from scratch (a GC or a neighbour in one look), as the budget tables do.
    const measure = () => measureScaling((n) => n, run, { from: 10_000, max: 64_000 });
    let s = measure();
    if (!judge(s, 5).time || !judge(s, 5).memory) s = measure();
    if (process.env.TP_PRINT_BUDGET) console.log(`schema answer stream: ${JSON.stringify(s)}`);
    // Quadratic would be x16.
    expect(judge(s, 5), JSON.stringify(s)).toEqual({ time: true, memory: true });
  });
});
