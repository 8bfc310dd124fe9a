/**
 * preserve-thinking (request side): asks the chat template to keep past reasoning
 * (settings.preserveThinking; chat_template_kwargs `preserve_thinking: true`, `clear_thinking:
 * false`, protocol/template-kwargs.ts). Without it such templates drop the reasoning of earlier
 * turns, so the prompt's history changes after every tool turn (docs/prefix.md). A key the client
 * set itself wins. First in the table: it was applied to the client's request before any other
 * rewrite, and it only appends a key after the messages and tools.
 */
import { withPreserveThinking } from '../../protocol/template-kwargs.js';
import type { Policy, SettingsSchema } from '../types.js';

export const PRESERVE_THINKING_POLICY = 'preserve-thinking';

/** Its settings slice ('auto' is resolved at start-up by server/template-probe.ts). */
export const preserveThinkingSettings: SettingsSchema = Object.freeze({
  preserveThinking: { enum: [true, false, 'auto'] },
});

export const preserveThinkingPolicy: Policy<never> = {
  name: PRESERVE_THINKING_POLICY,
  settingsSchema: preserveThinkingSettings,
  // Off by default; a model whose 'auto' was not resolved to true sends nothing either.
  enabled: (settings) => settings.preserveThinking === true,
  onRequest(request) {
    return { action: 'continue', request: withPreserveThinking(request), effects: [] };
  },
};
