/** leak-recovery's settings slice (protocol/settings.ts has the defaults; server/config.ts checks parser names). */
import type { SettingsSchema } from '../types.js';

export const leakRecoverySettings: SettingsSchema = Object.freeze({
  parsers: { anyOf: [{ const: 'all' }, { type: 'array', items: { type: 'string', minLength: 1 } }] },
  recovery: { enum: ['auto', 'always', 'off'] },
  startsInReasoning: { anyOf: [{ type: 'boolean' }, { enum: ['maybe', 'auto'] }] },
  maxHeldBytes: { type: 'integer', minimum: 1024 },
});

/** startsInReasoning as the reader takes it: an 'auto' start-up left unresolved reads as false. */
export function readerStartsInReasoning(v: boolean | 'maybe' | 'auto'): boolean | 'maybe' {
  return v === 'auto' ? false : v;
}
