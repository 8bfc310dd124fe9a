/**
 * The client's `stop` strings on a forced request. Upstream they would be matched on the text the
 * model writes, which is a tool call's JSON while toolproof forces tool use: a stop string in a
 * call's arguments (a "```" in a file being written, any string the answer holds) cut the call
 * or the final_answer JSON short, so the call came back invalid and the answer as if cut by
 * max_tokens; and one that JSON escapes ("\n\n") never matched the answer at all. So a forced
 * request goes upstream without them, and toolproof ends the answer text it produces where the
 * first of them begins, as the backend would have ended a prose answer: the stop string is not
 * returned, finish_reason is "stop", and `stop_reason` names it (as vLLM does; the Messages door
 * answers it as `stop_sequence`). Tool calls are never cut.
 *
 * The same rule streamed and not: a match is the one that ends first (then the longer), which is
 * also what a backend checking after each token finds, whatever the split.
 */
import type { ChatCompletionRequest } from '../../protocol/openai.js';

/** More strings, or a longer one, go upstream as before: the stream's work per piece stays bounded. */
export const MAX_HELD_STOPS = 16;
export const MAX_HELD_STOP_CHARS = 256;

/** The request's stop strings toolproof can hold back and apply itself; undefined when none or too many. */
export function heldStops(request: ChatCompletionRequest): readonly string[] | undefined {
  const v: unknown = request.stop;
  const list = typeof v === 'string' ? [v] : Array.isArray(v) ? v : undefined;
  if (list === undefined || list.length === 0 || list.length > MAX_HELD_STOPS) return undefined;
  const out: string[] = [];
  for (const s of list) {
    if (typeof s !== 'string' || s.length > MAX_HELD_STOP_CHARS) return undefined;
    if (s !== '') out.push(s);
  }
  return out.length > 0 ? out : undefined;
}

interface Match {
  at: number;
  end: number;
  matched: string;
}

/** The match in `text` that ends first (then the longer), searching each stop from `from[i]`. */
function firstMatch(text: string, stops: readonly string[], from = 0): Match | undefined {
  let best: Match | undefined;
  for (const s of stops) {
    const at = text.indexOf(s, Math.max(0, from - s.length + 1));
    if (at < 0) continue;
    const end = at + s.length;
    if (best === undefined || end < best.end || (end === best.end && at < best.at))
      best = { at, end, matched: s };
  }
  return best;
}

/** `text` ended before the first stop string, and which it was; undefined when none occurs. */
export function cutAtStop(
  text: string,
  stops: readonly string[],
): { text: string; matched: string } | undefined {
  const m = firstMatch(text, stops);
  return m && { text: text.slice(0, m.at), matched: m.matched };
}

/**
 * The streamed cut: `push` returns what may be sent now, holding back the last characters that
 * could begin a stop string; once one matched, nothing more. `end` releases what is held.
 */
export class StopCut {
  matched: string | undefined;
  private pending = '';
  private readonly hold: number;

  constructor(private readonly stops: readonly string[]) {
    let longest = 0;
    for (const s of stops) longest = Math.max(longest, s.length);
    this.hold = longest - 1;
  }

  push(text: string): string {
    if (this.matched !== undefined || text === '') return '';
    // Only a match ending in the new text is new: each stop is searched from where one could begin.
    const from = this.pending.length;
    this.pending += text;
    const m = firstMatch(this.pending, this.stops, from);
    if (m) {
      this.matched = m.matched;
      const out = this.pending.slice(0, m.at);
      this.pending = '';
      return out;
    }
    let cut = this.pending.length - this.hold;
    if (cut <= 0) return '';
    // Never between the halves of a surrogate pair.
    const code = this.pending.charCodeAt(cut - 1);
    if (code >= 0xd800 && code <= 0xdbff) cut--;
    const out = this.pending.slice(0, cut);
    this.pending = this.pending.slice(cut);
    return out;
  }

  end(): string {
    const out = this.pending;
    this.pending = '';
    return this.matched === undefined ? out : '';
  }
}
