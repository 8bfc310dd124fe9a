/** guided-schema's effects: schema keywords left out because the backend's grammar refused them. */
import type { EffectRecord } from '../types.js';

export const GUIDED_SCHEMA_POLICY = 'guided-schema';

export interface GuidedSchemaEffect {
  policy: typeof GUIDED_SCHEMA_POLICY;
  kind: 'dropped-schema-keywords';
  count: number;
  /** The keywords left out (each once) and where: tool names, or `response_format`. */
  detail: { keywords: string[]; schemas: string[] };
}

/** The log line's `effects` only: toolproof still checks the answer against the whole schema. */
export function describeGuidedSchemaEffect(_effect: GuidedSchemaEffect): EffectRecord | undefined {
  return undefined;
}
