/**
 * The prefix contract (docs/prefix.md) on a real agent's run: the upstream requests of its main
 * loop, as the simulator received them (raw bytes), grouped by conversation; each turn's `tools`
 * equal the previous turn's and its `messages` begin with exactly the previous turn's, byte for
 * byte in the serialized request.
 */
import type { RecordedRequest } from '../../../simulator/index.js';
import { prefixBreak, rawElements } from '../../e2e/raw-json.js';

export interface Conversation {
  /** The raw first user message that opens it. */
  key: string;
  requests: RecordedRequest[];
}

export interface PrefixCheck {
  conversations: Conversation[];
  /** Turns compared with the previous one (over every conversation). */
  checked: number;
  /** Corrective retries skipped as documented (exception 1): the next turn extends the retry's base. */
  retries: number;
  /** Every break, readable. */
  breaks: string[];
}

/** Claude Code's compaction ask (2.1.332), as it reaches the upstream. */
const CLAUDE_COMPACTION = /CRITICAL: Respond with TEXT ONLY\. Do NOT call any tools\./;

function roleOf(raw: string): string | undefined {
  try {
    return (JSON.parse(raw) as { role?: string }).role;
  } catch {
    return undefined;
  }
}

/**
 * The main loop's upstream requests, by conversation: chat completions that declare tools (side
 * requests such as a title or a summary declare none), keyed by the raw first user message.
 */
export function conversations(upstream: RecordedRequest[]): Conversation[] {
  const byKey = new Map<string, RecordedRequest[]>();
  for (const r of upstream) {
    if (!r.path.endsWith('/chat/completions') || !r.rawBody) continue;
    if ((rawElements(r.rawBody, 'tools') ?? []).length === 0) continue;
    // Claude Code's compaction turn declares its tools but asks for text: a side request too (it
    // adds its ask to the last user message, and the session goes on from the summary).
    if (CLAUDE_COMPACTION.test(r.rawBody)) continue;
    const messages = rawElements(r.rawBody, 'messages') ?? [];
    const key = messages.find((m) => roleOf(m) === 'user') ?? '';
    const list = byKey.get(key) ?? [];
    list.push(r);
    byKey.set(key, list);
  }
  return [...byKey].map(([key, requests]) => ({ key, requests }));
}

export function checkPrefix(upstream: RecordedRequest[]): PrefixCheck {
  const convs = conversations(upstream);
  const out: PrefixCheck = { conversations: convs, checked: 0, retries: 0, breaks: [] };
  for (const conv of convs) {
    const bodies = conv.requests.map((r) => r.rawBody);
    for (let i = 1; i < bodies.length; i++) {
      out.checked++;
      const problem = prefixBreak(bodies[i - 1]!, bodies[i]!);
      if (!problem) continue;
      // Exception 1: request i-1 was a corrective retry of request i-2 (it extends it); the next
      // turn extends the turn's first request, not the retry.
      if (
        i >= 2 &&
        prefixBreak(bodies[i - 2]!, bodies[i - 1]!) === null &&
        prefixBreak(bodies[i - 2]!, bodies[i]!) === null
      ) {
        out.retries++;
        continue;
      }
      out.breaks.push(
        `upstream request #${conv.requests[i]!.index} (turn ${i + 1} of ${bodies.length}) against #${conv.requests[i - 1]!.index}: ${problem}`,
      );
    }
  }
  return out;
}

/** The raw bytes of a request body's first system message, or undefined. */
export function systemMessage(rawBody: string): string | undefined {
  return (rawElements(rawBody, 'messages') ?? []).find((m) => roleOf(m) === 'system');
}
