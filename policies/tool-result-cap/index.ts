/**
 * tool-result-cap (request side, off by default: `maxToolResultTokens` per model): a tool result
 * longer than the cap is cut to its head and tail with a marker in between (cut.ts). One `cat` of
 * a log fills a 32k window for good: the agent sends that result again on every later turn, and
 * the model's own compaction then throws the whole session away. The cut is made from the
 * result's own characters, so every turn sends the same bytes.
 */
import type { ChatMessage, ContentPart } from '../../protocol/openai.js';
import { EffectTally } from '../kit/effects.js';
import type { Policy } from '../types.js';
import { cutToolResult } from './cut.js';
import {
  describeToolResultCapEffect,
  TOOL_RESULT_CAP_POLICY,
  type ToolResultCapEffect,
  type ToolResultCapKind,
} from './effects.js';

function cutContent(content: ChatMessage['content'], max: number): ChatMessage['content'] {
  if (typeof content === 'string') return cutToolResult(content, max);
  if (!Array.isArray(content)) return content;
  let out: ContentPart[] | undefined;
  content.forEach((p, i) => {
    if (p?.type !== 'text' || typeof p.text !== 'string') return;
    const cut = cutToolResult(p.text, max);
    if (cut === p.text) return;
    out ??= content.slice();
    out[i] = { ...p, text: cut };
  });
  return out ?? content;
}

export const toolResultCapPolicy: Policy<ToolResultCapEffect> = {
  name: TOOL_RESULT_CAP_POLICY,
  settingsSchema: Object.freeze({ maxToolResultTokens: { type: 'integer', minimum: 0 } }),
  enabled: (settings) => settings.maxToolResultTokens > 0,
  describeEffect: describeToolResultCapEffect,
  onRequest(request, ctx) {
    const max = ctx.settings.maxToolResultTokens;
    if (!Array.isArray(request.messages) || !(max > 0)) return { action: 'continue', request, effects: [] };
    const tally = new EffectTally<typeof TOOL_RESULT_CAP_POLICY, ToolResultCapKind>(TOOL_RESULT_CAP_POLICY);
    let messages: ChatMessage[] | undefined;
    request.messages.forEach((m, i) => {
      if (m?.role !== 'tool') return;
      const content = cutContent(m.content, max);
      if (content === m.content) return;
      messages ??= request.messages.slice();
      messages[i] = { ...m, content };
      tally.add('tool-result-cut');
    });
    if (!messages) return { action: 'continue', request, effects: [] };
    return { action: 'continue', request: { ...request, messages }, effects: tally.toEffects() };
  },
};
