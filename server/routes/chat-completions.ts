import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ToolproofError } from '../../protocol/errors.js';
import type { ChatCompletionChunk, ChatCompletionRequest } from '../../protocol/openai.js';
import type { AppState } from '../app-state.js';
import type { StreamOutput, StreamSummary } from '../chat/output.js';
import { completeChat, streamChat } from '../chat/pipeline.js';
import { startChatCall } from '../chat/start.js';
import { toErrorBody } from '../error-handler.js';
import { DEFAULT_STREAM_KEEPALIVE_MS, SSE_KEEPALIVE_COMMENT } from '../keep-alive.js';
import { SSE_DONE, sseData } from '../sse.js';
import { SseWriter, writeRaw } from '../sse-writer.js';
import { chatCompletionBody } from './schemas.js';

/** Chat completions framing: `data: <chunk>` events, a summed usage chunk, `data: [DONE]`. */
export class ChatSseOutput extends SseWriter implements StreamOutput {
  private doneSent = false;

  constructor(
    reply: FastifyReply,
    headers: Record<string, string>,
    private readonly includeUsage: boolean,
    keepAliveMs = DEFAULT_STREAM_KEEPALIVE_MS,
  ) {
    super(reply, headers, keepAliveMs);
  }

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
