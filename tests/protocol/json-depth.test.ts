/**
 * protocol/json-depth: the path named in the 400 for a request body nested past
 * MAX_REQUEST_DEPTH (through the server: tests/hardening/deep-schema.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { MAX_REQUEST_DEPTH, tooDeepPath } from '../../protocol/json-depth.js';

/** A tool schema `levels` objects deep. */
function deepSchema(levels: number): unknown {
  let deep: unknown = { type: 'string' };
  for (let i = 0; i < levels; i++) deep = { type: 'object', properties: { x: deep } };
  return deep;
}

describe('tooDeepPath', () => {
  it('names the first too-deep field, cut to its first segments', () => {
    const body = { model: 'm', tools: [{ function: { parameters: deepSchema(200) } }] };
    expect(tooDeepPath(body, MAX_REQUEST_DEPTH)).toBe('tools.0.function.parameters');
    expect(tooDeepPath({ a: [[[1]]] }, 3)).toBe('a.0.0');
    expect(tooDeepPath({ a: [[[1]]] }, 4)).toBeNull();
  });
});
