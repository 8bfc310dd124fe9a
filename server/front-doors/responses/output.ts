/** The Responses event stream: `event: <type>` + `data: <event>`, translated from the loop's chat chunks. */
import type { FastifyReply } from 'fastify';
import { pushAll } from '../../../protocol/append-all.js';
import type { ToolproofError } from '../../../protocol/errors.js';
import type { ChatCompletionChunk } from '../../../protocol/openai.js';
import { StreamNumbering } from '../../../protocol/responses/replay.js';
import type { ResponsesTranslator } from '../../../protocol/responses/stream.js';
import type { ResponseObject, ResponsesEvent } from '../../../protocol/responses/types.js';
import type { StreamOutput, StreamSummary } from '../../chat/output.js';
import { DEFAULT_STREAM_KEEPALIVE_MS } from '../../keep-alive.js';
import type { OpenStream } from '../../open-streams.js';
import { SseWriter, writeRaw } from '../../sse-writer.js';
import { responsesErrorEvent, responsesSseEvent as sseEvent } from './errors.js';

/**
 * Responses framing: `event: <type>` + `data: <event>` per event; no [DONE]. Also the stream's
 * OpenStream: at the shutdown deadline it ends with the same events as any failure.
 */
export class ResponsesSseOutput extends SseWriter implements StreamOutput, OpenStream {
  constructor(
    reply: FastifyReply,
    headers: Record<string, string>,
    private readonly translator: ResponsesTranslator,
    keepAliveMs = DEFAULT_STREAM_KEEPALIVE_MS,
    /**
     * Keeps the finished response (item_reference, previous_response_id), as the JSON answer does,
     * with its live numbering (a stream resumed from it: protocol/responses/replay.ts).
     */
    private readonly keep?: (response: ResponseObject, numbering?: Uint32Array) => void,
  ) {
    super(reply, headers, keepAliveMs);
    this.numbering = keep ? new StreamNumbering() : undefined;
  }

  /** Each event's place, recorded as it is framed (only when the response is kept). */
  private readonly numbering: StreamNumbering | undefined;

  private framed(events: readonly ResponsesEvent[]): string {
    let text = '';
    for (const e of events) {
      this.numbering?.record(e);
      text += sseEvent(e);
    }
    return text;
  }

  private events(events: readonly ResponsesEvent[]): Promise<void> {
    if (events.length === 0) return Promise.resolve();
    return this.write(this.framed(events));
  }

  /** response.created and response.in_progress go out with the headers. */
  protected openingFrame(): string {
    return this.framed(this.translator.start());
  }

  /** A `keepalive` event: nothing between response.created and the held answer's release. */
  keepAlive(): void {
    void this.events([this.translator.keepAlive()]);
  }

  chunks(chunks: readonly ChatCompletionChunk[]): Promise<void> {
    if (chunks.length === 0) return Promise.resolve();
    this.open(); // response.created numbered first: the stream opens on its first chunks
    const events: ResponsesEvent[] = [];
    for (const c of chunks) pushAll(events, this.translator.push(c));
    return this.events(events);
  }

  async end(summary: StreamSummary): Promise<void> {
    this.open(); // an empty answer still gets its created / completed events
    const events = this.translator.end(summary.usage);
    // Kept before the client reads response.completed: its next turn may refer to them at once.
    const last = events[events.length - 1];
    const text = this.framed(events);
    if (this.keep && (last?.type === 'response.completed' || last?.type === 'response.incomplete'))
      this.keep((last as unknown as { response: ResponseObject }).response, this.numbering?.finish());
    if (text !== '') await this.write(text);
    this.close();
  }

  private failFrame(err: ToolproofError): string {
    return responsesErrorEvent(err, this.translator);
  }

  async fail(err: ToolproofError): Promise<void> {
    await writeRaw(this.reply, this.failFrame(err));
    this.close();
  }

  abortWithError(err: ToolproofError): Promise<void> {
    return this.endWith(err, (e) => this.failFrame(e));
  }
}
