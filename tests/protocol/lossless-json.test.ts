/**
 * protocol/lossless-json.ts: a value annotated from its bytes is still exactly JSON.parse's value
 * (and JSON.stringify's text outside stringifyJson), and stringifyJson of anything built around
 * it writes the client's numbers and key order as they were sent.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseJsonBody } from '../../protocol/json-body.js';
import { keepSourceText, MAX_KEPT, mayNotRoundTrip, stringifyJson } from '../../protocol/lossless-json.js';
import { container, numberText, print, src, tokens } from './lossless-json.js';

function annotated(text: string): unknown {
  const bytes = Buffer.from(text);
  const value = parseJsonBody(bytes);
  keepSourceText(value, bytes);
  return value;
}

const whitespace = fc.array(fc.constantFrom('', ' ', '\n', '\t', '  \r\n'), { minLength: 1, maxLength: 5 });

describe('keepSourceText + stringifyJson', () => {
  it('property: the value stays JSON.parse’s, and JSON.stringify outside stringifyJson is unchanged', () => {
    fc.assert(
      fc.property(src, whitespace, (tree, ws) => {
        const text = `{"a":${print(tree, ws)}}`;
        const value = annotated(text);
        expect(value).toEqual(JSON.parse(text));
        expect(JSON.stringify(value)).toBe(JSON.stringify(JSON.parse(text)));
      }),
      { numRuns: 400 },
    );
  });

  it('property: a rewritten request keeps every untouched client byte (compact input)', () => {
    fc.assert(
      fc.property(container, container, numberText, (a, b, seed) => {
        const sa = print(a);
        const sb = print(b);
        const text = `{"model":"m","seed":${seed},"tools":[${sa}],"extra":${sb}}`;
        const value = annotated(text) as Record<string, unknown>;
        // What force-tool-use does: a spread copy with one more tool and a new field.
        const rewritten = {
          ...value,
          tools: [...(value.tools as unknown[]), { type: 'function' }],
          tool_choice: 'required',
        };
        expect(stringifyJson(rewritten, value)).toBe(
          `{"model":"m","seed":${seed},"tools":[${sa},{"type":"function"}],"extra":${sb},"tool_choice":"required"}`,
        );
        // A client subtree moved elsewhere (a translated front door) is written as it was sent.
        expect(stringifyJson({ parameters: value.extra })).toBe(`{"parameters":${sb}}`);
      }),
      { numRuns: 400 },
    );
  });

  it('property: with any whitespace, the numbers as written and every key order survive', () => {
    fc.assert(
      fc.property(container, whitespace, (tree, ws) => {
        const value = annotated(`{"x":${print(tree, ws)}}`) as Record<string, unknown>;
        expect(tokens(stringifyJson({ y: value.x }))).toEqual(tokens(`{"y":${print(tree)}}`));
      }),
      { numRuns: 400 },
    );
  });

  it('the cheap scan says no for ordinary bodies and yes for each hazard', () => {
    const ok =
      '{"model":"m","max_tokens":100,"temperature":0.7,"messages":[{"role":"user","content":"1.0 -0 1e400 \\"2\\":"}]}';
    expect(mayNotRoundTrip(Buffer.from(ok))).toBe(false);
    for (const bad of [
      '{"a":1.0}',
      '{"a":-0}',
      '{"a":1e400}',
      '{"a":12345678901234567890}',
      '{"a":{"2":1}}',
      '[1E5]',
    ])
      expect(mayNotRoundTrip(Buffer.from(bad)), bad).toBe(true);
  });

  it('a duplicate key keeps JSON.stringify’s behaviour (the walk cannot tell which survived)', () => {
    const value = annotated('{"t":{"a":{"x":1e400},"a":{"y":12345678901234567890}}}') as Record<
      string,
      unknown
    >;
    expect(stringifyJson({ t: value.t })).toBe('{"t":{"a":{"y":12345678901234567000}}}');
  });

  it('an own "toJSON" key is left alone', () => {
    const value = annotated('{"t":{"toJSON":1,"n":1e400}}') as Record<string, unknown>;
    expect(stringifyJson(value.t)).toBe('{"toJSON":1,"n":null}');
  });

  it('a string spelling the marker itself gets JSON.stringify’s text, never a wrong splice', () => {
    const value = annotated(
      '{"t":[{"n":1e400},"\\u0000toolproof-source\\u00000","\\u0000toolproof-source\\u00001"]}',
    ) as Record<string, unknown>;
    const out = stringifyJson(value.t);
    expect(JSON.parse(out)).toEqual(JSON.parse(JSON.stringify(value.t)));
  });

  it('"__proto__" members are data, read and written as such', () => {
    const text = '{"t":{"__proto__":{"n":-0},"2":1,"1":2}}';
    const value = annotated(text) as Record<string, unknown>;
    expect(stringifyJson({ t: value.t })).toBe(text);
  });

  it('a big body (parsed in pieces by json-body.ts) keeps a number deep in its history', () => {
    const turns = Array.from(
      { length: 2000 },
      (_, i) => `{"role":"user","content":"turn ${i} ${'x'.repeat(100)}"}`,
    );
    turns[1500] =
      '{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":{"n":12345678901234567890}}}]}';
    const text = `{"model":"m","messages":[${turns.join(',')}]}`;
    expect(text.length).toBeGreaterThan(200_000);
    const value = annotated(text) as {
      messages: Array<{ tool_calls?: Array<{ function: { arguments: unknown } }> }>;
    };
    expect(stringifyJson(value.messages[1500]!.tool_calls![0]!.function.arguments)).toBe(
      '{"n":12345678901234567890}',
    );
  });

  it(`past ${MAX_KEPT} kept containers a body keeps none (bounded work and memory), and nothing breaks`, () => {
    const at = (n: number) => `{"t":[${Array.from({ length: n }, () => '{"n":1.0}').join(',')}]}`;
    const kept = annotated(at(MAX_KEPT)) as { t: unknown[] };
    expect(stringifyJson(kept.t[0])).toBe('{"n":1.0}');
    const over = annotated(at(MAX_KEPT + 1)) as { t: unknown[] };
    expect(stringifyJson(over.t[0])).toBe('{"n":1}');
    expect(JSON.parse(stringifyJson(over))).toEqual(JSON.parse(at(MAX_KEPT + 1)));
  });

  it(`top-level numbers count toward ${MAX_KEPT} with the containers (issue 27: 1M root members)`, () => {
    const at = (n: number) =>
      `{"t":[{"n":1.0}],${Array.from({ length: n }, (_, i) => `"k${i}":1.0`).join(',')}}`;
    const kept = annotated(at(MAX_KEPT - 1)) as Record<string, unknown> & { t: unknown[] };
    expect(stringifyJson({ ...kept, x: 1 }, kept).startsWith('{"t":[{"n":1.0}],"k0":1.0,')).toBe(true);
    const over = annotated(at(MAX_KEPT)) as Record<string, unknown> & { t: unknown[] };
    expect(stringifyJson({ ...over, x: 1 }, over).startsWith('{"t":[{"n":1}],"k0":1,')).toBe(true);
  });

  it('nested kept containers share one copy of their bytes and each writes its own part', () => {
    const text = '{"t":[1.0,[2.50,{"2":-0,"1":1e400}],"x"]}';
    const value = annotated(text) as { t: [number, [number, object], string] };
    expect(stringifyJson({ a: value.t })).toBe('{"a":[1.0,[2.50,{"2":-0,"1":1e400}],"x"]}');
    expect(stringifyJson({ b: value.t[1] })).toBe('{"b":[2.50,{"2":-0,"1":1e400}]}');
    expect(stringifyJson({ c: value.t[1][1] })).toBe('{"c":{"2":-0,"1":1e400}}');
  });
});
