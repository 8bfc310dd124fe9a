/**
 * tool-result-cap (request side, `maxToolResultTokens` per model): a tool result longer than the
 * cap is cut to its head and tail with a marker in between (kit/cut.ts). One `cat` of a log fills a
 * 32k window for good: the agent sends that result again on every later turn, and the model's own
 * compaction then throws the whole session away. The cut is made from the result's own
 * characters, so every turn sends the same bytes.
 *
 * With no cap set and the model's window known (`contextWindow`, or read from the backend), a
 * result the window cannot hold at all (estimated over the whole window: the estimate is a lower
 * bound, so the backend would refuse every request carrying it, the agent's compaction request
 * too) is cut to a quarter of the window, the size suggested for the cap. Results that might fit
 * are left to the agent.
 *
 * With the window known, results that each fit but together push the prompt over it (the backend
 * refused it for its length, or it is far past the window whatever the tokenizer) are cut too,
 * the older ones first, each to a small head and tail by its own characters, at a boundary that
 * moves in quarter-window steps, so later turns cut the same results the same way (overflow.ts).
 * Together the older results keep a sixteenth of the window, spent in order: past it, each is one
 * line (leftOutNote), so no count of them overflows the window by itself. The older tool turns,
 * calls and all, keep an eighth: past it they are left out but the first, whose result says so
 * (older-turns.ts), so no count of calls overflows it either.
 */
import type { ChatMessage, ContentPart } from '../../protocol/openai.js';
import { EffectTally } from '../kit/effects.js';
import { type Policy, PROMPT_OVER_WINDOW } from '../types.js';
import { cutToolResult, estimateTokens } from '../kit/cut.js';
import { keptTokens, resultsToCut } from './overflow.js';
import { calibratedWindow } from '../kit/overflow.js';
import { leaveOutOlderTurns, resultLeftOutNote, turnsLeftOutNote } from './older-turns.js';
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

/** What a model's results are held to: cut when over `over` tokens, to `max` tokens. */
export interface ResultCap {
  over: number;
  max: number;
}

/** The cap a model's settings give: its own, the backstop of a known window, or none. */
export function resultCap(settings: {
  maxToolResultTokens: number;
  contextWindow: number;
}): ResultCap | undefined {
  const own = settings.maxToolResultTokens;
  if (own > 0) return { over: own, max: own };
  const window = settings.contextWindow;
  if (window > 0) return { over: window, max: Math.max(1, Math.floor(window / 4)) };
  return undefined;
}

function cutContent(content: ChatMessage['content'], cap: ResultCap): ChatMessage['content'] {
  const { over, max } = cap;
  if (typeof content === 'string') {
    // Every character is at least a third of a token and at most one: most results need no count.
    if (content.length <= over || (over !== max && estimateTokens(content) <= over)) return content;
    return cutToolResult(content, max);
  }
  if (!Array.isArray(content)) return content;
  const texts: number[] = [];
  let chars = 0;
  content.forEach((p, i) => {
    if (p?.type === 'text' && typeof p.text === 'string') {
      texts.push(i);
      chars += p.text.length;
    }
  });
  if (texts.length === 0 || chars <= over) return content;
  const tokens = texts.map((i) => estimateTokens((content[i] as { text: string }).text));
  if (tokens.reduce((a, b) => a + b, 0) <= over) return content;
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

/** The text parts of a result's content, joined. */
function textOf(content: ChatMessage['content']): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let out = '';
  for (const p of content) if (p?.type === 'text' && typeof p.text === 'string') out += p.text;
  return out;
}

/** `content` with its text as `note`: its other parts (an image) stay for their own policies. */
function withText(content: ChatMessage['content'], note: string): ChatMessage['content'] {
  if (!Array.isArray(content)) return note;
  const out: ContentPart[] = [];
  let placed = false;
  for (const p of content) {
    if (p?.type !== 'text') out.push(p);
    else if (!placed) {
      out.push({ ...p, text: note });
      placed = true;
    }
  }
  return out;
}

/** One line in place of an older result past the room the older results share. */
export const leftOutNote = (text: string): string =>
  resultLeftOutNote(text, " to fit the model's context window");

export const toolResultCapPolicy: Policy<ToolResultCapEffect> = {
  name: TOOL_RESULT_CAP_POLICY,
  settingsSchema: Object.freeze({ maxToolResultTokens: { type: 'integer', minimum: 0 } }),
  enabled: (settings) => resultCap(settings) !== undefined,
  describeEffect: describeToolResultCapEffect,
  onRequest(request, ctx) {
    const cap = resultCap(ctx.settings);
    if (!Array.isArray(request.messages) || !cap) return { action: 'continue', request, effects: [] };
    const tally = new EffectTally<typeof TOOL_RESULT_CAP_POLICY, ToolResultCapKind>(TOOL_RESULT_CAP_POLICY);
    let messages: ChatMessage[] | undefined;
    const cut = new Set<number>();
    const hold = (i: number, m: ChatMessage, to: ResultCap) => {
      const content = cutContent(m.content, to);
      if (content === m.content) return;
      messages ??= request.messages.slice();
      messages[i] = { ...m, content };
      cut.add(i);
    };
    request.messages.forEach((m, i) => {
      if (m?.role === 'tool') hold(i, m, cap);
    });
    // Results that each fit and together overflow a known window: the older ones cut (overflow.ts).
    const known = ctx.settings.contextWindow;
    if (known > 0) {
      const refused = ctx.refused?.now.has(PROMPT_OVER_WINDOW) === true;
      // The window as the backend counts the prompt (kit/overflow.ts calibratedWindow).
      const window = calibratedWindow(known, ctx.estimateScale);
      // Cut from the result as sent (not from its cut above): the note's counts are the result's own.
      const keep = Math.min(keptTokens(window), cap.max);
      // What the older results may still take together: a sixteenth of the window. At a
      // sixty-fourth each (with its marker) and no total, forty reads of ~400 tokens were past an
      // 8k window (every later turn refused). Spent in the prompt's order: a result's fate
      // depends only on the older results before it, and the boundary only moves on, so each
      // older result is the same bytes every turn (docs/prefix.md, exception 9).
      let room = Math.max(1, Math.floor(window / 16));
      const { older, results } = resultsToCut(request, messages ?? request.messages, known, refused, window);
      for (const i of results) {
        const m = request.messages[i]!;
        const content = cutContent(m.content, { over: 2 * keep, max: keep });
        // What it takes of the room: what it keeps of its text (a short one, all of it; one that
        // cutting would not shorten, thousands of tiny parts, as much as a cut one).
        const text = textOf(content);
        const cost = content === m.content ? Math.min(estimateTokens(text), keep) : keep;
        if (cost > room) {
          const note = leftOutNote(textOf(m.content));
          // A note about as long as what it replaces would save nothing: the text stays.
          if (note.length * 2 <= text.length) {
            room = 0;
            messages ??= request.messages.slice();
            messages[i] = { ...m, content: withText(m.content, note) };
            cut.add(i);
            continue;
          }
        }
        room = Math.max(0, room - cost);
        if (content === m.content) continue;
        messages ??= request.messages.slice();
        messages[i] = { ...m, content };
        cut.add(i);
      }
      // Past the room of the older turns (calls and all), whole turns are left out (older-turns.ts).
      const left =
        older > 0
          ? leaveOutOlderTurns(messages ?? request.messages, older, window, (k, last) => {
              const m = request.messages[k]!;
              const text = textOf(m.content);
              cut.add(k);
              return {
                ...m,
                content: withText(m.content, last ? turnsLeftOutNote(text) : leftOutNote(text)),
              };
            })
          : undefined;
      if (left) {
        for (const k of left.removed) cut.add(k);
        messages = left.messages;
      }
    }
    if (!messages) return { action: 'continue', request, effects: [] };
    for (let k = 0; k < cut.size; k++) tally.add('tool-result-cut');
    return { action: 'continue', request: { ...request, messages }, effects: tally.toEffects() };
  },
};
