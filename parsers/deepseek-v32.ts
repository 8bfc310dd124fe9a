/**
 * DeepSeek V3.2 "DSML" (vLLM `deepseek_v32`):
 *   <｜DSML｜function_calls>
 *   <｜DSML｜invoke name="NAME">
 *   <｜DSML｜parameter name="P" string="true">raw text</｜DSML｜parameter>
 *   <｜DSML｜parameter name="Q" string="false">{"json": 1}</｜DSML｜parameter>
 *   </｜DSML｜invoke>
 *   </｜DSML｜function_calls>
 * (`｜` is U+FF5C.) string="false" values are JSON; string="true" values are text, typed by
 * the declared schema like every XML-ish format (a declared string stays byte for byte).
 */
import { defineFamily } from './define.js';
import { readXmlCalls, unlessReopened, type XmlCallSpec } from './long-tail-kit.js';
import { delimitedEnvelope } from './util/envelope.js';

const OPEN = '<｜DSML｜function_calls>';

const CALLS: XmlCallSpec = {
  callOpen: '<｜DSML｜invoke name="',
  callNameEnd: '"',
  callHeadEnd: '>',
  callClose: '</｜DSML｜invoke>',
  argOpen: '<｜DSML｜parameter name="',
  argNameEnd: '"',
  argHeadEnd: '>',
  argClose: '</｜DSML｜parameter>',
  valueMode: (attrs) => (attrs.includes('string="false"') ? 'json' : 'schema'),
};

export const deepseekV32 = defineFamily({
  name: 'deepseek-v32',
  markers: [OPEN],
  priority: 40,
  backend: { vllm: 'deepseek_v32', llamacpp: 'DeepSeek V3.2', sglang: 'deepseekv32' },
  match: delimitedEnvelope({
    end: '</｜DSML｜function_calls>',
    parseBody: unlessReopened([OPEN], (body, ctx) => readXmlCalls(body, CALLS, ctx)),
  }),
});
