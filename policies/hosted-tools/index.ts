/**
 * hosted-tools (request side): tools only the API vendor's servers run (Responses `web_search`,
 * `file_search`...; Anthropic server tools) have no chat shape, so the front door's translation
 * leaves them out and says which (PolicyContext.hostedTools, with the 400 in its own API's shape).
 * Whether that is acceptable is this policy's setting: `hostedTools: drop` (default) lets the
 * request go on without them (reported by the door: header, log line, metric); `reject` refuses
 * the request with that 400, naming the tool, before anything goes upstream.
 */
import type { Policy, SettingsSchema } from '../types.js';

export const HOSTED_TOOLS_POLICY = 'hosted-tools';

export const hostedToolsSettings: SettingsSchema = Object.freeze({
  hostedTools: { enum: ['drop', 'reject'] },
});

export const hostedToolsPolicy: Policy<never> = {
  name: HOSTED_TOOLS_POLICY,
  refusesOnDoorFacts: true,
  settingsSchema: hostedToolsSettings,
  // Only a model that refuses them has anything to do: dropping is the translation's.
  enabled: (settings) => settings.hostedTools === 'reject',
  onRequest(request, ctx) {
    const refusal = ctx.hostedTools?.refusal;
    if (refusal) return { action: 'reject', error: refusal, effects: [] };
    return { action: 'continue', request, effects: [] };
  },
};
