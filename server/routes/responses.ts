/**
 * POST /v1/responses (OpenAI Responses API, stateless). The request is translated into a chat
 * completion at the edge (protocol/responses/), runs through the one chat pipeline (forced
 * final_answer, fallback, history repair, leak recovery, validation, corrective retry), and
 * the answer is translated back: a response object, or the Responses event stream.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { ToolproofError } from '../../protocol/errors.js';
import type { ChatCompletionChunk } from '../../protocol/openai.js';
import { stringifyJson } from '../../protocol/lossless-json.js';
import { translateRequest } from '../../protocol/responses/request.js';
import {
  completionToResponse,
  ResponsesTranslator,
  type TranslatorContext,
} from '../../protocol/responses/stream.js';
import type { ResponsesEvent, ResponsesRequest } from '../../protocol/responses/types.js';
import type { AppState } from '../app-state.js';
import type { StreamOutput, StreamSummary } from '../chat/output.js';
import { completeChat, streamChat } from '../chat/pipeline.js';
import { startTranslatedCall } from '../chat/start.js';
import type { OpenStream } from '../open-streams.js';
import { SseWriter, writeRaw } from '../sse-writer.js';
import { pushAll } from '../../protocol/append-all.js';
import { DEFAULT_STREAM_KEEPALIVE_MS } from '../keep-alive.js';

const nullable = (schema: Record<string, unknown>) => ({ anyOf: [schema, { type: 'null' }] });

/** What the route reads; the translation checks the rest (and names the field it rejects). */
export const responsesBody = {
  $id: 'ResponsesRequest',
  type: 'object',
  required: ['model'],
  properties: {
    model: { type: 'string' },
    input: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'object' } }] },
    instructions: nullable({ type: 'string' }),
    tools: nullable({
      type: 'array',
      items: { type: 'object', required: ['type'], properties: { type: { type: 'string' } } },
    }),
    tool_choice: {
      anyOf: [
        { type: 'string', enum: ['auto', 'none', 'required'] },
        { type: 'object', required: ['type'] },
      ],
    },
    parallel_tool_calls: nullable({ type: 'boolean' }),
    text: nullable({ type: 'object', properties: { format: { type: 'object', required: ['type'] } } }),
    max_output_tokens: nullable({ type: 'integer', minimum: 1 }),
    temperature: nullable({ type: 'number' }),
    top_p: nullable({ type: 'number' }),
    reasoning: nullable({ type: 'object' }),
    metadata: nullable({ type: 'object', additionalProperties: { type: 'string' } }),
    store: nullable({ type: 'boolean' }),
    include: nullable({ type: 'array', items: { type: 'string' } }),
    previous_response_id: nullable({ type: 'string' }),
    stream: nullable({ type: 'boolean' }),
  },
  additionalProperties: true,
} as const;

function newId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}

/** stringifyJson: the client's tools, echoed in the response, as it sent them. */
function sseEvent(e: ResponsesEvent): string {
  return `event: ${e.type}\ndata: ${stringifyJson(e)}\n\n`;
}

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
  ) {
    super(reply, headers, keepAliveMs);
  }

  private events(events: readonly ResponsesEvent[]): Promise<void> {
    if (events.length === 0) return Promise.resolve();
    let text = '';
    for (const e of events) text += sseEvent(e);
    return this.write(text);
  }

  /** response.created and response.in_progress go out with the headers. */
  protected openingFrame(): string {
    let text = '';
    for (const e of this.translator.start()) text += sseEvent(e);
    return text;
  }

  /** A `keepalive` event: nothing between response.created and the held answer's release. */
  keepAlive(): void {
    void this.events([this.translator.keepAlive()]);
  }

  chunks(chunks: readonly ChatCompletionChunk[]): Promise<void> {
    const events: ResponsesEvent[] = [];
    for (const c of chunks) pushAll(events, this.translator.push(c));
    return this.events(events);
  }

  async end(summary: StreamSummary): Promise<void> {
    this.open(); // an empty answer still gets its created / completed events
    await this.events(this.translator.end(summary.usage));
    this.close();
  }

  private failFrame(err: ToolproofError): string {
    let text = '';
    const code = err.wireCode ?? err.code;
    for (const e of this.translator.fail({ code, message: err.message, param: err.param }))
      text += sseEvent(e);
    return text;
  }

  async fail(err: ToolproofError): Promise<void> {
    await writeRaw(this.reply, this.failFrame(err));
    this.close();
  }

  abortWithError(err: ToolproofError): Promise<void> {
    return this.endWith(err, (e) => this.failFrame(e));
  }
}

export function registerResponsesRoute(app: FastifyInstance, state: AppState): void {
  const deps = state.chatDeps;
  app.post(
    '/v1/responses',
    {
      schema: {
        summary:
          'Create a model response (OpenAI Responses API, stateless), with forced tool use, leak recovery and history repair.',
        tags: ['openai'],
        body: responsesBody,
      },
    },
    async (request, reply) => {
      const body = request.body as ResponsesRequest;
      const { call, translated, droppedHeader } = startTranslatedCall(
        request,
        reply,
        state,
        'responses',
        (b: ResponsesRequest, settings) => translateRequest(b, { hostedTools: settings.hostedTools }),
      );
      const { chat: chatBody, catalog } = translated;
      const ctx: TranslatorContext = {
        request: body,
        newId,
        createdAt: Math.floor(Date.now() / 1000),
        catalog,
      };

      if (chatBody.stream !== true) {
        const result = await completeChat(call, deps);
        reply.header('x-toolproof-attempts', String(call.trace.attempts));
        // Only chat requests are relayed raw; a translated request always gets a completion.
        if (result.kind !== 'completion')
          throw new ToolproofError('TP_ERR_INTERNAL', { message: 'responses: unexpected raw chat result' });
        return reply
          .type('application/json; charset=utf-8')
          .send(stringifyJson(completionToResponse(result.completion, ctx, result.usage)));
      }

      const out = new ResponsesSseOutput(
        reply,
        { 'x-request-id': request.id, ...droppedHeader },
        new ResponsesTranslator(ctx),
        state.config.streamKeepAliveMs,
      );
      state.openStreams.claim(reply.raw, out); // app.ts drops it when the response closes
      try {
        await streamChat(call, deps, out);
      } finally {
        out.close();
      }
      return reply;
    },
  );
}
