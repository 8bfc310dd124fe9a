/**
 * Session affinity: which replica of an upstream a conversation goes to (docs/affinity.md).
 * A backend reuses its KV cache only for a prompt prefix it has seen, and an agent re-sends its
 * whole conversation every turn: every turn of one conversation must reach the replica that
 * served the turn before, whichever toolproof worker or toolproof replica receives it.
 *
 * Two pure parts: the conversation's key (a session id the client sends, else a hash of the
 * conversation's opening messages, which appending never changes), and rendezvous (highest
 * random weight) hashing of that key over the configured replica list. Every process computes
 * the same order from the same list, with no shared state, and a change to the list moves only
 * the conversations of the replica that came or went.
 */
import type { ChatCompletionRequest, ChatMessage } from '../protocol/openai.js';
import { fnv1a } from '../protocol/hash.js';
import { stripBillingNonce } from '../protocol/billing-header.js';

/**
 * Headers that name a conversation, in order of preference: Claude Code's session id, Codex's
 * (`session_id`; older releases sent `conversation_id`; pi sends it too), opencode's
 * (`x-session-affinity` and `X-Session-Id` to any OpenAI-compatible provider; pi's
 * `sendSessionAffinityHeaders` sends the first), and the conversation id toolproof already forwards.
 */
const SESSION_HEADERS = [
  'x-claude-code-session-id',
  'session_id',
  'x-session-affinity',
  'x-session-id',
  'conversation_id',
  'x-conversation-id',
];

/** Only this much of a session id or an opening message is hashed: bounded CPU per request. */
const MAX_KEY_CHARS = 8192;

type Headers = Record<string, string | string[] | undefined>;

function text(v: unknown): string | undefined {
  return typeof v === 'string' && v.length > 0 ? v.slice(0, MAX_KEY_CHARS) : undefined;
}

/** The text of a message's content (string or text parts), bounded. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content.slice(0, MAX_KEY_CHARS);
  if (!Array.isArray(content)) return '';
  let out = '';
  for (const part of content) {
    const t = (part as { text?: unknown } | null)?.text;
    if (typeof t === 'string') out += t;
    if (out.length >= MAX_KEY_CHARS) break;
  }
  return out.slice(0, MAX_KEY_CHARS);
}

/**
 * The conversation's affinity key. A session id the client sends wins (header, then the body's
 * `prompt_cache_key` (Responses), `metadata.user_id` (Messages; Claude Code puts its session in
 * it)); otherwise the model, the first system message and the first user message, which stay the
 * same while a conversation grows by appending (`user`, when sent, is mixed in). The billing
 * header's per-request nonce is left out, or every Claude Code turn would hash differently.
 */
export function affinityKey(headers: Headers, clientBody: unknown, chat: ChatCompletionRequest): string {
  return namedSessionKey(headers, clientBody) ?? openingKey(chat);
}

/**
 * The key of a session the client names (header, `prompt_cache_key`, `metadata.user_id`), as
 * affinityKey makes it; undefined when it names none (then the key is the opening messages').
 */
export function namedSessionKey(headers: Headers, clientBody: unknown): string | undefined {
  for (const name of SESSION_HEADERS) {
    const v = text(headers[name]);
    if (v !== undefined) return `h:${v}`;
  }
  const body = (clientBody ?? {}) as { prompt_cache_key?: unknown; metadata?: { user_id?: unknown } | null };
  const cacheKey = text(body.prompt_cache_key);
  if (cacheKey !== undefined) return `p:${cacheKey}`;
  const userId = text(body.metadata?.user_id);
  if (userId !== undefined) return `u:${userId}`;
  return undefined;
}

/** The key of the opening messages (model, `user`, first system and first user message, hashed). */
function openingKey(chat: ChatCompletionRequest): string {
  const messages: readonly ChatMessage[] = Array.isArray(chat.messages) ? chat.messages : [];
  let system = '';
  let user = '';
  for (const m of messages) {
    if (!system && (m.role === 'system' || m.role === 'developer')) system = contentText(m.content);
    else if (m.role === 'user') {
      user = contentText(m.content);
      break;
    }
  }
  const who = text(chat.user) ?? '';
  return `o:${String(chat.model).slice(0, 256)}\u0000${who}\u0000${fnv1a(stripBillingNonce(system))}.${fnv1a(user)}`;
}

/** murmur3's 32-bit finalizer: FNV-1a alone spreads close inputs poorly for rendezvous scores. */
function mix(h: number): number {
  let x = h >>> 0;
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b) >>> 0;
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35) >>> 0;
  x ^= x >>> 16;
  return x >>> 0;
}

/**
 * Rendezvous order of `replicas` for `key`: index of the best first. A replica's score depends
 * only on its own name and the key, so adding or removing one changes no other replica's score.
 */
export function rendezvousOrder(key: string, replicas: readonly string[]): number[] {
  const keyHash = fnv1a(key);
  const scored = replicas.map((name, index) => ({
    index,
    score: mix(fnv1a(name, keyHash) ^ mix(keyHash)),
  }));
  scored.sort((a, b) => b.score - a.score || a.index - b.index);
  return scored.map((s) => s.index);
}
