/** Hand-made probe results for the pure modules' tests. */
import { countKinds } from '../../cli/probe/classify.js';
import type { Cell, ChoiceMode, Classification, Question } from '../../cli/probe/types.js';

export const TOOL: Classification = { kind: 'tool_call', names: ['run_python'] };
export const PROSE: Classification = {
  kind: 'prose',
  claimsExecution: false,
  looksLikeCall: false,
  excerpt: '391',
};
export const CLAIM: Classification = {
  kind: 'prose',
  claimsExecution: true,
  looksLikeCall: false,
  excerpt: 'I ran it in Python: 391',
};
export const ERR400: Classification = { kind: 'error', status: 400, message: '"required" is not supported' };
export const QWEN_LEAK: Classification = {
  kind: 'leaked',
  format: 'qwen3-coder',
  backendHint: 'vllm --tool-call-parser qwen3_coder',
  backends: { vllm: 'qwen3_coder', llamacpp: 'Qwen3-Coder XML', sglang: 'qwen3_coder' },
  recovered: true,
  names: ['run_python'],
};

export function cell(question: Question, toolChoice: ChoiceMode, results: Classification[]): Cell {
  return { question, toolChoice, counts: countKinds(results), results };
}

export function times(n: number, result: Classification): Classification[] {
  return Array.from({ length: n }, () => result);
}

/** The four cells in table order, from per-cell result lists. */
export function grid(
  memAuto: Classification[],
  memRequired: Classification[],
  unmemAuto: Classification[],
  unmemRequired: Classification[],
): Cell[] {
  return [
    cell('memorizable', 'auto', memAuto),
    cell('memorizable', 'required', memRequired),
    cell('unmemorizable', 'auto', unmemAuto),
    cell('unmemorizable', 'required', unmemRequired),
  ];
}
