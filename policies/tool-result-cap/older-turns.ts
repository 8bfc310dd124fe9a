/**
 * Older tool turns past their share of the window, left out. Cutting the older results (index.ts)
 * bounds what they keep, but each older turn still costs its call and a one-line note (~50 tokens
 * at 3 bytes a token): past ~55 calls in an 8k window the calls, the notes and the last half
 * window whole were over it whatever the share, and every later turn of the session was the
 * backend's refusal (Messages: "prompt is too long").
 *
 * So the older tool turns (an assistant message with tool calls, the tool messages right after it
 * and the user lines right after those, all of it before the boundary of kit/overflow.ts) share
 * an eighth of the window, spent in the prompt's order: what each costs is its call's bytes, what
 * its results keep (a cut result its sixty-fourth, a note its line) and its lines. Past it every
 * older turn is left out: the first stays, its call as sent, its results as notes (the last
 * saying that the older tool calls after it are left out too) and its lines; the turns after it
 * are removed, calls, results and lines together, so the history still pairs each call with its
 * result. The lines are text an agent sends beside a result (Claude Code's system reminders):
 * kept apart from their turns, 300 reads with a user line after each were 12,217 estimated tokens
 * in an 8k window (5,917 without the lines), every later turn refused; kept with the turns but
 * left out of their cost, a 300-character line a turn still took the prompt over 8k. Other user
 * messages (the task, a question after an answer) and answers with no call are never left out:
 * they stay where they were (two user messages may then meet, as clients send them too;
 * history-repair's mergeSameRole is there for templates that want turns to alternate). A run per
 * user message would not do either: with a kept call and note after each line, the 300 reads were
 * 38,444 tokens. Nothing is invented: the calls that stay are the client's, the note says what was
 * left out.
 *
 * The bytes hold turn to turn as exception 9 of docs/prefix.md says: a turn's fate depends only
 * on the older turns before it (their costs are theirs alone), and the boundary only moves on, so
 * a step leaves out turns after those already decided; the prompt changes from the first newly
 * older turn, once per quarter window of growth. A turn that straddles the boundary (its call
 * before it, a result after) is not older yet: it is decided, whole, at the step that passes it.
 */
import type { ChatMessage } from '../../protocol/openai.js';
import { BYTES_PER_TOKEN, messageBytes } from '../kit/prompt-bytes.js';

/**
 * The note in place of a left-out tool result: its size, then `why` (what else went with it, and
 * to fit the model's context window). Shared by the older results (index.ts) and the older turns.
 */
export function resultLeftOutNote(text: string, why: string): string {
  let lines = 1;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) lines++;
  return `[toolproof left out this tool result (${text.length} characters, ${lines === 1 ? '1 line' : `${lines} lines`})${why}]`;
}

/** The last result of the first older turn past the room: it says the later ones are gone too. */
export const turnsLeftOutNote = (text: string): string =>
  resultLeftOutNote(
    text,
    " and the older tool calls after it, with their results and the user messages right after those, to fit the model's context window",
  );

/** What the older tool turns keep together: an eighth of the window, in tokens. */
export function olderTurnsRoom(window: number): number {
  return Math.max(1, Math.floor(window / 8));
}

/**
 * The messages kept, the indexes (into the input) of the tool results removed with their turns,
 * and how many user messages went with them.
 */
export interface LeftOutTurns {
  messages: ChatMessage[];
  removed: number[];
  users: number;
}

/**
 * `messages` less the older tool turns past their room, or undefined when none is. `older`: how
 * many messages start before the boundary. `anchor(k, last)`: what the result at index k of the
 * first turn past the room becomes (the caller knows what it was as sent); `last` for that turn's
 * last result, which says the later older turns are left out.
 */
export function leaveOutOlderTurns(
  messages: readonly ChatMessage[],
  older: number,
  window: number,
  anchor: (k: number, last: boolean) => ChatMessage,
): LeftOutTurns | undefined {
  let room = olderTurnsRoom(window);
  const out: ChatMessage[] = [];
  const removed: number[] = [];
  // Past the room: the first turn was kept as the note's, every later older turn goes.
  let leaving = false;
  let users = 0;
  let i = 0;
  while (i < older) {
    const m = messages[i]!;
    if (m?.role !== 'assistant' || !Array.isArray(m.tool_calls) || m.tool_calls.length === 0) {
      // A user turn, an answer, a result with no call before it: kept.
      out.push(m);
      i++;
      continue;
    }
    let end = i + 1;
    while (end < messages.length && messages[end]?.role === 'tool') end++;
    // The user lines right after the results (a system reminder beside them) are the turn's too,
    // past the boundary or not: the results' own policy (index.ts) decides them once they are
    // older, so the turn is decided then too (a turn that waited for its lines had a result
    // become a note, then the note of the turns left out at the next step). They are fixed once
    // another message follows them; lines that end the prompt may still grow.
    let stop = end;
    if (end > i + 1) while (stop < messages.length && messages[stop]?.role === 'user') stop++;
    // Straddling the boundary: not older yet (decided whole, at the step that passes it).
    if (end > older || stop === messages.length) break;
    if (end === i + 1) {
      // Calls with no result after them (history-repair answers them later): kept.
      out.push(m);
      i = end;
      continue;
    }
    let bytes = 0;
    for (let k = i; k < stop; k++) bytes += messageBytes(messages[k]!);
    const cost = Math.ceil(bytes / BYTES_PER_TOKEN);
    if (cost <= room) {
      room -= cost;
      for (let k = i; k < stop; k++) out.push(messages[k]!);
    } else {
      room = 0;
      if (!leaving) {
        // The first turn past the room: its call stays, its results say what is left out, its
        // lines stay.
        out.push(m);
        for (let k = i + 1; k < end; k++) out.push(anchor(k, k === end - 1));
        for (let k = end; k < stop; k++) out.push(messages[k]!);
        leaving = true;
      } else {
        for (let k = i + 1; k < end; k++) removed.push(k);
        users += stop - end;
      }
    }
    i = stop;
  }
  if (!leaving) return undefined;
  for (let k = i; k < messages.length; k++) out.push(messages[k]!);
  return { messages: out, removed, users };
}
