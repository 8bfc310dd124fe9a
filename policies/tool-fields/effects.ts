/** tool-fields' effects: tool-only fields left out of a request that carries no tool. */
import type { EffectRecord } from '../types.js';

export const TOOL_FIELDS_POLICY = 'tool-fields';

export interface ToolFieldsEffect {
  policy: typeof TOOL_FIELDS_POLICY;
  kind: 'dropped-tool-fields';
  count: number;
  /** The fields left out, in the request's key order. */
  detail: { fields: string[] };
}

/** The log line's `effects` only: nothing the client gets changes, and no counter is asked for. */
export function describeToolFieldsEffect(_effect: ToolFieldsEffect): EffectRecord | undefined {
  return undefined;
}
