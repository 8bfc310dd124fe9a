/**
 * OLMo 3 (vLLM `olmo3`): `<function_calls>` then one Python-style call per line, then
 * `</function_calls>`:
 *   <function_calls>get_weather(city='Paris')
 *   get_time(timezone='UTC')</function_calls>
 */
import { defineFamily } from '../engine/define.js';
import type { BodyResult } from '../kit/long-tail.js';
import type { ParsedCall } from '../types.js';
import { closedEnvelope, peekNonWs } from '../kit/envelope.js';
import { groupEnd, readName, skipWs } from '../kit/json-scan.js';
import { parsePythonCallList } from '../kit/python-literal.js';
import { pushAll } from '../../protocol/append-all.js';

const OPEN = '<function_calls>';

function readCalls(body: string): BodyResult {
  const calls: ParsedCall[] = [];
  let i = skipWs(body, 0);
  while (i < body.length) {
    const name = readName(body, i);
    if (name === '' || body[i + name.length] !== '(') return { error: 'expected NAME(…)' };
    const end = groupEnd(body, i + name.length);
    if (end < 0) return { error: 'unclosed call' };
    const one = parsePythonCallList(`[${body.slice(i, end)}]`);
    if (!one) return { error: 'call is not readable' };
    pushAll(calls, one);
    i = skipWs(body, end);
  }
  return calls.length > 0 ? { calls } : { error: 'no call in envelope' };
}

export const olmo3 = defineFamily({
  name: 'olmo3',
  markers: [OPEN],
  priority: 42,
  backend: { vllm: 'olmo3' },
  match: closedEnvelope({
    open: OPEN,
    end: '</function_calls>',
    accept(text, bodyStart, final) {
      const j = peekNonWs(text, bodyStart, final);
      if (j === 'need-more') return 'need-more';
      if (j === 'end') return 'no';
      // ours only when a call starts: NAME( — prose mentioning the tag is left alone
      const name = readName(text, j);
      const k = j + name.length;
      if (name === '' || !/[A-Za-z_]/.test(name[0] ?? '')) return 'no';
      if (k >= text.length) return final ? 'no' : 'need-more';
      return text[k] === '(' ? 'yes' : 'no';
    },
    read: (body) => readCalls(body),
  }),
});
