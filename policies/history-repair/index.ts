/**
 * history-repair (request side, runs first): makes the conversation acceptable to strict
 * backends before anything goes upstream. See history-repair/repair.ts for the invariants.
 *
 * Mistral-family templates take only 9-alphanumeric tool call ids (`nineCharIds`, off unless
 * configured). A model toolproof was not told about refused every turn that carries a call of
 * another id (llama-server's 400, the Jinja exception "Tool call IDs should be alphanumeric
 * strings with length 9!"; the agent sends those ids again each turn): once refused so
 * (Policy.refusal: remembered per upstream and model), the ids are mapped as `nineCharIds` maps
 * them, from the refused turn on, the same ids every turn (nine-char-ids.ts).
 */
import type { ModelSettings } from '../../protocol/settings.js';
import { refusalSays } from '../kit/media-refusal.js';
import { type Policy, wasRefused } from '../types.js';
import { describeHistoryRepairEffect, HISTORY_REPAIR_POLICY, type HistoryRepairEffect } from './effects.js';
import { repairHistory } from './repair.js';
import { historyRepairSettings } from './settings.js';

/** The refusal's fact: the template takes 9-alphanumeric tool call ids only. */
const NINE_CHAR_FACT = 'nine-char-ids';

/** The Mistral templates' raise_exception text (simulator/llama-server-validate.ts has the whole 400). */
const NINE_CHAR_IDS: readonly RegExp[] = [/Tool call IDs should be alphanumeric strings with length 9/i];

/** Per settings object, its repair settings with nineCharIds on: one object, so memos stay. */
const withNine = new WeakMap<ModelSettings, ModelSettings['historyRepair']>();

function repairSettings(settings: ModelSettings, nine: boolean): ModelSettings['historyRepair'] {
  const own = settings.historyRepair;
  if (!nine || own.nineCharIds) return own;
  let on = withNine.get(settings);
  if (!on) withNine.set(settings, (on = Object.freeze({ ...own, nineCharIds: true })));
  return on;
}

export const historyRepairPolicy: Policy<HistoryRepairEffect> = {
  name: HISTORY_REPAIR_POLICY,
  settingsSchema: historyRepairSettings,
  enabled: (settings) => settings.historyRepair.enabled,
  describeEffect: describeHistoryRepairEffect,
  refusal: {
    fact: NINE_CHAR_FACT,
    decision: 'nine-char-ids-refused',
    refused: (status, body, _sent, ctx) =>
      !ctx.settings.historyRepair.nineCharIds && refusalSays(NINE_CHAR_IDS, status, body),
    describe: (status) =>
      `the upstream's chat template takes only 9-character alphanumeric tool call ids (status ${status}): sent again with every id mapped to 9 alphanumerics`,
  },
  onRequest(request, ctx) {
    if (!Array.isArray(request.messages)) return { action: 'continue', request, effects: [] };
    const settings = repairSettings(ctx.settings, wasRefused(ctx, NINE_CHAR_FACT));
    const { messages, effects } = repairHistory(request.messages, settings);
    return { action: 'continue', request: effects.length > 0 ? { ...request, messages } : request, effects };
  },
};
