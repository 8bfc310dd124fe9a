/**
 * history-repair (request side, runs first): makes the conversation acceptable to strict
 * backends before anything goes upstream. See history-repair/repair.ts for the invariants.
 */
import type { Policy } from '../types.js';
import { describeHistoryRepairEffect, HISTORY_REPAIR_POLICY, type HistoryRepairEffect } from './effects.js';
import { repairHistory } from './repair.js';
import { historyRepairSettings } from './settings.js';

export const historyRepairPolicy: Policy<HistoryRepairEffect> = {
  name: HISTORY_REPAIR_POLICY,
  settingsSchema: historyRepairSettings,
  enabled: (settings) => settings.historyRepair.enabled,
  describeEffect: describeHistoryRepairEffect,
  onRequest(request, ctx) {
    if (!Array.isArray(request.messages)) return { action: 'continue', request, effects: [] };
    const { messages, effects } = repairHistory(request.messages, ctx.settings.historyRepair);
    return { action: 'continue', request: effects.length > 0 ? { ...request, messages } : request, effects };
  },
};
