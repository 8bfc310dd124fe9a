/**
 * What a held stream keeps of the text it may still release: the text itself, not the chunks
 * it came in. Each chunk object cost about 0.9 KB per delta (a 128k-token answer: ~106 MB per
 * stream); a run of plain deltas (role, content or reasoning only, nothing else on the chunk or
 * the choice) is kept as one string per choice and field instead, and released as one delta.
 * Anything else (logprobs, extra fields, a chunk-level field that differs from the first chunk)
 * is kept as its chunk, and counted at what it weighs (heldWeight: HELD_CHUNK_COST plus the
 * characters of its keys and values; its delta text is counted by the caller, who counts every
 * character it keeps for the judge anyway). A flat cost per chunk let 600 chunks each carrying a
 * 1 MB extra field hold 750 MB in one stream (issue 27).
 *
 * Pure bookkeeping: the caller decides when to release (at the end, at a live answer, or when
 * its cap is passed).
 */
import type { ChatCompletionChunk, ChunkChoice, Delta } from '../../protocol/openai.js';
import { appendText } from '../kit/append-text.js';

/** Characters a held chunk object counts for beyond its keys and values (the objects themselves). */
export const HELD_CHUNK_COST = 512;

/**
 * What holding `chunk` weighs, in characters: HELD_CHUNK_COST plus about its JSON length (keys,
 * strings, 8 per number or literal), less its deltas' content and reasoning text (the caller
 * counts those). One walk with an explicit stack: linear in the chunk, and a chunk arrives as
 * one SSE event already bounded in size and depth.
 */
export function heldWeight(chunk: ChatCompletionChunk): number {
  let n = HELD_CHUNK_COST;
  const stack: unknown[] = [chunk];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') n += v.length + 2;
    else if (v === null || typeof v !== 'object') n += 8;
    else if (Array.isArray(v)) {
      n += 2 + v.length;
      for (const x of v) stack.push(x);
    } else {
      for (const k in v) {
        n += k.length + 4;
        stack.push((v as Record<string, unknown>)[k]);
      }
    }
  }
  for (const c of chunk.choices ?? []) {
    const d = c?.delta;
    if (typeof d?.content === 'string') n -= d.content.length + 2;
    if (typeof d?.reasoning_content === 'string') n -= d.reasoning_content.length + 2;
  }
  return n;
}

type TextField = 'content' | 'reasoning_content';

interface TextPiece {
  choice: number;
  field: TextField;
  role: boolean;
  /** Undefined: a role-only delta so far (its content key stays absent). */
  text: string | undefined;
}

type Piece = TextPiece | ChatCompletionChunk;

const CHUNK_KEYS = new Set(['id', 'object', 'created', 'model', 'system_fingerprint', 'choices', 'usage']);
const SAME_AS_TEMPLATE = ['id', 'object', 'created', 'model', 'system_fingerprint'] as const;
const CHOICE_KEYS = new Set(['index', 'delta', 'finish_reason', 'logprobs']);
const DELTA_KEYS = new Set(['role', 'content', 'reasoning_content']);

const isText = (p: Piece): p is TextPiece => typeof (p as TextPiece).field === 'string';

function plainChoice(c: ChunkChoice): boolean {
  for (const k in c) if (!CHOICE_KEYS.has(k)) return false;
  if (c.finish_reason != null || c.logprobs != null || typeof c.index !== 'number') return false;
  const d = c.delta;
  if (d === null || typeof d !== 'object') return false;
  for (const k in d) if (!DELTA_KEYS.has(k)) return false;
  if (d.role !== undefined && d.role !== 'assistant') return false;
  if (d.content != null && typeof d.content !== 'string') return false;
  if (d.reasoning_content != null && typeof d.reasoning_content !== 'string') return false;
  // A null content or reasoning is something a client may see: only strings are plain.
  if (d.content === null || d.reasoning_content === null) return false;
  return true;
}

export class HeldText {
  private pieces: Piece[] = [];
  /** Per choice, its last piece when that is text (a following delta of the same field joins it). */
  private last = new Map<number, TextPiece>();
  /** What the chunk objects held weigh beyond their text (heldWeight). */
  overhead = 0;

  get empty(): boolean {
    return this.pieces.length === 0;
  }

  /** Holds `chunk` (choices already rewritten by the caller); `template` is the stream's first chunk. */
  add(chunk: ChatCompletionChunk, template: ChatCompletionChunk): void {
    if (this.plain(chunk, template)) {
      for (const c of chunk.choices) this.addText(c);
      return;
    }
    for (const c of chunk.choices ?? []) if (c) this.last.delete(c.index);
    this.pieces.push(chunk);
    this.overhead += heldWeight(chunk);
  }

  private plain(chunk: ChatCompletionChunk, template: ChatCompletionChunk): boolean {
    for (const k in chunk) if (!CHUNK_KEYS.has(k)) return false;
    if (chunk.usage != null) return false;
    for (const k of SAME_AS_TEMPLATE) if (chunk[k] !== template[k]) return false;
    for (const c of chunk.choices) if (!plainChoice(c)) return false;
    return true;
  }

  private addText(c: ChunkChoice): void {
    const d = c.delta;
    let role = d.role === 'assistant';
    if (typeof d.reasoning_content === 'string') {
      this.addPiece(c.index, 'reasoning_content', role, d.reasoning_content);
      role = false;
    }
    if (typeof d.content === 'string' || role)
      this.addPiece(c.index, 'content', role, d.content ?? undefined);
  }

  private addPiece(choice: number, field: TextField, role: boolean, text: string | undefined): void {
    const prev = this.last.get(choice);
    if (prev && prev.field === field && !role) {
      if (text !== undefined) prev.text = prev.text === undefined ? text : appendText(prev.text, text);
      return;
    }
    const piece: TextPiece = { choice, field, role, text };
    this.pieces.push(piece);
    this.last.set(choice, piece);
  }

  /** Everything held, in order, as chunks shaped like `template`; the holder is emptied. */
  release(template: ChatCompletionChunk): ChatCompletionChunk[] {
    const out: ChatCompletionChunk[] = [];
    for (const p of this.pieces) {
      if (!isText(p)) {
        out.push(p);
        continue;
      }
      const delta: Delta = p.role ? { role: 'assistant' } : {};
      if (p.text !== undefined) delta[p.field] = p.text;
      out.push({ ...template, choices: [{ index: p.choice, delta, finish_reason: null }] });
    }
    this.pieces = [];
    this.last.clear();
    this.overhead = 0;
    return out;
  }
}
