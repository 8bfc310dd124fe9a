/** force-tool-use's settings slice (protocol/settings.ts has the defaults). */
import type { SettingsSchema } from '../types.js';

export const forceToolUseSettings: SettingsSchema = Object.freeze({
  forceToolUse: { type: 'boolean' },
  finalAnswerTool: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' },
});
