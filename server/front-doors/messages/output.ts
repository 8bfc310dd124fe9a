/** The Anthropic Messages event stream, translated from the loop's chat chunks. */
import type { FastifyReply } from 'fastify';
import type { MessageContext } from '../../../protocol/anthropic/response.js';
import { MessageStreamTranslator } from '../../../protocol/anthropic/stream.js';
import type { StreamEvent } from '../../../protocol/anthropic/types.js';
import type { ToolproofError } from '../../../protocol/errors.js';
import type { ChatCompletionChunk } from '../../../protocol/openai.js';
import type { StreamOutput, StreamSummary } from '../../chat/output.js';
import { DEFAULT_STREAM_KEEPALIVE_MS } from '../../keep-alive.js';
import type { OpenStream } from '../../open-streams.js';
import { SseWriter } from '../../sse-writer.js';
import { messagesErrorEvent } from './errors.js';

/** One SSE event per Anthropic event: `event: <type>` then its JSON. */
function frame(events: readonly StreamEvent[]): string {
  let text = '';
  for (const e of events) text += `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`;
  return text;
}

const PING_FRAME = frame([{ type: 'ping' }]);

/**
 * Anthropic Messages framing over the chat chunks the attempt loop decided on. Also the stream's
 * OpenStream: at the shutdown deadline it ends with Anthropic's own `error` event. A `ping`
 * goes out for each keep-alive interval with nothing else written (server/keep-alive.ts).
 */
export class MessagesSseOutput extends SseWriter implements StreamOutput, OpenStream {
  private readonly translator: MessageStreamTranslator;

  constructor(
    reply: FastifyReply,
    headers: Record<string, string>,
    ctx: MessageContext,
    pingMs = DEFAULT_STREAM_KEEPALIVE_MS,
  ) {
    // The translator first: the keep-alive timer may open the stream at its first interval.
    const translator = new MessageStreamTranslator(ctx);
    super(reply, headers, pingMs);
    this.translator = translator;
  }

  protected openingFrame(): string {
    return frame(this.translator.start());
  }

  keepAlive(): void {
    void this.write(PING_FRAME);
  }

  chunks(chunks: readonly ChatCompletionChunk[]): Promise<void> {
    if (chunks.length === 0) return Promise.resolve();
    this.open(); // message_start first: the stream opens on its first chunks
    const events = this.translator.push(chunks);
    return events.length === 0 ? Promise.resolve() : this.write(frame(events));
  }

  async end(summary: StreamSummary): Promise<void> {
    await this.write(frame(this.translator.end(summary.usage)));
    this.close();
  }

  async fail(err: ToolproofError): Promise<void> {
    await this.write(messagesErrorEvent(err));
    this.close();
  }

  abortWithError(err: ToolproofError): Promise<void> {
    return this.endWith(err, messagesErrorEvent);
  }
}
