/**
 * Which run of an agent a request belongs to, when the client names no session (docs/inspect.md,
 * "Sessions"). Such a request's session is the hash of its opening messages (server/affinity.ts),
 * which two runs of the same task share: the inspector tells the runs apart by the model's first
 * reply in each, which every later request of a run carries back as its first assistant message
 * (appending never changes it), and which two runs differ in (its first tool call's id, random
 * per reply: vLLM's, llama-server's, the Messages and Responses doors' own; else its text).
 * A run's first request carries no assistant message: it is given the run of the reply it got.
 * Pure: worked out from the request (and that reply) alone, the same on every worker and after
 * the ring dropped a run's earlier requests.
 */
import { fnv1a } from '../../protocol/hash.js';
import { payloadsOf, reassemble } from './reassemble.js';

/** At most this much of a reply's text is hashed. */
const MAX_TEXT = 8192;

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj | undefined =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : undefined;

/** A reply's mark: its first tool call's id when it has one, else its text (trimmed). */
function markOf(firstCallId: string | undefined, text: string): string {
  const mark = firstCallId ? `c:${firstCallId}` : `t:${text.trim().slice(0, MAX_TEXT)}`;
  return (fnv1a(mark) >>> 0).toString(16).padStart(8, '0');
}

/** The text of a chat message's content (a string or text parts). */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let out = '';
  for (const part of content) {
    const t = obj(part)?.text;
    if (typeof t === 'string') out += t;
    if (out.length >= MAX_TEXT) break;
  }
  return out;
}

/**
 * The run of a request, from its messages in chat form: the mark of its first assistant
 * message; undefined when it has none (a run's first request).
 */
export function runOfHistory(messages: unknown): string | undefined {
  if (!Array.isArray(messages)) return undefined;
  for (const m of messages) {
    const msg = obj(m);
    if (msg?.role !== 'assistant') continue;
    const calls = Array.isArray(msg.tool_calls) ? msg.tool_calls : [];
    const id = obj(calls[0])?.id;
    return markOf(typeof id === 'string' ? id : undefined, contentText(msg.content));
  }
  return undefined;
}

/**
 * The run a reply starts, from the body the client received (chat, Responses or Messages, whole
 * or streamed): the mark its next request will carry back. Undefined when the reply holds
 * nothing to carry back (an error, an empty body).
 */
export function runOfReply(body: string): string | undefined {
  if (body === '') return undefined;
  const id = firstCallId(body);
  if (id !== undefined) return markOf(id, '');
  const r = reassemble(body);
  if (r.content.trim() === '') return undefined;
  return markOf(undefined, r.content);
}

/** The id of the first tool call a reply's body holds, in any door's shape. */
function firstCallId(body: string): string | undefined {
  for (const p of payloadsOf(body).payloads) {
    const e = obj(p);
    if (!e) continue;
    // Chat completions: a message's or a delta's tool_calls.
    if (Array.isArray(e.choices)) {
      for (const ch of e.choices) {
        const c = obj(ch);
        const m = obj(c?.delta) ?? obj(c?.message);
        const id = Array.isArray(m?.tool_calls) ? obj(m.tool_calls[0])?.id : undefined;
        if (typeof id === 'string' && id) return id;
      }
      continue;
    }
    // Responses: an output item (streamed, or in the response), its call_id.
    const items = Array.isArray(e.output)
      ? e.output
      : Array.isArray(obj(e.response)?.output)
        ? (obj(e.response)?.output as unknown[])
        : [e.item];
    for (const it of items) {
      const item = obj(it);
      // function_call, custom_tool_call, local_shell_call...: each a tool_call id in chat form.
      const type = item?.type;
      if (
        typeof type === 'string' &&
        type.endsWith('_call') &&
        typeof item?.call_id === 'string' &&
        item.call_id
      )
        return item.call_id;
    }
    // Messages: a tool_use block (streamed, or in the message).
    const blocks = Array.isArray(e.content) ? e.content : [e.content_block];
    for (const b of blocks) {
      const block = obj(b);
      if (block?.type === 'tool_use' && typeof block.id === 'string' && block.id) return block.id;
    }
  }
  return undefined;
}

/** The run of a first request whose reply holds nothing to carry back: its own, marked by its id. */
export function ownRun(id: string): string {
  return markOf(undefined, `id:${id}`);
}
