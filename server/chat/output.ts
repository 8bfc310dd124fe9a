/**
 * How a front door frames a streamed answer. The attempt loop (pipeline.ts) decides what the
 * client receives, as chat-completion chunks; an output only frames them for its API (chat
 * SSE, Responses events, Anthropic Messages events). Every front door implements this once.
 */
import type { ToolproofError } from '../../protocol/errors.js';
import type { ChatCompletionChunk, Usage } from '../../protocol/openai.js';

/** Identity of the streamed message (from the upstream's chunks), for closing frames. */
export interface StreamSummary {
  id: string;
  model: string;
  created: number;
  /** Token usage summed over every upstream attempt, when the upstream reported it. */
  usage?: Usage;
}

export interface StreamOutput {
  /** True once open() has sent the status line and headers. */
  readonly opened: boolean;
  /** Sends the status line and headers (idempotent). */
  open(): void;
  /** Chat-completion chunks for the client, in order; resolves when the client can take more. */
  chunks(chunks: readonly ChatCompletionChunk[]): Promise<void>;
  /**
   * Chat pass-through only: upstream bytes holding whole, ordinary events, relayed as they are.
   * An output without it makes the loop parse every event (other front doors must translate).
   * `done` says the bytes held the upstream's own `[DONE]`.
   */
  relay?(bytes: Uint8Array, done: boolean): Promise<void>;
  /**
   * Chat framing only (the stream's fast lane, fast-lane.ts): the text chunks() writes for one
   * chunk, and a write of text so framed, which returns a promise only when the client cannot
   * take more yet. Both or neither; an output without them gets chunks.
   */
  frame?(chunk: ChatCompletionChunk): string;
  text?(framed: string): Promise<void> | undefined;
  /** A normal end. */
  end(summary: StreamSummary): Promise<void>;
  /** A failure after open(): the API's own error event, then the end of the stream. */
  fail(err: ToolproofError): Promise<void>;
}
