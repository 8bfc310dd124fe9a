/** force-tool-use's effects, and what each means for the trace and metrics. */
import type { ToolChoice } from '../../protocol/openai.js';
import { tallied } from '../kit/effects.js';
import type { EffectRecord } from '../types.js';

export const FORCE_TOOL_USE_POLICY = 'force-tool-use';

type P = typeof FORCE_TOOL_USE_POLICY;

/** How a final answer was delivered (`field`: the key it came from when not `answer`). */
export interface FinalAnswerDetail {
  mixed: boolean;
  truncated: boolean;
  raw: boolean;
  field?: string;
}

export type ForceToolUseEffect =
  /** The request went upstream with final_answer added and this tool_choice. */
  | { policy: P; kind: 'forced'; count: number; detail: { toolChoice: 'auto' | 'required' } }
  /** tool_choice "auto" sent (final_answer kept): the last user turn forbids tools in so many words. */
  | { policy: P; kind: 'text-only-turn'; count: number }
  /** A final_answer call became the content. */
  | { policy: P; kind: 'final-answer'; count: number; detail: FinalAnswerDetail }
  /** A final_answer without an answer string: its raw arguments delivered as the last resort. */
  | { policy: P; kind: 'final-answer-raw'; count: number }
  /** A final_answer without an answer string, left as a call for corrective-retry. */
  | { policy: P; kind: 'final-answer-invalid'; count: number }
  /** A forced request answered in prose all the same. */
  | { policy: P; kind: 'forced-but-prose'; count: number; detail: { toolChoice: ToolChoice | null } }
  /** An answer in the client's JSON schema (or a JSON object) was delivered: how it checked. */
  | {
      policy: P;
      kind: 'schema-answer';
      count: number;
      detail: { outcome: 'valid' | 'invalid' | 'not-json' | 'unchecked' };
    };

/** What an effect means; read tolerantly (a hand-built effect without its detail still reads). */
export function describeForceToolUseEffect(effect: ForceToolUseEffect): EffectRecord | undefined {
  switch (effect.kind) {
    case 'forced':
      return { type: 'forced', toolChoice: effect.detail?.toolChoice ?? 'required' };
    case 'final-answer':
      return { type: 'final-answer' };
    case 'forced-but-prose':
      return { type: 'forced-but-prose' };
    case 'final-answer-raw':
      return tallied('finalAnswerProblems', effect, 'raw');
    case 'final-answer-invalid':
      return tallied('finalAnswerProblems', effect, 'invalid');
    case 'schema-answer':
      return { type: 'schema-answer', outcome: effect.detail?.outcome ?? 'valid' };
    default:
      return undefined;
  }
}
