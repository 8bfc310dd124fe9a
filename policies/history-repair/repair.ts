/**
 * The history repair itself (the policy in ../history-repair.ts only wires it to settings).
 *
 * Invariants of the output, whatever the input:
 * - every assistant tool call has a string id and a tool message answering it, placed in the run
 *   of tool messages right after the call, in the order of the calls;
 * - no tool message answers an id that no preceding call in its run carries;
 * - every `arguments` is a JSON string of an object;
 * - nothing the client wrote is silently lost: orphan results become notes (unless 'drop',
 *   which is still reported) and unusable arguments are quoted in the paired tool result;
 * - repairing a repaired history changes nothing (idempotent) and reports nothing.
 */
import type { ChatMessage, ToolCall } from '../../protocol/openai.js';
import type { HistoryRepairSettings } from '../../protocol/settings.js';
import { canonicalizeArguments, isPlainObject } from '../kit/canonical-arguments.js';
import { EffectTally } from '../kit/effects.js';
import { HISTORY_REPAIR_POLICY, type HistoryRepairEffect, type HistoryRepairKind } from './effects.js';
import { contentText, joinContents, prefixContent } from './message-content.js';
import { buildNineCharIdMap } from './nine-char-ids.js';
import { StringMap, StringSet } from '../../protocol/string-set.js';
import { pushAll } from '../../protocol/append-all.js';

/** The assistant text inserted between a tool message and a following user message. */
export const BRIDGE_MESSAGE_CONTENT = 'I have received the tool results.';

/** The user text put before a conversation whose first turn is the assistant's (mergeSameRole). */
export const OPENING_USER_CONTENT = '(continued)';

export interface HistoryRepairResult {
  messages: ChatMessage[];
  effects: HistoryRepairEffect[];
}

interface RepairedCall {
  call: ToolCall;
  /** The id the client sent, if it sent one. */
  originalId: string | undefined;
  /** Note to put in the call's result when its arguments had to be replaced. */
  note: string | undefined;
}

type RepairTally = EffectTally<typeof HISTORY_REPAIR_POLICY, HistoryRepairKind>;

const ARGUMENT_EFFECT: Record<string, HistoryRepairKind | undefined> = {
  object: 'object-arguments',
  canonicalized: 'canonicalized-arguments',
  repaired: 'repaired-arguments',
  invalid: 'invalid-arguments',
};

function idOf(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function collectClientIds(messages: readonly ChatMessage[]): StringSet {
  const ids = new StringSet();
  for (const m of messages) {
    if (Array.isArray(m.tool_calls)) {
      for (const c of m.tool_calls as unknown[]) {
        const id = isPlainObject(c) ? idOf(c.id) : undefined;
        if (id) ids.add(id);
      }
    }
    const tid = idOf(m.tool_call_id);
    if (tid) ids.add(tid);
  }
  return ids;
}

/**
 * The ids in use (the client's, and those handed out): collected from the whole history only
 * when a first call needs a fresh id. A history whose calls all carry their own ids, most of
 * them, pays no Set of every id.
 */
class TakenIds {
  private ids: StringSet | undefined;
  constructor(private readonly messages: readonly ChatMessage[]) {}

  fresh(base: string): string {
    const taken = (this.ids ??= collectClientIds(this.messages));
    let id = base;
    for (let n = 1; taken.has(id); n++) id = `${base}_${n}`;
    taken.add(id);
    return id;
  }
}

function repairCall(
  raw: unknown,
  msgIndex: number,
  callIndex: number,
  seenInMessage: StringSet,
  taken: TakenIds,
  tally: RepairTally,
): RepairedCall {
  const obj = isPlainObject(raw) ? raw : {};
  const fn = isPlainObject(obj.function) ? obj.function : {};
  const originalId = idOf(obj.id);
  let id = originalId;
  if (id === undefined) {
    id = taken.fresh(`call_h${msgIndex}_${callIndex}`);
    tally.add('missing-id');
  } else if (seenInMessage.has(id)) {
    id = taken.fresh(`call_h${msgIndex}_${callIndex}`);
    tally.add('duplicate-id');
  }
  seenInMessage.add(id);
  if (obj.type !== 'function') tally.add('missing-type');

  const args = canonicalizeArguments(fn.arguments);
  const effect = ARGUMENT_EFFECT[args.outcome];
  if (effect) tally.add(effect);
  const name = typeof fn.name === 'string' ? fn.name : '';
  const note =
    args.outcome === 'invalid'
      ? `[toolproof: the arguments of this ${name || 'tool'} call were not valid JSON and were replaced by {}. Original arguments: ${args.raw ?? ''}]`
      : undefined;
  // A call that needs no change is kept as the client's own object (no two copies per call).
  const same = id === originalId && obj.type === 'function' && fn.name === name && fn.arguments === args.text;
  const call: ToolCall =
    same && obj === raw && fn === obj.function
      ? (raw as unknown as ToolCall)
      : { ...obj, id, type: 'function', function: { ...fn, name, arguments: args.text } };
  return { call, originalId, note };
}

function orphanNote(
  tool: ChatMessage,
  mode: HistoryRepairSettings['orphanResults'],
): ChatMessage | undefined {
  if (mode === 'drop') return undefined;
  const id = idOf(tool.tool_call_id);
  const text = contentText(tool.content);
  const note = `[Result of tool call ${id ?? '(no id)'}, which matches no earlier tool call]\n${text}`;
  return { role: mode === 'as-assistant' ? 'assistant' : 'user', content: note };
}

/** Pairs one assistant turn's calls with the run of tool messages after it. */
function pairResults(
  calls: RepairedCall[],
  block: readonly ChatMessage[],
  settings: HistoryRepairSettings,
  tally: RepairTally,
): ChatMessage[] {
  const resultOf: (number | undefined)[] = calls.map(() => undefined);
  const pending: number[] = [];

  // The first unanswered call of a list, found without rescanning: answered calls never become
  // unanswered, so each list's cursor only moves forward (a findIndex per result was quadratic
  // in the calls of one turn: 20k calls took seconds).
  const cursors = new Map<number[], number>();
  const firstOpen = (list: number[] | undefined): number => {
    if (list === undefined) return -1;
    let at = cursors.get(list) ?? 0;
    while (at < list.length && resultOf[list[at]!] !== undefined) at++;
    cursors.set(list, at);
    return at < list.length ? list[at]! : -1;
  };
  // Ids are indexed only when there are results to pair (a turn of calls with no results at
  // all, 30k of them from /v1/responses, needs no index).
  const byId = new StringMap<number[]>();
  const all: number[] = [];
  const idless: number[] = [];
  if (block.length > 0)
    calls.forEach((c, k) => {
      all.push(k);
      if (c.originalId === undefined) idless.push(k);
      else indexCall(byId, c.originalId, k);
      if (c.call.id !== c.originalId) indexCall(byId, c.call.id, k);
    });

  block.forEach((tool, b) => {
    const tid = idOf(tool.tool_call_id);
    const n = tid === undefined ? -1 : firstOpen(byId.get(tid));
    if (n >= 0) resultOf[n] = b;
    else pending.push(b);
  });

  const orphans: ChatMessage[] = [];
  for (const b of pending) {
    const tool = block[b]!;
    const hasId = idOf(tool.tool_call_id) !== undefined;
    // A result without an id answers the next unanswered call; a result with an unknown id may
    // only answer a call that had no id (the client lost it), never one whose id differs.
    const n = firstOpen(hasId ? idless : all);
    if (n >= 0) {
      resultOf[n] = b;
      tally.add(hasId ? 'rebound-result' : 'missing-result-id');
    } else {
      tally.add('orphan-result');
      const note = orphanNote(tool, settings.orphanResults);
      if (note) orphans.push(note);
    }
  }

  const out: ChatMessage[] = [];
  let lastBlockIndex = -1;
  let reordered = false;
  calls.forEach((c, k) => {
    const b = resultOf[k];
    if (b === undefined) {
      tally.add('synthesized-result');
      const content = c.note
        ? prefixContent(c.note, settings.missingResultContent)
        : settings.missingResultContent;
      out.push({ role: 'tool', tool_call_id: c.call.id, content });
      return;
    }
    if (b < lastBlockIndex) reordered = true;
    lastBlockIndex = b;
    const tool = block[b]!;
    out.push({
      ...tool,
      tool_call_id: c.call.id,
      content: c.note ? prefixContent(c.note, tool.content ?? '') : (tool.content ?? ''),
    });
  });
  if (reordered) tally.add('reordered-results');
  return pushAll(out, orphans);
}

function indexCall(byId: StringMap<number[]>, id: string, k: number): void {
  const list = byId.get(id);
  if (list) list.push(k);
  else byId.set(id, [k]);
}

function normalizeToolCallContent(
  messages: ChatMessage[],
  settings: HistoryRepairSettings,
  tally: RepairTally,
): void {
  if (settings.toolCallContent === 'keep') return;
  messages.forEach((m, i) => {
    if (m.role !== 'assistant' || !Array.isArray(m.tool_calls)) return;
    if (settings.toolCallContent === 'null' && (m.content === '' || m.content === undefined)) {
      messages[i] = { ...m, content: null };
      tally.add('content-normalized');
    } else if (settings.toolCallContent === 'empty' && (m.content === null || m.content === undefined)) {
      messages[i] = { ...m, content: '' };
      tally.add('content-normalized');
    }
  });
}

function bridgeToolToUser(messages: ChatMessage[], tally: RepairTally): ChatMessage[] {
  const out: ChatMessage[] = [];
  messages.forEach((m, i) => {
    out.push(m);
    if (m.role === 'tool' && messages[i + 1]?.role === 'user') {
      out.push({ role: 'assistant', content: BRIDGE_MESSAGE_CONTENT });
      tally.add('bridge-message');
    }
  });
  return out;
}

/** Wraps a system turn sent as a user turn, so the model can still tell who wrote it. */
export const SYSTEM_TURN_OPEN = '<system-reminder>\n';
export const SYSTEM_TURN_CLOSE = '\n</system-reminder>';

function wrapSystemContent(content: ChatMessage['content']): ChatMessage['content'] {
  if (typeof content === 'string' || content === undefined || content === null)
    return SYSTEM_TURN_OPEN + (content ?? '') + SYSTEM_TURN_CLOSE;
  return [
    { type: 'text', text: SYSTEM_TURN_OPEN.trimEnd() },
    ...content,
    { type: 'text', text: SYSTEM_TURN_CLOSE.trimStart() },
  ];
}

/**
 * System messages that are not first, for templates that render a system message only first
 * (Qwen3.5, Gemma, Mistral raise on any other). Prefix-stable for a conversation that grows by
 * appending: the messages before the first assistant turn never change once it exists, so the
 * system turns among them (Claude Code's environment turn right after the first user message,
 * Codex's second developer message) are folded into the leading system message, the same bytes
 * every turn; a system turn after that becomes a user turn where it stands, wrapped in
 * <system-reminder> tags, so folding it never rewrites an earlier byte.
 */
function placeSystemMessages(messages: readonly ChatMessage[], tally: RepairTally): ChatMessage[] {
  const firstAssistant = messages.findIndex((m) => m.role === 'assistant');
  const opening = firstAssistant < 0 ? messages.length : firstAssistant;
  let lead: ChatMessage | undefined;
  // the contents folded into the lead, joined once at the end (one pass, not a copy per merge)
  const folded: ChatMessage['content'][] = [];
  const rest: ChatMessage[] = [];
  messages.forEach((m, i) => {
    if (m.role !== 'system') {
      rest.push(m);
      return;
    }
    if (i === 0) {
      lead = m;
      folded.push(m.content);
      return;
    }
    if (i < opening) {
      if (lead) folded.push(m.content);
      else {
        lead = m;
        folded.push(m.content);
      }
      tally.add('merged-system');
      return;
    }
    rest.push({ ...m, role: 'user', content: wrapSystemContent(m.content) });
    tally.add('system-as-user');
  });
  if (lead && folded.length > 1) lead = { ...lead, content: joinContents(folded) };
  return lead ? [lead, ...rest] : rest;
}

/** A turn as alternating templates count them: a user message or an assistant one without calls. */
function isTurn(m: ChatMessage): boolean {
  if (m.role === 'user') return true;
  return m.role === 'assistant' && !(Array.isArray(m.tool_calls) && m.tool_calls.length > 0);
}

/**
 * A conversation whose first turn is the assistant's (a resumed compaction starts with its
 * summary) gets a fixed user message first, after the leading system messages: templates that
 * demand alternation count from a user turn (Mistral's and Gemma's "conversation roles must
 * alternate user/assistant/user/assistant/..." raise on an assistant first, on every later turn
 * too). It depends only on the conversation's opening, so every turn gets the same bytes.
 */
function openWithUser(messages: ChatMessage[], tally: RepairTally): ChatMessage[] {
  const first = messages.find(isTurn);
  if (first === undefined || first.role !== 'assistant') return messages;
  let at = 0;
  while (at < messages.length && (messages[at]!.role === 'system' || messages[at]!.role === 'developer'))
    at++;
  tally.add('opening-user');
  return [...messages.slice(0, at), { role: 'user', content: OPENING_USER_CONTENT }, ...messages.slice(at)];
}

function mergeable(m: ChatMessage): boolean {
  if (m.role === 'user') return true;
  return m.role === 'assistant' && !Array.isArray(m.tool_calls);
}

function mergeSameRole(messages: ChatMessage[], tally: RepairTally): ChatMessage[] {
  const out: ChatMessage[] = [];
  // the run being merged into out's last message: its contents, joined once when it ends
  let run: ChatMessage['content'][] = [];
  const close = () => {
    if (run.length > 1) {
      const last = out[out.length - 1] as ChatMessage;
      out[out.length - 1] = { ...last, content: joinContents(run) };
    }
  };
  for (const m of messages) {
    const prev = out[out.length - 1];
    if (prev && prev.role === m.role && mergeable(prev) && mergeable(m)) {
      run.push(m.content);
      tally.add('merged-messages');
    } else {
      close();
      out.push(m);
      run = [m.content];
    }
  }
  close();
  return out;
}

function applyNineCharIds(messages: ChatMessage[], tally: RepairTally): ChatMessage[] {
  const ids: string[] = [];
  for (const m of messages) {
    for (const c of m.tool_calls ?? []) ids.push(c.id);
    if (m.role === 'tool' && typeof m.tool_call_id === 'string') ids.push(m.tool_call_id);
  }
  const map = buildNineCharIdMap(ids);
  const changed = new StringSet();
  const remap = (id: string): string => {
    const to = map.get(id) ?? id;
    if (to !== id) changed.add(id);
    return to;
  };
  const out = messages.map((m) => {
    if (Array.isArray(m.tool_calls)) {
      return { ...m, tool_calls: m.tool_calls.map((c) => ({ ...c, id: remap(c.id) })) };
    }
    if (m.role === 'tool' && typeof m.tool_call_id === 'string')
      return { ...m, tool_call_id: remap(m.tool_call_id) };
    return m;
  });
  tally.add('nine-char-id', changed.size);
  return out;
}

/**
 * True when repairHistory would give the messages back as they are, with no effect: no tool
 * message, no `tool_calls` field, and (when merging) no two neighbours of one role. Most
 * conversations without tools are like this; every request pays for this check, so it is one
 * pass that allocates nothing (the full repair copies the list several times).
 */
function untouched(messages: readonly ChatMessage[], settings: HistoryRepairSettings): boolean {
  let previous: unknown;
  let opened = false;
  for (const m of messages) {
    // tool_calls read first, as collectClientIds does: a null entry throws the same TypeError.
    if (m.tool_calls !== undefined && m.tool_calls !== null) return false;
    const role = m.role;
    if (role === 'tool') return false;
    if (settings.mergeSameRole && !opened && (role === 'user' || role === 'assistant')) {
      // The first turn (no calls get this far): an assistant's gets a user message before it.
      if (role === 'assistant') return false;
      opened = true;
    }
    if (settings.mergeSameRole && role === previous && (role === 'user' || role === 'assistant'))
      return false;
    if (role === 'system' && previous !== undefined && settings.systemMessages === 'merge') return false;
    previous = role;
  }
  return true;
}

export function repairHistory(
  given: readonly ChatMessage[],
  settings: HistoryRepairSettings,
): HistoryRepairResult {
  if (untouched(given, settings)) return { messages: given.slice(), effects: [] };
  const tally: RepairTally = new EffectTally(HISTORY_REPAIR_POLICY);
  const messages = settings.systemMessages === 'merge' ? placeSystemMessages(given, tally) : given;
  const taken = new TakenIds(messages);
  let out: ChatMessage[] = [];

  let i = 0;
  while (i < messages.length) {
    const msg = messages[i]!;
    if (msg.role === 'tool') {
      // A tool message not in the run right after a tool-calling assistant message.
      tally.add('orphan-result');
      const note = orphanNote(msg, settings.orphanResults);
      if (note) out.push(note);
      i++;
      continue;
    }
    if (msg.role !== 'assistant' || !Array.isArray(msg.tool_calls)) {
      out.push(msg);
      i++;
      continue;
    }
    if (msg.tool_calls.length === 0) {
      // Some servers reject `tool_calls: []`; it means the same as no field.
      const { tool_calls: _empty, ...rest } = msg;
      out.push(rest);
      tally.add('empty-tool-calls');
      i++;
      continue;
    }
    const seen = new StringSet();
    const calls = (msg.tool_calls as unknown[]).map((c, j) => repairCall(c, i, j, seen, taken, tally));
    let k = i + 1;
    while (k < messages.length && messages[k]!.role === 'tool') k++;
    out.push({ ...msg, tool_calls: calls.map((c) => c.call) });
    pushAll(out, pairResults(calls, messages.slice(i + 1, k), settings, tally));
    i = k;
  }

  normalizeToolCallContent(out, settings, tally);
  if (settings.bridgeToolToUser) out = bridgeToolToUser(out, tally);
  if (settings.mergeSameRole) out = mergeSameRole(openWithUser(out, tally), tally);
  if (settings.nineCharIds) out = applyNineCharIds(out, tally);
  return { messages: out, effects: tally.toEffects() };
}
