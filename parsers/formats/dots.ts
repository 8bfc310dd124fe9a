/**
 * dots.llm (vLLM `dots`):
 *   <dots_function_call><invoke name="NAME"><parameter name="P">value</parameter>…</invoke>…</dots_function_call>
 * or the same envelope around JSON: `{"name": …, "arguments": {…}}` (one object, several, or a
 * list). Each envelope is one all-or-nothing block; several envelopes may follow each other.
 * Invoke values are raw text typed by the declared schema (MiniMax-M2's invoke layout).
 */
import { defineFamily } from '../engine/define.js';
import { callFromObject, closedEnvelope } from '../kit/envelope.js';
import { skipWs } from '../kit/json-scan.js';
import { type BodyResult, callsFromJson, readXmlCalls } from '../kit/long-tail.js';
import type { ParseContext } from '../types.js';
import { MINIMAX_INVOKE } from './minimax-m2.js';

const OPEN = '<dots_function_call>';

function readBody(body: string, ctx: ParseContext): BodyResult {
  const j = skipWs(body, 0);
  if (body[j] === '{' || body[j] === '[') return callsFromJson(body, callFromObject, false);
  return readXmlCalls(body, MINIMAX_INVOKE, ctx);
}

export const dots = defineFamily({
  name: 'dots',
  markers: [OPEN],
  priority: 42,
  backend: { vllm: 'dots' },
  match: closedEnvelope({ open: OPEN, end: '</dots_function_call>', read: readBody }),
});
