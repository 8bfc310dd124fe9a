/**
 * history-repair (request side, runs first): makes the conversation acceptable to strict
 * backends before anything goes upstream. See history-repair/repair.ts for the invariants.
 *
 * Mistral-family templates raise on histories agents send every turn: "Tool call IDs should be
 * alphanumeric strings with length 9!" (the backend's own 32-character ids included) and "After
 * the optional system message, conversation roles must alternate user/assistant/..." (a user turn
 * right after tool results; mistral_common, vLLM's Mistral tokenizer, says "Unexpected role 'user'
 * after role 'tool'"). A model toolproof was not told about (`nineCharIds`,
 * `bridgeToolToUser`, `mergeSameRole` off unless configured) refused every such turn (llama-
 * server's 400 carries the Jinja exception). Once refused so (Policy.refusal: remembered per
 * upstream and model), the three repairs docs/configuration.md sets for Mistral are on, from the
 * refused turn on, the same bytes every turn: ids mapped to 9 alphanumerics (nine-char-ids.ts), a
 * tool result followed by a user turn given the fixed bridge line, adjacent user or plain
 * assistant turns joined. One fact for both messages: the templates that raise one raise the other.
 */
import type { ModelSettings } from '../../protocol/settings.js';
import { refusalSays } from '../kit/media-refusal.js';
import { type Policy, type PolicyContext, wasRefused } from '../types.js';
import { describeHistoryRepairEffect, HISTORY_REPAIR_POLICY, type HistoryRepairEffect } from './effects.js';
import { repairHistory } from './repair.js';
import { historyRepairSettings } from './settings.js';

type RepairSettings = ModelSettings['historyRepair'];

/** The refusal's fact: the upstream's template holds the Mistral rules. */
const TEMPLATE_RULES_FACT = 'template-rules';

/** The Mistral templates' raise_exception texts (simulator/llama-server-validate.ts has the whole 400s). */
const SAYS: readonly RegExp[] = [
  /Tool call IDs should be alphanumeric strings with length 9/i,
  /conversation roles must alternate user\/assistant/i,
  // mistral_common's message-structure check (vLLM with the Mistral tokenizer), before it let a
  // user turn follow tool results; the bridge line is the repair.
  /Unexpected role 'user' after role 'tool'/,
];

/** Whether `settings` already make every repair the rules need. */
const withinRules = (s: RepairSettings): boolean => s.nineCharIds && s.bridgeToolToUser && s.mergeSameRole;

/** Per settings object, its repair settings with the three on: one object, so memos stay. */
const learnt = new WeakMap<ModelSettings, RepairSettings>();

function repairSettings(ctx: PolicyContext): RepairSettings {
  const own = ctx.settings.historyRepair;
  if (withinRules(own) || !wasRefused(ctx, TEMPLATE_RULES_FACT)) return own;
  let on = learnt.get(ctx.settings);
  if (!on)
    learnt.set(
      ctx.settings,
      (on = Object.freeze({ ...own, nineCharIds: true, bridgeToolToUser: true, mergeSameRole: true })),
    );
  return on;
}

export const historyRepairPolicy: Policy<HistoryRepairEffect> = {
  name: HISTORY_REPAIR_POLICY,
  settingsSchema: historyRepairSettings,
  enabled: (settings) => settings.historyRepair.enabled,
  describeEffect: describeHistoryRepairEffect,
  refusal: {
    fact: TEMPLATE_RULES_FACT,
    decision: 'template-rules-refused',
    refused: (status, body, _sent, ctx) =>
      !withinRules(ctx.settings.historyRepair) && refusalSays(SAYS, status, body),
    describe: (status) =>
      `the upstream's chat template raised on the history (status ${status}: 9-character tool call ids, alternating roles): sent again with the ids mapped, a bridge line after tool results and same-role turns joined`,
  },
  onRequest(request, ctx) {
    if (!Array.isArray(request.messages)) return { action: 'continue', request, effects: [] };
    const { messages, effects } = repairHistory(request.messages, repairSettings(ctx));
    return { action: 'continue', request: effects.length > 0 ? { ...request, messages } : request, effects };
  },
};
