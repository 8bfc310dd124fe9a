/** kit/close-slip.ts: which closing tags are one slip from the expected one. */
import { describe, expect, it } from 'vitest';
import { isNameSlip, trailingCloseSlip } from '../../../parsers/kit/close-slip.js';

describe('isNameSlip', () => {
  it.each(['tool_cal', 'tool_calll', 'tool_cail', 'Tool_Cal', 'tool cal', 'toolcal', 'tol_call'])(
    '%s is one edit from tool_call',
    (w) => {
      expect(isNameSlip(w, 'tool_call')).toBe(true);
    },
  );
  it.each(['tool_call', 'TOOL-CALL', 'tool', 'div', 'tool_calls_x', 'to_cal', ''])(
    '%s is not a slip of tool_call',
    (w) => {
      expect(isNameSlip(w, 'tool_call')).toBe(false);
    },
  );
  it('a name under 4 characters has no slips', () => {
    expect(isNameSlip('ab', 'abc')).toBe(false);
  });
});

describe('trailingCloseSlip', () => {
  it('finds the slip only as the last tag, blanks after it allowed', () => {
    expect(trailingCloseSlip('x</functon>', 'function')).toBe(1);
    expect(trailingCloseSlip('x</functon>  \n', 'function')).toBe(1);
    expect(trailingCloseSlip('x</functon> y', 'function')).toBe(-1);
    expect(trailingCloseSlip('x</function>', 'function')).toBe(-1);
    expect(trailingCloseSlip('x</div>', 'function')).toBe(-1);
    expect(trailingCloseSlip(`x</${'f'.repeat(60)}>`, 'function')).toBe(-1);
  });
});
