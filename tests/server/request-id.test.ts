import { describe, expect, it } from 'vitest';
import { REQUEST_ID_HEADER, requestIdOf } from '../../server/request-id.js';

describe('requestIdOf', () => {
  it("keeps a client's short token id", () => {
    expect(requestIdOf({ headers: { [REQUEST_ID_HEADER]: 'req-abc.123:4' } })).toBe('req-abc.123:4');
  });

  it('replaces a missing, long or odd id with a fresh UUID', () => {
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
    for (const given of [undefined, '', 'a'.repeat(129), 'has space', 'new\nline', '<script>']) {
      const id = requestIdOf({ headers: given === undefined ? {} : { [REQUEST_ID_HEADER]: given } });
      expect(id).toMatch(uuid);
    }
    expect(requestIdOf({ headers: {} })).not.toBe(requestIdOf({ headers: {} }));
  });
});
