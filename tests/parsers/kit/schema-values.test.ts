import { describe, expect, it } from 'vitest';
import {
  alternativeFor,
  coerceParamValue,
  paramSchema,
  typeStringScalars,
} from '../../../parsers/kit/schema-values.js';

describe('coerceParamValue', () => {
  it('keeps declared strings verbatim, even when they look like numbers or JSON', () => {
    expect(coerceParamValue('42', { type: 'string' })).toBe('42');
    expect(coerceParamValue(' {"a":1} ', { type: 'string' })).toBe(' {"a":1} ');
  });
  it('converts integers, numbers, booleans, null, objects and arrays', () => {
    expect(coerceParamValue('7', { type: 'integer' })).toBe(7);
    expect(coerceParamValue('7.0', { type: 'integer' })).toBe(7);
    expect(coerceParamValue('-1.5e2', { type: 'number' })).toBe(-150);
    expect(coerceParamValue('True', { type: 'boolean' })).toBe(true);
    expect(coerceParamValue('None', { type: 'null' })).toBeNull();
    expect(coerceParamValue('{"a": [1]}', { type: 'object' })).toEqual({ a: [1] });
    expect(coerceParamValue("['x']", { type: 'array' })).toEqual(['x']);
  });
  it('keeps the raw string when the value is not of the declared type', () => {
    expect(coerceParamValue('seven', { type: 'integer' })).toBe('seven');
    expect(coerceParamValue('[1]', { type: 'object' })).toBe('[1]');
  });
  it('tries non-string members of a union first', () => {
    expect(coerceParamValue('3', { type: ['string', 'integer'] })).toBe(3);
    expect(coerceParamValue('null', { anyOf: [{ type: 'string' }, { type: 'null' }] })).toBeNull();
    expect(coerceParamValue('abc', { type: ['integer', 'string'] })).toBe('abc');
  });
  it('untyped: string by default, JSON-looking decoded on request', () => {
    expect(coerceParamValue('[1]', undefined)).toBe('[1]');
    expect(coerceParamValue('[1]', undefined, { untyped: 'json' })).toEqual([1]);
    expect(coerceParamValue('hello', undefined, { untyped: 'json' })).toBe('hello');
  });
  it('paramSchema follows a local $ref (Pydantic $defs) and leaves a cycle or a dangling one alone', () => {
    const parameters = {
      type: 'object',
      properties: { loc: { $ref: '#/$defs/Loc' }, loop: { $ref: '#/$defs/A' }, gone: { $ref: '#/$defs/X' } },
      $defs: { Loc: { type: 'object' }, A: { $ref: '#/$defs/B' }, B: { $ref: '#/$defs/A' } },
    };
    const tool = { name: 't', parameters };
    expect(paramSchema(tool, 'loc')).toEqual({ type: 'object' });
    expect(paramSchema(tool, 'gone')).toEqual({ $ref: '#/$defs/X' });
    expect(paramSchema(tool, 'loop')?.['$ref']).toMatch(/^#\/\$defs\/[AB]$/);
    expect(coerceParamValue('{"city": "Shanghai"}', paramSchema(tool, 'loc'))).toEqual({ city: 'Shanghai' });
  });
  it('paramSchema reads properties of the declared tool', () => {
    const tool = { name: 't', parameters: { type: 'object', properties: { a: { type: 'integer' } } } };
    expect(paramSchema(tool, 'a')).toEqual({ type: 'integer' });
    expect(paramSchema(tool, 'b')).toBeUndefined();
    expect(paramSchema(undefined, 'a')).toBeUndefined();
  });
});

describe('schema typing: non-finite values, unions and C-style type names', () => {
  it('keeps an array or object holding a number JSON cannot carry as the text written', () => {
    expect(coerceParamValue('[1, 1e999]', { type: 'array' })).toBe('[1, 1e999]');
    expect(coerceParamValue('{"x": -1e999}', { type: 'object' })).toBe('{"x": -1e999}');
    expect(coerceParamValue('(1e999,)', { type: 'array' })).toBe('(1e999,)');
    expect(coerceParamValue('[1, 2]', { type: 'array' })).toEqual([1, 2]);
  });
  it('types nested values through the oneOf / anyOf alternative of the right kind', () => {
    const limit = {
      oneOf: [{ type: 'integer' }, { type: 'object', properties: { max: { type: 'integer' } } }],
    };
    expect(coerceParamValue('{"max": "10"}', limit)).toEqual({ max: 10 });
    expect(coerceParamValue('5', limit)).toBe(5);
    const steps = {
      anyOf: [
        { type: 'null' },
        { type: 'array', items: { type: 'object', properties: { n: { type: 'number' } } } },
      ],
    };
    expect(coerceParamValue('[{"n": "1.5"}]', steps)).toEqual([{ n: 1.5 }]);
    expect(alternativeFor(limit, 'object')).toEqual(limit.oneOf[1]);
    expect(alternativeFor({ type: 'string' }, 'array')).toEqual({ type: 'string' });
  });
  it('reads C and Python type names as JSON Schema types', () => {
    expect(coerceParamValue('42', { type: 'uint32' })).toBe(42);
    expect(coerceParamValue('42', { type: 'long' })).toBe(42);
    expect(coerceParamValue('2.5', { type: 'float' })).toBe(2.5);
    expect(coerceParamValue('[1]', { type: 'list' })).toEqual([1]);
    expect(coerceParamValue('{"a": 1}', { type: 'dict' })).toEqual({ a: 1 });
    expect(coerceParamValue('not_a_number', { type: 'unsigned' })).toBe('not_a_number');
    expect(coerceParamValue('007', { type: 'str' })).toBe('007');
  });
  it('types string scalars of JSON arguments by the schema (K2-Horizon JSON dialect)', () => {
    const tool = {
      name: 'f',
      parameters: {
        type: 'object',
        properties: { n: { type: 'integer' }, ok: { type: 'boolean' }, s: { type: 'string' } },
      },
    };
    expect(typeStringScalars({ n: '2', ok: 'true', s: '3' }, tool)).toEqual({ n: 2, ok: true, s: '3' });
    expect(typeStringScalars('{"n": "4"}', tool)).toEqual({ n: 4 });
    expect(typeStringScalars('not json', tool)).toBe('not json');
  });
});
