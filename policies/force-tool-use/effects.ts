/** force-tool-use's effects, and what each means for the trace and metrics. */
import type { ToolChoice } from '../../protocol/openai.js';
import { constantEffect, tallied } from '../kit/effects.js';
import type { EffectRecord } from '../types.js';
import type { SchemaOutcome } from './schema-answer.js';

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
  /** The client's own tool_choice "required" sent as "auto": the upstream rejects "required". */
  | { policy: P; kind: 'required-as-auto'; count: number }
  /** tool_choice "auto" sent (final_answer kept): the last user turn forbids tools in so many words, or asks for the agent's compaction. */
  | { policy: P; kind: 'text-only-turn'; count: number }
  /** The client's stop strings held back from the upstream, applied to the answer (client-stop.ts). */
  | { policy: P; kind: 'stop-held'; count: number }
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

/*
 * The effects as constants, one frozen object per distinct content, made once: every forced
 * request has one or two of them, and a reader that keeps effects (the capture) knows them by
 * identity. Those with a request's own text (a final answer's field name, a client's tool_choice
 * object) are made per request.
 */
const P: P = FORCE_TOOL_USE_POLICY;
const FORCED = {
  auto: constantEffect<ForceToolUseEffect>({
    policy: P,
    kind: 'forced',
    count: 1,
    detail: { toolChoice: 'auto' },
  }),
  required: constantEffect<ForceToolUseEffect>({
    policy: P,
    kind: 'forced',
    count: 1,
    detail: { toolChoice: 'required' },
  }),
};
const PROSE = {
  auto: constantEffect<ForceToolUseEffect>({
    policy: P,
    kind: 'forced-but-prose',
    count: 1,
    detail: { toolChoice: 'auto' },
  }),
  required: constantEffect<ForceToolUseEffect>({
    policy: P,
    kind: 'forced-but-prose',
    count: 1,
    detail: { toolChoice: 'required' },
  }),
};
export const TEXT_ONLY_TURN_EFFECT = constantEffect<ForceToolUseEffect>({
  policy: P,
  kind: 'text-only-turn',
  count: 1,
});
export const STOP_HELD_EFFECT = constantEffect<ForceToolUseEffect>({
  policy: P,
  kind: 'stop-held',
  count: 1,
});
export const FINAL_ANSWER_RAW_EFFECT = constantEffect<ForceToolUseEffect>({
  policy: P,
  kind: 'final-answer-raw',
  count: 1,
});
export const FINAL_ANSWER_INVALID_EFFECT = constantEffect<ForceToolUseEffect>({
  policy: P,
  kind: 'final-answer-invalid',
  count: 1,
});
const SCHEMA_ANSWER: ReadonlyMap<string, ForceToolUseEffect> = new Map(
  (['valid', 'invalid', 'not-json', 'unchecked'] as const).map((o) => [o, schemaAnswerOf(o)]),
);
/** The final answers without a field name, by mixed * 4 + truncated * 2 + raw. */
const FINAL_ANSWER: readonly ForceToolUseEffect[] = Array.from({ length: 8 }, (_, i) =>
  constantEffect(finalAnswerOf((i & 4) !== 0, (i & 2) !== 0, (i & 1) !== 0, undefined)),
);

function schemaAnswerOf(outcome: SchemaOutcome): ForceToolUseEffect {
  return constantEffect<ForceToolUseEffect>({
    policy: P,
    kind: 'schema-answer',
    count: 1,
    detail: { outcome },
  });
}

function finalAnswerOf(
  mixed: boolean,
  truncated: boolean,
  raw: boolean,
  field: string | undefined,
): ForceToolUseEffect {
  return {
    policy: P,
    kind: 'final-answer',
    count: 1,
    detail: { mixed, truncated, raw, ...(field !== undefined ? { field } : {}) },
  };
}

/** The request went upstream forced with this tool_choice. */
export function forcedEffect(toolChoice: 'auto' | 'required'): ForceToolUseEffect {
  return FORCED[toolChoice];
}

/** A forced request answered in prose (`toolChoice`: the one sent). */
export function forcedButProseEffect(toolChoice: ToolChoice | null): ForceToolUseEffect {
  if (toolChoice === 'auto' || toolChoice === 'required') return PROSE[toolChoice];
  return { policy: P, kind: 'forced-but-prose', count: 1, detail: { toolChoice } };
}

/** The `schema-answer` effect (toolproof_schema_answers_total), the same for both paths. */
export function schemaAnswerEffect(outcome: SchemaOutcome): ForceToolUseEffect {
  return SCHEMA_ANSWER.get(outcome) ?? { policy: P, kind: 'schema-answer', count: 1, detail: { outcome } };
}

/** The `final-answer` effect, the same for both paths (a field name the model chose: its own). */
export function finalAnswerEffect(
  mixed: boolean,
  truncated: boolean,
  raw: boolean,
  field: string | undefined,
): ForceToolUseEffect {
  if (field !== undefined) return finalAnswerOf(mixed, truncated, raw, field);
  return FINAL_ANSWER[(mixed ? 4 : 0) + (truncated ? 2 : 0) + (raw ? 1 : 0)]!;
}

/** The client's "required" went as "auto" (the upstream rejects "required"): the log line's effects. */
export const REQUIRED_AS_AUTO_EFFECT = constantEffect<ForceToolUseEffect>({
  policy: P,
  kind: 'required-as-auto',
  count: 1,
});
