/**
 * Hunyuan v3 / Hy3 (vLLM `hy_v3`) and HY v4 (vLLM `hy_v4`): GLM-style key/value tags inside `<tool_calls>`:
 *   <tool_calls><tool_call>NAME<tool_sep><arg_key>K</arg_key><arg_value>V</arg_value>…</tool_call>…</tool_calls>
 * HY v4 drops `<tool_sep>` and may spell every tag with its vocabulary's suffix
 * (`<tool_calls:opensource>`, `<arg_key:opensource>`, `<think:opensource>` for reasoning).
 * Values are raw text typed by the declared schema. `<tool_calls>` is shared with MiniMax-M1
 * and Hunyuan-A13B: this family only claims it when a `<tool_call>` tag follows.
 */
import { defineFamily } from '../engine/define.js';
import type { MatchResult } from '../engine/family.js';
import { closedEnvelope, startsWith } from '../kit/envelope.js';
import { type KeyValueSpec, readKeyValueBlock } from '../kit/key-value-calls.js';
import { matchReasoningSection } from '../kit/long-tail.js';

/** The tag spellings: unsuffixed (v3, and v4 without a suffix) and v4's `:opensource`. */
function spellings(suffix: string) {
  const tag = (t: string): readonly [string, string] => [`<${t}${suffix}>`, `</${t}${suffix}>`];
  const spec: KeyValueSpec = {
    call: tag('tool_call'),
    sep: '<tool_sep>',
    key: tag('arg_key'),
    value: tag('arg_value'),
    untyped: 'string',
  };
  const [open, end] = tag('tool_calls');
  return {
    open,
    block: closedEnvelope({
      open,
      end,
      accept: startsWith(spec.call[0]),
      read: (body, ctx) => readKeyValueBlock(body, ctx, spec),
    }),
  };
}

const PLAIN = spellings('');
const OPENSOURCE = spellings(':opensource');
const THINK = '<think:opensource>';

export const hunyuanV3 = defineFamily({
  name: 'hunyuan-v3',
  markers: [PLAIN.open, OPENSOURCE.open, THINK],
  priority: 41,
  backend: { vllm: 'hy_v3' },
  match(input): MatchResult {
    if (input.marker === THINK) return matchReasoningSection(input, '</think:opensource>');
    return input.marker === PLAIN.open ? PLAIN.block(input) : OPENSOURCE.block(input);
  },
});
