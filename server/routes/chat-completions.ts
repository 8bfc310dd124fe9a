import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ToolproofError } from '../../protocol/errors.js';
import type { ChatCompletionChunk, ChatCompletionRequest } from '../../protocol/openai.js';
import type { AppState } from '../app-state.js';
import type { StreamOutput, StreamSummary } from '../chat/output.js';
import { completeChat, streamChat } from '../chat/pipeline.js';
import { startChatCall } from '../chat/start.js';
import { untilDrainOrClose } from '../drain.js';
import { toErrorBody } from '../error-handler.js';
import { DEFAULT_STREAM_KEEPALIVE_MS, KeepAlive, SSE_KEEPALIVE_COMMENT } from '../keep-alive.js';
import { SSE_DONE, sseData } from '../sse.js';
import { chatCompletionBody } from './schemas.js';

export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
  connection: 'keep-alive',
} as const;

/**
 * Writes SSE straight to the socket; a full socket buffer pauses the upstream read
 * (backpressure), and a client that goes away releases the wait ('close').
 */
export function writeRaw(reply: FastifyReply, data: string | Uint8Array): Promise<void> {
  return writeOrWait(reply, data) ?? Promise.resolve();
}

/** writeRaw without a promise when there is nothing to wait for (the stream's hot path). */
function writeOrWait(reply: FastifyReply, data: string | Uint8Array): Promise<void> | undefined {
  const raw = reply.raw;
  if (raw.destroyed || raw.writableEnded) return undefined;
  if (raw.write(data)) return undefined;
  return untilDrainOrClose(raw);
}

/** Chat completions framing: `data: <chunk>` events, a summed usage chunk, `data: [DONE]`. */
export class ChatSseOutput implements StreamOutput {
  opened = false;
  private doneSent = false;
  private readonly keepAlives: KeepAlive;

  constructor(
    private readonly reply: FastifyReply,
    private readonly headers: Record<string, string>,
    private readonly includeUsage: boolean,
    keepAliveMs = DEFAULT_STREAM_KEEPALIVE_MS,
  ) {
    this.keepAlives = new KeepAlive(reply.raw, this, keepAliveMs);
    this.keepAlives.start();
  }

  open(): void {
    if (this.opened) return;
    this.opened = true;
    this.reply.hijack();
    this.reply.raw.writeHead(200, { ...SSE_HEADERS, ...this.headers });
    // writeHead only queues the head until the first write: a held answer sent nothing at all.
    this.reply.raw.flushHeaders();
    this.keepAlives.noteWrite();
  }

  keepAlive(): void {
    void this.write(SSE_KEEPALIVE_COMMENT);
  }

  /** One keep-alive interval passed (the timer's; tests call it by hand). */
  tick(): void {
    this.keepAlives.tick();
  }

  private write(text: string | Uint8Array): Promise<void> {
    this.keepAlives.noteWrite();
    return writeRaw(this.reply, text);
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
    this.keepAlives.noteWrite();
    return writeOrWait(this.reply, framed);
  }

  relay(bytes: Uint8Array, done: boolean): Promise<void> {
    if (done) this.doneSent = true;
    return this.write(bytes);
  }

  async end(summary: StreamSummary): Promise<void> {
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
    await writeRaw(this.reply, sseData(JSON.stringify(toErrorBody(err))) + SSE_DONE);
    this.close();
  }

  close(): void {
    this.keepAlives.stop();
    if (this.opened && !this.reply.raw.writableEnded) this.reply.raw.end();
  }
}

export function registerChatRoute(app: FastifyInstance, state: AppState): void {
  const deps = state.chatDeps;
  app.post(
    '/v1/chat/completions',
    {
      schema: {
        summary:
          'Create a chat completion (OpenAI-compatible), with forced tool use, leak recovery and history repair.',
        tags: ['openai'],
        body: chatCompletionBody,
      },
    },
    async (request, reply) => {
      const body = request.body as ChatCompletionRequest;
      const call = startChatCall(request, state, body, 'chat', request.rawBody);

      if (body.stream !== true) {
        const result = await completeChat(call, deps);
        reply.header('x-toolproof-attempts', String(call.trace.attempts));
        if (result.kind === 'raw') {
          reply.code(result.status);
          // The charset is what Fastify adds to a JSON string body: the same header as before.
          return reply.type('application/json; charset=utf-8').send(result.body);
        }
        return reply.send(result.completion);
      }

      const out = new ChatSseOutput(
        reply,
        { 'x-request-id': request.id },
        body.stream_options?.include_usage === true,
        state.config.streamKeepAliveMs,
      );
      try {
        await streamChat(call, deps, out);
      } finally {
        out.close();
      }
      return reply;
    },
  );
}
