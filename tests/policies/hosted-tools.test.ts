import { describe, expect, it } from 'vitest';
import { hostedToolsPolicy } from '../../policies/hosted-tools/index.js';
import { ToolproofError } from '../../protocol/errors.js';
import { ctxWith, request } from './helpers.js';

describe('hosted-tools', () => {
  const refusal = new ToolproofError('TP_ERR_INVALID_FIELD', { param: 'tools[0].type', message: 'hosted' });

  it('is on only for hostedTools: reject (dropping is the translation)', () => {
    expect(hostedToolsPolicy.enabled(ctxWith().settings)).toBe(false);
    expect(hostedToolsPolicy.enabled(ctxWith({}, { hostedTools: 'reject' }).settings)).toBe(true);
  });

  it('refuses a request whose door left hosted tools out, with the door own 400; passes any other', () => {
    const req = request();
    const ctx = ctxWith({ hostedTools: { dropped: ['web_search'], refusal } }, { hostedTools: 'reject' });
    const d = hostedToolsPolicy.onRequest!(req, ctx, req);
    expect(d).toEqual({ action: 'reject', error: refusal, effects: [] });
    const plain = hostedToolsPolicy.onRequest!(req, ctxWith({}, { hostedTools: 'reject' }), req);
    expect(plain).toEqual({ action: 'continue', request: req, effects: [] });
  });
});
