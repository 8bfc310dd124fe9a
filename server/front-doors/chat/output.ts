/** The chat completions stream: OpenAI's chunk events, as the loop decided them. */
import type { FastifyReply } from 'fastify';
import type { CustomCallChunks } from '../../../protocol/chat-custom-tools.js';
import { toLegacyFunctionChunk } from '../../../protocol/chat-legacy-functions.js';
import type { ToolproofError } from '../../../protocol/errors.js';
import type { ChatCompletionChunk, ChatCompletionRequest } from '../../../protocol/openai.js';
import type { StreamOutput, StreamSummary } from '../../chat/output.js';
import { SSE_KEEPALIVE_COMMENT } from '../../keep-alive.js';
import { SSE_DONE, sseData } from '../../sse.js';
import { SseWriter, writeRaw } from '../../sse-writer.js';
import { chatErrorEvent } from './errors.js';

/** Chat completions framing: `data: <chunk>` events, a summed usage chunk, `data: [DONE]`. */
export class ChatSseOutput extends SseWriter implements StreamOutput {
  private doneSent = false;
  /** The client asked for the usage chunk before [DONE] (its own request's stream_options). */
  private readonly includeUsage =
    (this.reply.request.body as ChatCompletionRequest | undefined)?.stream_options?.include_usage === true;

  /** Nothing but the headers: chat has no opening event. */
  protected openingFrame(): string {
    return '';
  }

  keepAlive(): void {
    void this.write(SSE_KEEPALIVE_COMMENT);
  }

  chunks(chunks: readonly ChatCompletionChunk[]): Promise<void> {
    if (chunks.length === 0) return Promise.resolve();
    // One write per batch: one syscall, one TCP segment.
    let text = '';
    for (const c of chunks) text += this.frame(c);
    return this.write(text);
  }

  frame(chunk: ChatCompletionChunk): string {
    return sseData(JSON.stringify(chunk));
  }

  text(framed: string): Promise<void> | undefined {
    return this.writeNow(framed);
  }

  relay(bytes: Uint8Array, done: boolean): Promise<void> {
    if (done) this.doneSent = true;
    return this.write(bytes);
  }

  async end(summary: StreamSummary): Promise<void> {
    this.open(); // a relayed stream may end before any write opened it (sse-writer.ts open)
    if (this.includeUsage && summary.usage) {
      const chunk: ChatCompletionChunk = {
        id: summary.id,
        object: 'chat.completion.chunk',
        created: summary.created,
        model: summary.model,
        choices: [],
        usage: summary.usage,
      };
      await writeRaw(this.reply, sseData(JSON.stringify(chunk)));
    }
    if (!this.doneSent) await writeRaw(this.reply, SSE_DONE);
    this.doneSent = true;
    this.close();
  }

  async fail(err: ToolproofError): Promise<void> {
    await writeRaw(this.reply, chatErrorEvent(err));
    this.close();
  }
}

/** A request with custom tools: their calls' chunks in the custom shape (chat-custom-tools.ts). */
export class CustomToolsSseOutput extends ChatSseOutput {
  constructor(
    reply: FastifyReply,
    headers: Record<string, string>,
    keepAliveMs: number,
    private readonly calls: CustomCallChunks,
  ) {
    super(reply, headers, keepAliveMs);
  }

  override frame(chunk: ChatCompletionChunk): string {
    const mapped = this.calls.map(chunk);
    return mapped ? super.frame(mapped) : '';
  }
}

/** A request with the deprecated `functions`: its call's chunks as `delta.function_call` (chat-legacy-functions.ts). */
export class LegacyFunctionsSseOutput extends ChatSseOutput {
  override frame(chunk: ChatCompletionChunk): string {
    const mapped = toLegacyFunctionChunk(chunk);
    return mapped ? super.frame(mapped) : '';
  }
}
