/** The agent suite's prefix checker (lib/prefix.ts) on hand-made upstream records. */
import { describe, expect, it } from 'vitest';
import type { RecordedRequest } from '../../simulator/index.js';
import { checkPrefix } from './lib/prefix.js';

const TOOLS = '[{"type":"function","function":{"name":"read","parameters":{"type":"object"}}}]';
const SYS = '{"role":"system","content":"x-anthropic-billing-header: cc_version=1; cch=00000;"}';
const USER = '{"role":"user","content":"do it"}';
const CALL =
  '{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{\\"1\\":2,\\"a\\":1}"}}]}';
const RESULT = '{"role":"tool","tool_call_id":"c1","content":"ok"}';

let index = 0;
function req(messages: string[], tools = TOOLS, path = '/v1/chat/completions'): RecordedRequest {
  const rawBody = `{"model":"m","messages":[${messages.join(',')}]${tools ? `,"tools":${tools}` : ''}}`;
  return {
    index: index++,
    method: 'POST',
    path,
    headers: {},
    rawBody,
    body: JSON.parse(rawBody),
    receivedAt: 0,
  };
}

describe('checkPrefix', () => {
  it('passes turns that only append, and ignores side requests without tools', () => {
    const check = checkPrefix([
      req([SYS, USER]),
      req(['{"role":"user","content":"title?"}'], ''),
      req([SYS, USER, CALL, RESULT]),
    ]);
    expect(check.conversations.map((c) => c.requests.length)).toEqual([2]);
    expect(check).toMatchObject({ checked: 1, retries: 0, breaks: [] });
  });

  it('reports an earlier byte that changed: a nonce, a key order, the tools', () => {
    const nonce = SYS.replace('00000', '3f2a1');
    const reordered = CALL.replace('{\\"1\\":2,\\"a\\":1}', '{\\"a\\":1,\\"1\\":2}');
    const other = TOOLS.replace('"object"', '"object","properties":{}');
    const check = checkPrefix([
      req([SYS, USER]),
      req([nonce, USER, CALL, RESULT]),
      req([nonce, USER, reordered, RESULT, CALL, RESULT]),
      req([nonce, USER, reordered, RESULT, CALL, RESULT], other),
    ]);
    expect(check.checked).toBe(3);
    expect(check.breaks).toHaveLength(3);
    expect(check.breaks[0]).toMatch(/message 0 changed/);
    expect(check.breaks[1]).toMatch(/message 2 changed/);
    expect(check.breaks[2]).toMatch(/tools changed/);
  });

  it('counts a corrective retry as the documented exception: the next turn extends the retry base', () => {
    const failed = '{"role":"assistant","content":"<tool_call>bad"}';
    const feedback = '{"role":"user","content":"call a tool"}';
    const check = checkPrefix([
      req([SYS, USER]),
      req([SYS, USER, failed, feedback]),
      req([SYS, USER, CALL, RESULT]),
    ]);
    expect(check).toMatchObject({ checked: 2, retries: 1, breaks: [] });
  });
});
