/**
 * GigaChat 3.5 (vLLM `gigachat35`): DeepSeek's DSML body in its own `GCML` namespace:
 *   <｜GCML｜tool_calls><｜GCML｜invoke name="NAME"><｜GCML｜parameter name="P" string="true">v</｜GCML｜parameter>…</｜GCML｜invoke></｜GCML｜tool_calls>
 * Read by the DSML reader (schema-typed values; `string="false"` values of undeclared
 * parameters are JSON).
 */
import { defineFamily } from '../engine/define.js';
import { readXmlCalls } from '../kit/long-tail.js';
import { closedEnvelope } from '../kit/envelope.js';
import { dsmlCalls } from './deepseek-v32.js';

const OPEN = '<｜GCML｜tool_calls>';
const CALLS = dsmlCalls('GCML');

export const gigachat35 = defineFamily({
  name: 'gigachat35',
  markers: [OPEN],
  priority: 40,
  backend: { vllm: 'gigachat35' },
  match: closedEnvelope({
    open: OPEN,
    end: '</｜GCML｜tool_calls>',
    read: (b, ctx) => readXmlCalls(b, CALLS, ctx),
  }),
});
