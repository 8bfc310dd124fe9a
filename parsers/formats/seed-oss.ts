/**
 * ByteDance Seed-OSS (vLLM `seed_oss`, llama.cpp "Seed-OSS"):
 *   <seed:think>…</seed:think>
 *   <seed:tool_call><function=NAME><parameter=P>value</parameter>…</function></seed:tool_call>
 * The call body is Qwen3-Coder's XML, read by its reader (schema-typed raw values). The
 * template writes a value right after its tag, so a newline ending it is part of it (`pass\n`);
 * only a value on its own lines (`>\nvalue\n<`) loses the newline on each side. Thinking goes
 * to reasoning.
 */
import { defineFamily } from '../engine/define.js';
import { matchReasoningSection } from '../kit/long-tail.js';
import { readFunctions } from './qwen3-coder.js';
import { closedEnvelope } from '../kit/envelope.js';

const THINK = '<seed:think>';
const CALL = '<seed:tool_call>';

const call = closedEnvelope({
  open: CALL,
  end: '</seed:tool_call>',
  // Cut off at the end of output: the same policy as qwen3-coder (whose reader this is), a
  // value still open runs to the end and the call carries the 'unclosed-envelope' repair.
  // Being stricter here would not help: the engine rescans a broken envelope and qwen3-coder
  // would read the inner <function=…> anyway, under the wrong format name.
  read: (body, ctx, { truncated }) => readFunctions(body, ctx, truncated, 'pair'),
});

export const seedOss = defineFamily({
  name: 'seed-oss',
  markers: [THINK, CALL],
  priority: 42,
  backend: { vllm: 'seed_oss', llamacpp: 'Seed-OSS' },
  match: (input) => (input.marker === THINK ? matchReasoningSection(input, '</seed:think>') : call(input)),
});
