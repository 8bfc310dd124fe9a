/**
 * StepFun Step-3 (vLLM `step3`):
 *   <｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="NAME">
 *   <steptml:parameter name="P">value</steptml:parameter></steptml:invoke><｜tool_call_end｜>
 *   <｜tool_sep｜><｜tool_call_begin｜>…<｜tool_calls_end｜>
 * (`｜` is U+FF5C and the words use `_`, unlike DeepSeek V3's `▁`.) The `function<｜tool_sep｜>`
 * prefix, sometimes followed by the name again on its own line, is optional noise.
 */
import { defineFamily } from '../engine/define.js';
import { readXmlCalls, type XmlCallSpec } from '../kit/long-tail.js';
import { closedEnvelope } from '../kit/envelope.js';
import { skipWs } from '../kit/json-scan.js';

const OPEN = '<｜tool_calls_begin｜>';

const NOISE = ['<｜tool_call_begin｜>', '<｜tool_call_end｜>', '<｜tool_sep｜>'];
const PREFIX = 'function<｜tool_sep｜>';
const INVOKE = '<steptml:invoke name="';

function skipNoise(body: string, i: number): number {
  let j = skipWs(body, i);
  for (;;) {
    const tok = NOISE.find((t) => body.startsWith(t, j));
    if (tok) {
      j = skipWs(body, j + tok.length);
      continue;
    }
    if (body.startsWith(PREFIX, j)) {
      // the optional repeated name runs to the invoke tag; it must be plain text
      const at = body.indexOf(INVOKE, j + PREFIX.length);
      if (at < 0 || body.slice(j + PREFIX.length, at).includes('<')) return j;
      j = at;
      continue;
    }
    return j;
  }
}

const CALLS: XmlCallSpec = {
  callOpen: INVOKE,
  callNameEnd: '"',
  callHeadEnd: '>',
  callClose: '</steptml:invoke>',
  argOpen: '<steptml:parameter name="',
  argNameEnd: '"',
  argHeadEnd: '>',
  argClose: '</steptml:parameter>',
  skipNoise,
};

export const step3 = defineFamily({
  name: 'step3',
  markers: [OPEN],
  priority: 42,
  backend: { vllm: 'step3' },
  match: closedEnvelope({
    open: OPEN,
    end: '<｜tool_calls_end｜>',
    read: (body, ctx) => readXmlCalls(body, CALLS, ctx),
  }),
});
