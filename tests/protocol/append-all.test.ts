/**
 * Issue 18 item 4: `out.push(...list)` passes every element as an argument and throws a
 * RangeError past ~120k; pushAll does not (through the server: tests/hardening/huge-lists.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { pushAll } from '../../protocol/append-all.js';

describe('pushAll', () => {
  it('pushAll appends 500k items', () => {
    const items = Array.from({ length: 500_000 }, (_, i) => i);
    expect(pushAll([-1], items)).toHaveLength(500_001);
  });
});
