import { describe, expect, it } from 'vitest';
import { guidedSchemaPolicy, withGuidableSchemas } from '../../policies/guided-schema/index.js';
import { refusesSchemaFeatures } from '../../policies/guided-schema/refusal.js';
import { withoutRefusedKeywords } from '../../policies/guided-schema/strip.js';
import { ctxWith } from './helpers.js';

describe('guided-schema: strip', () => {
  it('drops the refused keywords at every schema position, never a property so named', () => {
    const schema = {
      type: 'object',
      minProperties: 1,
      properties: {
        format: { type: 'string', format: 'hostname' },
        tags: { type: 'array', items: { type: 'string', pattern: '^a', maxLength: 3 }, uniqueItems: true },
        n: { anyOf: [{ type: 'number', multipleOf: 2 }, { type: 'null' }] },
        ref: { $ref: '#/$defs/x' },
      },
      $defs: { x: { type: 'object', propertyNames: { pattern: '^k' } } },
      required: ['format'],
    };
    const { schema: out, dropped } = withoutRefusedKeywords(schema);
    expect(out).toEqual({
      type: 'object',
      properties: {
        format: { type: 'string' },
        tags: { type: 'array', items: { type: 'string', pattern: '^a' } },
        n: { anyOf: [{ type: 'number' }, { type: 'null' }] },
        ref: { $ref: '#/$defs/x' },
      },
      $defs: { x: { type: 'object' } },
      required: ['format'],
    });
    expect(dropped.sort()).toEqual(
      ['format', 'maxLength', 'minProperties', 'multipleOf', 'propertyNames', 'uniqueItems'].sort(),
    );
    // The client's schema is never changed in place.
    expect(schema.properties.tags.uniqueItems).toBe(true);
  });

  it('gives back the same object when nothing is refused, and stops at a depth bound', () => {
    const plain = { type: 'object', properties: { a: { type: 'string', minLength: 1 } } };
    expect(withoutRefusedKeywords(plain).schema).toBe(plain);
    let deep: Record<string, unknown> = { type: 'string', format: 'x' };
    for (let i = 0; i < 200; i++) deep = { type: 'array', items: deep };
    expect(() => withoutRefusedKeywords(deep)).not.toThrow();
  });
});

describe('guided-schema: the policy', () => {
  const request = {
    model: 'm',
    messages: [{ role: 'user', content: 'x' }],
    tools: [
      { type: 'function' as const, function: { name: 'a', parameters: { type: 'object', properties: {} } } },
      {
        type: 'function' as const,
        function: {
          name: 'b',
          parameters: { type: 'object', properties: { s: { type: 'array', uniqueItems: true } } },
        },
      },
    ],
    response_format: {
      type: 'json_schema',
      json_schema: { name: 'r', schema: { type: 'number', multipleOf: 5 } },
    },
  };

  it('acts only once the upstream refused a keyword', () => {
    const off = guidedSchemaPolicy.onRequest!(request, ctxWith(), request);
    expect(off).toEqual({ action: 'continue', request, effects: [] });
    const on = guidedSchemaPolicy.onRequest!(
      request,
      ctxWith({ refused: { now: new Set(['schema-keywords']), remembered: new Set() } }),
      request,
    );
    if (on.action !== 'continue') throw new Error('continue expected');
    expect(on.request.tools![0]).toBe(request.tools[0]);
    expect(JSON.stringify(on.request)).not.toMatch(/uniqueItems|multipleOf/);
    expect(on.effects).toEqual([
      {
        policy: 'guided-schema',
        kind: 'dropped-schema-keywords',
        count: 2,
        detail: { keywords: ['uniqueItems', 'multipleOf'], schemas: ['b', 'response_format'] },
      },
    ]);
  });

  it('leaves a request without refused keywords the same object', () => {
    const plain = { model: 'm', messages: [], tools: [request.tools[0]!] };
    expect(withGuidableSchemas(plain).request).toBe(plain);
  });
});

describe('guided-schema: the refusal', () => {
  it("reads vLLM's xgrammar refusal only", () => {
    const msg = 'The provided JSON schema contains features not supported by xgrammar.';
    expect(refusesSchemaFeatures(400, { error: { message: msg, type: 'BadRequestError', code: 400 } })).toBe(
      true,
    );
    expect(refusesSchemaFeatures(400, { object: 'error', message: msg })).toBe(true);
    expect(refusesSchemaFeatures(400, { error: { message: 'tool_choice must be a named tool' } })).toBe(
      false,
    );
    expect(refusesSchemaFeatures(404, { error: { message: msg } })).toBe(false);
  });
});
