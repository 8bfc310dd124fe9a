/**
 * Logprobs ride with the text they describe, whatever the stream hooks hold. A hook that holds
 * a delta (a possible marker, text that waits for a decision) and lets its text out later
 * builds a new chunk for it, and the held chunks' logprobs were lost: a streaming client got
 * fewer entries than the non-streamed message, whose choice keeps them all. So the logprobs are
 * taken off each chunk before the hooks, queued per choice in order, and put back on the next
 * chunk of that choice that comes out (or on the end's chunks): every entry reaches the client,
 * in order, never before the chunk it came with. Only chunks that carry logprobs pay anything.
 */
import type { ChatCompletionChunk } from '../../protocol/openai.js';

type Logprobs = Record<string, unknown>;

/** Whether any of the chunk's choices carries logprobs (a carrier is made at the first). */
export function carriesLogprobs(chunk: ChatCompletionChunk): boolean {
  const choices = chunk.choices;
  if (!Array.isArray(choices)) return false;
  for (const c of choices) if (c?.logprobs != null) return true;
  return false;
}

export class LogprobsCarrier {
  private pending: Map<number, Logprobs[]> | undefined;

  /** `chunk` without its logprobs (a copy when it had any), which wait for the way out. */
  take(chunk: ChatCompletionChunk): ChatCompletionChunk {
    if (!carriesLogprobs(chunk)) return chunk;
    this.pending ??= new Map();
    const stripped = chunk.choices.map((c) => {
      if (c.logprobs == null) return c;
      const queue = this.pending!.get(c.index);
      if (queue) queue.push(c.logprobs as Logprobs);
      else this.pending!.set(c.index, [c.logprobs as Logprobs]);
      const { logprobs: _logprobs, ...rest } = c;
      return rest;
    });
    return { ...chunk, choices: stripped };
  }

  /** `chunks` (what the hooks let out) with the logprobs waiting for their choices. */
  give(chunks: ChatCompletionChunk[]): ChatCompletionChunk[] {
    const pending = this.pending;
    if (pending === undefined || pending.size === 0) return chunks;
    return chunks.map((chunk) => {
      if (!Array.isArray(chunk.choices) || !chunk.choices.some((c) => pending.has(c.index))) return chunk;
      const choices = chunk.choices.map((c) => {
        const queue = pending.get(c.index);
        if (!queue) return c;
        pending.delete(c.index);
        const own = c.logprobs == null ? [] : [c.logprobs as Logprobs];
        return { ...c, logprobs: merge([...queue, ...own]) };
      });
      return { ...chunk, choices };
    });
  }

  /**
   * The end: what still waits goes on the end's chunks, or on one more chunk per choice when
   * none of the end's chunks is that choice's.
   */
  end(
    chunks: ChatCompletionChunk[],
    identity: { id: string; model: string; created: number },
  ): ChatCompletionChunk[] {
    const out = this.give(chunks);
    const pending = this.pending;
    if (pending === undefined || pending.size === 0) return out;
    for (const [index, queue] of [...pending].sort(([a], [b]) => a - b)) {
      out.push({
        ...identity,
        object: 'chat.completion.chunk',
        choices: [{ index, delta: {}, logprobs: merge(queue), finish_reason: null }],
      });
    }
    pending.clear();
    return out;
  }
}

/**
 * Several logprobs objects as one: their arrays (content, refusal) concatenated in order. Each
 * key's array is grown in place: a copy per object (`concat`) cost the square of the queue, and
 * held text queues one object per token (1 MB of held JSON-looking text, one token a chunk:
 * 32,000 tokens held the event loop 19 s at the release).
 */
function merge(list: Logprobs[]): Logprobs {
  if (list.length === 1) return list[0]!;
  // Every array in `out` is a copy of its own (value.slice()): growing it touches no caller's.
  const out: Logprobs = {};
  for (const lp of list) {
    for (const [key, value] of Object.entries(lp)) {
      const prev = out[key];
      if (Array.isArray(value)) {
        if (Array.isArray(prev)) for (const v of value) prev.push(v);
        else out[key] = value.slice();
      } else if (value != null || !(key in out)) out[key] = value;
    }
  }
  return out;
}
