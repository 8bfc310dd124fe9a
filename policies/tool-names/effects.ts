/** tool-names' effects: tool names sent upstream under a portable alias. */
import type { EffectRecord } from '../types.js';

export const TOOL_NAMES_POLICY = 'tool-names';

export interface ToolNamesEffect {
  policy: typeof TOOL_NAMES_POLICY;
  kind: 'tool-names-aliased';
  /** The distinct names that went as aliases. */
  count: number;
}

/** The log line's `effects` only: the refusal's decision (`tool-names-refused`) already counts and traces the turn. */
export function describeToolNamesEffect(_effect: ToolNamesEffect): EffectRecord | undefined {
  return undefined;
}
