/** corrective-retry's settings slice (protocol/settings.ts has the defaults). */
import type { SettingsSchema } from '../types.js';

export const correctiveRetrySettings: SettingsSchema = Object.freeze({
  maxRetries: { type: 'integer', minimum: 0, maximum: 3 },
  validateArguments: { type: 'boolean' },
});
