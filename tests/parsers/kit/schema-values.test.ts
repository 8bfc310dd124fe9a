import { describe, expect, it } from 'vitest';
import { coerceParamValue, paramSchema } from '../../../parsers/kit/schema-values.js';

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
  it('paramSchema reads properties of the declared tool', () => {
    const tool = { name: 't', parameters: { type: 'object', properties: { a: { type: 'integer' } } } };
    expect(paramSchema(tool, 'a')).toEqual({ type: 'integer' });
    expect(paramSchema(tool, 'b')).toBeUndefined();
    expect(paramSchema(undefined, 'a')).toBeUndefined();
  });
});
