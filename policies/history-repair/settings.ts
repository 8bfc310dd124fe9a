/** history-repair's settings slice: the `historyRepair` section (protocol/settings.ts has the defaults). */
import type { SettingsSchema } from '../types.js';

export const historyRepairSettings: SettingsSchema = Object.freeze({
  historyRepair: {
    type: 'object',
    additionalProperties: false,
    properties: {
      enabled: { type: 'boolean' },
      missingResultContent: { type: 'string' },
      orphanResults: { enum: ['as-user', 'as-assistant', 'drop'] },
      nineCharIds: { type: 'boolean' },
      bridgeToolToUser: { type: 'boolean' },
      toolCallContent: { enum: ['keep', 'null', 'empty'] },
      mergeSameRole: { type: 'boolean' },
      systemMessages: { enum: ['merge', 'keep'] },
    },
  },
});
