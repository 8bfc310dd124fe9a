/**
 * FunctionGemma (vLLM `functiongemma`):
 * `<start_function_call>call:NAME{key:<escape>value<escape>,…}<end_function_call>`.
 * Gemma 4's argument syntax with `<escape>` as the string delimiter (see gemma4.ts). The model
 * also wraps numbers and booleans in `<escape>`: the declared schema types them.
 */
import { defineFamily } from '../engine/define.js';
import { readDelimitedCalls } from './gemma4.js';
import { closedEnvelope } from '../kit/envelope.js';

const OPEN = '<start_function_call>';

export const functionGemma = defineFamily({
  name: 'function-gemma',
  markers: [OPEN],
  priority: 42,
  backend: { vllm: 'functiongemma' },
  match: closedEnvelope({
    open: OPEN,
    end: '<end_function_call>',
    read: (body, ctx) => readDelimitedCalls(body, '<escape>', ctx),
  }),
});
