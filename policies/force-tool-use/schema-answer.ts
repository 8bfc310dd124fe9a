/**
 * Answers in the client's JSON schema (ToolSet.answer: chat `response_format` json_schema or
 * json_object, and the Responses / Messages formats translated into it). Forced, the synthetic
 * answer tool's parameters are the schema (kit/answer-format.ts), so the answer is the call's
 * arguments: delivered as the JSON text the client asked for (the arguments as the model wrote
 * them, or the value of the wrapping key for a schema that is not an object schema), validated
 * with the same validator as every call. One decision for both paths (the non-streamed unwrap and
 * the stream hook's SchemaAnswerDecoder), so streamed and non-streamed answers agree. Not
 * forced (no tools), the backend's answer is only checked and counted.
 */
import type { JsonObject } from '../../protocol/openai.js';
import type { AnswerFormat } from '../kit/answer-format.js';
import { WRAP_KEY } from '../kit/answer-format.js';
import { isPlainObject, tryParseJson } from '../kit/canonical-arguments.js';
import { validateArguments } from '../kit/validation/validate-arguments.js';
import type { CompileBudget } from '../types.js';

/** What became of an answer in a schema: toolproof_schema_answers_total's `outcome`. */
export type SchemaOutcome = 'valid' | 'invalid' | 'not-json' | 'unchecked';

export interface SchemaAnswer {
  /** The content the client gets: the answer's JSON text (the raw arguments when they are no JSON object). */
  text: string;
  /** Not a valid answer: re-asked while a retry can follow, else delivered as it is and counted. */
  invalid: boolean;
  /** The raw arguments are delivered (they are no JSON object). */
  raw: boolean;
  outcome: SchemaOutcome;
  /** What the validator found wrong, for the re-ask's feedback. */
  issues: string[];
}

function check(
  format: AnswerFormat,
  args: Record<string, unknown>,
  budget: CompileBudget | undefined,
): { outcome: SchemaOutcome; issues: string[] } {
  const result = validateArguments(format.parameters, args, budget);
  if (!result.valid)
    return {
      outcome: 'invalid',
      issues: result.issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)),
    };
  if (result.schemaError || (result.skipped?.length ?? 0) > 0) return { outcome: 'unchecked', issues: [] };
  return { outcome: 'valid', issues: [] };
}

/** A forced answer: the answer tool's complete arguments, decided once for both paths. */
export function decodeSchemaAnswer(
  rawArgs: unknown,
  format: AnswerFormat,
  budget?: CompileBudget,
): SchemaAnswer {
  const raw = typeof rawArgs === 'string' ? rawArgs : (JSON.stringify(rawArgs ?? null) ?? '');
  const parsed = tryParseJson(raw);
  if (!parsed.ok || !isPlainObject(parsed.value))
    return {
      text: raw,
      invalid: true,
      raw: raw.trim() !== '',
      outcome: 'not-json',
      issues: ['the arguments must be one JSON object'],
    };
  const args = parsed.value;
  const { outcome, issues } = check(format, args, budget);
  let text = raw.trim();
  if (format.wrapped) {
    // A schema that is not an object schema: the answer is the wrapping key's value.
    text = Object.hasOwn(args, WRAP_KEY) ? (JSON.stringify(args[WRAP_KEY]) ?? 'null') : text;
  }
  return { text, invalid: outcome === 'invalid', raw: false, outcome, issues };
}

/** Not forced (no tools): the backend's content, checked against the client's format. */
export function checkSchemaContent(
  content: unknown,
  format: AnswerFormat,
  budget?: CompileBudget,
): SchemaOutcome {
  if (typeof content !== 'string') return 'not-json';
  const parsed = tryParseJson(content);
  if (!parsed.ok) return 'not-json';
  const args: unknown = format.wrapped ? { [WRAP_KEY]: parsed.value } : parsed.value;
  if (!isPlainObject(args)) return format.kind === 'json_object' ? 'not-json' : 'invalid';
  return check(format, args, budget).outcome;
}

/** The answer tool for a schema answer: its parameters are the client's schema. */
export function schemaAnswerTool(name: string, parameters: JsonObject) {
  return {
    type: 'function' as const,
    function: {
      name,
      description:
        'Give your final answer to the user by calling this tool once you need no more tools: its arguments ARE the answer, in the JSON shape its parameters describe. Do not answer in plain text.',
      parameters,
    },
  };
}

/**
 * The stream's side of the same decision: holds the arguments (the answer is delivered whole,
 * once it is complete and checked, so a re-asked answer never reached the client) and decides
 * at the end with decodeSchemaAnswer. Shaped like JsonStringFieldDecoder for the stream hook.
 */
export class SchemaAnswerDecoder {
  readonly state: { alias?: string } = {};
  private decided: SchemaAnswer | undefined;
  constructor(
    private readonly format: AnswerFormat,
    private readonly budget: CompileBudget | undefined,
  ) {}
  push(_fragment: string): string {
    return '';
  }
  finish(): string {
    return '';
  }
  decide(raw: string): SchemaAnswer {
    this.decided ??= decodeSchemaAnswer(raw, this.format, this.budget);
    return this.decided;
  }
}
