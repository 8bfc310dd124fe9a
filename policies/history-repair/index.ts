/**
 * history-repair (request side, runs first): makes the conversation acceptable to strict
 * backends before anything goes upstream. See history-repair/repair.ts for the invariants.
 */
import type { Policy } from '../types.js';
import { tallied } from '../kit/effects.js';
import { HISTORY_REPAIR_POLICY, repairHistory } from './repair.js';

export const historyRepairPolicy: Policy = {
  name: HISTORY_REPAIR_POLICY,
  enabled: (settings) => settings.historyRepair.enabled,
  describeEffect: (effect) => tallied('repairs', effect),
  onRequest(request, ctx) {
    if (!Array.isArray(request.messages)) return { action: 'continue', request, effects: [] };
    const { messages, effects } = repairHistory(request.messages, ctx.settings.historyRepair);
    return { action: 'continue', request: effects.length > 0 ? { ...request, messages } : request, effects };
  },
};
