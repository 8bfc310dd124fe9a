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
import { cutToolResult, estimateTokens } from './cut.js';
import {
  describeToolResultCapEffect,
  TOOL_RESULT_CAP_POLICY,
  type ToolResultCapEffect,
  type ToolResultCapKind,
} from './effects.js';

/**
 * Each text part's share of `max` tokens, so the result as a whole fits: parts under an equal
 * share keep all they have, the others split what is left equally (max-min fair). Several parts
 * each under the cap no longer add up past it; the shares come from the result's own parts only.
 */
function shares(tokens: readonly number[], max: number): number[] {
  const order = tokens.map((_, i) => i).sort((a, b) => tokens[a]! - tokens[b]!);
  const out = tokens.slice();
  let left = max;
  for (let k = 0; k < order.length; k++) {
    const i = order[k]!;
    const fair = Math.floor(left / (order.length - k));
    if (tokens[i]! <= fair) {
      left -= tokens[i]!;
      continue;
    }
    for (let j = k; j < order.length; j++) out[order[j]!] = Math.max(1, fair);
    break;
  }
  return out;
}

function cutContent(content: ChatMessage['content'], max: number): ChatMessage['content'] {
  if (typeof content === 'string') return cutToolResult(content, max);
  if (!Array.isArray(content)) return content;
  const texts: number[] = [];
  content.forEach((p, i) => {
    if (p?.type === 'text' && typeof p.text === 'string') texts.push(i);
  });
  if (texts.length === 0) return content;
  const tokens = texts.map((i) => estimateTokens((content[i] as { text: string }).text));
  if (tokens.reduce((a, b) => a + b, 0) <= max) return content;
  const budget = shares(tokens, max);
  let out: ContentPart[] | undefined;
  texts.forEach((i, k) => {
    const p = content[i] as ContentPart & { text: string };
    const cut = cutToolResult(p.text, budget[k]!);
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
