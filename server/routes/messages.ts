/**
 * POST /v1/messages (Anthropic Messages API) and /v1/messages/count_tokens. The request is
 * translated to chat completions at the edge (protocol/anthropic/), runs through the one chat
 * pipeline unchanged, and the answer is translated back, as a message or as Anthropic stream
 * events. An encapsulated plugin: its error handler answers in Anthropic's error shape (the
 * auth hook's 401s included: Fastify hands a hook's error to the route's own handler).
 */
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { repairHistory } from '../../policies/registry.js';
import { toAnthropicErrorBody } from '../../protocol/anthropic/errors.js';
import { conversationText, estimateTokens, tokenizeCount } from '../../protocol/anthropic/count.js';
import { toChatRequest, translateRequest } from '../../protocol/anthropic/request.js';
import { keepSourceText, stringifyJson } from '../../protocol/lossless-json.js';
import { type MessageContext, messageId, toMessage } from '../../protocol/anthropic/response.js';
import { MessageStreamTranslator } from '../../protocol/anthropic/stream.js';
import type { CountTokensRequest, MessagesRequest, StreamEvent } from '../../protocol/anthropic/types.js';
import { ToolproofError } from '../../protocol/errors.js';
import type { ChatCompletionChunk, ChatCompletionRequest } from '../../protocol/openai.js';
import { RequestAbort } from '../abort.js';
import type { AppState } from '../app-state.js';
import { readText } from '../chat/attempt.js';
import type { StreamOutput, StreamSummary } from '../chat/output.js';
import { completeChat, streamChat } from '../chat/pipeline.js';
import { startTranslatedCall } from '../chat/start.js';
import { errorHandler, normalizeError, parseUpstreamBody } from '../error-handler.js';
import type { OpenStream } from '../open-streams.js';
import { DEFAULT_STREAM_KEEPALIVE_MS } from '../keep-alive.js';
import { resolveRoute } from '../routing.js';
import { SseWriter } from '../sse-writer.js';

const nullable = (schema: Record<string, unknown>) => ({ anyOf: [schema, { type: 'null' }] });

const messageParam = {
  type: 'object',
  required: ['role', 'content'],
  properties: {
    role: { type: 'string', enum: ['user', 'assistant', 'system'] },
    content: {
      anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'object', required: ['type'] } }],
    },
  },
};

const commonProperties = {
  model: { type: 'string', minLength: 1 },
  // Anthropic refuses an empty conversation; a chat backend would be sent nothing to answer.
  messages: { type: 'array', minItems: 1, items: messageParam },
  system: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'object' } }] },
  tools: nullable({
    type: 'array',
    items: { type: 'object', required: ['name'], properties: { name: { type: 'string', minLength: 1 } } },
  }),
  tool_choice: { type: 'object', required: ['type'], properties: { type: { type: 'string' } } },
  thinking: { type: 'object', required: ['type'], properties: { type: { type: 'string' } } },
} as const;

const messagesBody = {
  $id: 'AnthropicMessagesRequest',
  type: 'object',
  required: ['model', 'messages', 'max_tokens'],
  properties: {
    ...commonProperties,
    max_tokens: { type: 'integer', minimum: 1 },
    stop_sequences: { type: 'array', items: { type: 'string' } },
    temperature: { type: 'number' },
    top_p: { type: 'number' },
    top_k: { type: 'integer' },
    stream: { type: 'boolean' },
    metadata: { type: 'object' },
  },
  additionalProperties: true,
} as const;

const countTokensBody = {
  $id: 'AnthropicCountTokensRequest',
  type: 'object',
  required: ['model', 'messages'],
  properties: commonProperties,
  additionalProperties: true,
} as const;

/** One SSE event per Anthropic event: `event: <type>` then its JSON. */
function frame(events: readonly StreamEvent[]): string {
  let text = '';
  for (const e of events) text += `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`;
  return text;
}

const PING_FRAME = frame([{ type: 'ping' }]);

/** Anthropic's stream error: `event: error` with the same body as an error response. */
function errorFrame(err: ToolproofError): string {
  return frame([toAnthropicErrorBody(err)]);
}

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
    const events = this.translator.push(chunks);
    return events.length === 0 ? Promise.resolve() : this.write(frame(events));
  }

  async end(summary: StreamSummary): Promise<void> {
    await this.write(frame(this.translator.end(summary.usage)));
    this.close();
  }

  async fail(err: ToolproofError): Promise<void> {
    await this.write(errorFrame(err));
    this.close();
  }

  abortWithError(err: ToolproofError): Promise<void> {
    return this.endWith(err, errorFrame);
  }
}

interface TokenizeTry {
  form: 'chat' | 'text';
  body: string;
  /** Tokens the body leaves out, estimated (tool definitions an older vLLM will not take). */
  extra: number;
}

/**
 * Bodies of a /tokenize call, in order: vLLM's chat form with the tools (recent vLLM renders
 * them into the template), the chat form without them (older vLLM refuses unknown fields; the
 * tools are then estimated), then llama-server's plain-text form.
 */
function tokenizeTries(model: string, chat: ChatCompletionRequest): TokenizeTry[] {
  const base = { model, messages: chat.messages, add_generation_prompt: true };
  const tries: TokenizeTry[] = [];
  if (chat.tools) {
    tries.push({ form: 'chat', body: stringifyJson({ ...base, tools: chat.tools }), extra: 0 });
  }
  const toolTokens = chat.tools ? estimateTokens({ model, messages: [], tools: chat.tools }) : 0;
  tries.push({ form: 'chat', body: stringifyJson(base), extra: toolTokens });
  tries.push({ form: 'text', body: JSON.stringify({ content: conversationText(chat).text }), extra: 0 });
  return tries;
}

/**
 * The upstream's own count, or undefined when it has no /tokenize (or it failed): counting is
 * advisory, so no upstream trouble becomes an error here.
 */
async function upstreamCount(
  request: FastifyRequest,
  route: ReturnType<typeof resolveRoute>,
  chat: ChatCompletionRequest,
): Promise<number | undefined> {
  const controller = new RequestAbort();
  request.tpAbort = controller;
  for (const { form, body, extra } of tokenizeTries(route.upstreamModel ?? chat.model, chat)) {
    try {
      const res = await route.client.request({
        method: 'POST',
        path: '/tokenize',
        fromOrigin: true,
        body,
        headers: { 'x-request-id': request.id },
        signal: controller,
      });
      const text = await readText(res, 32 * 1024 * 1024);
      if (res.status === 404 || res.status === 405) return undefined; // no tokenizer endpoint at all
      if (res.status !== 200) continue;
      const n = tokenizeCount(parseUpstreamBody(text), form);
      if (n !== undefined) return n + extra;
    } catch {
      if (controller.aborted) return undefined;
    }
  }
  return undefined;
}

export function messagesRoutes(state: AppState): FastifyPluginAsync {
  return async (scope: FastifyInstance) => {
    scope.setErrorHandler(
      errorHandler(toAnthropicErrorBody, (model) => state.metrics.internalErrors.labels(model).inc()),
    );

    scope.post(
      '/v1/messages',
      {
        schema: {
          summary:
            'Create a message (Anthropic Messages API), run through the same forced tool use, leak recovery and history repair as chat.',
          tags: ['anthropic'],
          body: messagesBody,
        },
      },
      async (request, reply) => {
        const body = request.body as MessagesRequest;
        const { call, droppedHeader } = startTranslatedCall(
          request,
          reply,
          state,
          'messages',
          (b: MessagesRequest, settings) => translateRequest(b, { hostedTools: settings.hostedTools }),
        );
        const ctx: MessageContext = {
          id: messageId(request.id),
          model: body.model,
          ...(Array.isArray(body.stop_sequences) ? { stopSequences: body.stop_sequences } : {}),
        };
        // Anthropic SDKs expose this header as the response's request id.
        reply.header('request-id', request.id);
        if (body.stream !== true) {
          const result = await completeChat(call, state.chatDeps);
          reply.header('x-toolproof-attempts', String(call.trace.attempts));
          if (result.kind === 'raw') {
            // Unreachable: only chat requests are relayed untouched. Kept as a guard.
            throw normalizeError(new Error('raw result on /v1/messages'));
          }
          // stringifyJson: a tool_use input keeps the numbers and key order the model wrote.
          return reply
            .type('application/json; charset=utf-8')
            .send(stringifyJson(toMessage(result.completion, ctx)));
        }
        const out = new MessagesSseOutput(
          reply,
          { 'x-request-id': request.id, 'request-id': request.id, ...droppedHeader },
          ctx,
          state.config.streamKeepAliveMs,
        );
        state.openStreams.claim(reply.raw, out); // app.ts drops it when the response closes
        try {
          await streamChat(call, state.chatDeps, out);
        } finally {
          out.close();
        }
        return reply;
      },
    );

    scope.post(
      '/v1/messages/count_tokens',
      {
        schema: {
          summary:
            "Count a Messages request's input tokens: the upstream's /tokenize when it has one, else an estimate (4 characters per token).",
          tags: ['anthropic'],
          body: countTokensBody,
        },
      },
      async (request, reply) => {
        const body = request.body as CountTokensRequest;
        if (request.rawBody) keepSourceText(body, request.rawBody);
        const route = resolveRoute(state.config, state.upstreams, body.model, state.modelLabels);
        const translated = toChatRequest(
          { ...body, max_tokens: 1, stream: false },
          { hostedTools: route.settings.hostedTools },
        );
        // Counted as it would go upstream: system turns placed, history repaired.
        const repair = route.settings.historyRepair;
        const chat = repair.enabled
          ? { ...translated, messages: repairHistory(translated.messages, repair).messages }
          : translated;
        request.tp = { model: route.name, upstream: route.client.label, stream: false, api: 'messages' };
        const counted = await upstreamCount(request, route, chat);
        reply.header('x-toolproof-token-count', counted === undefined ? 'estimate' : 'tokenize');
        return { input_tokens: counted ?? estimateTokens(chat) };
      },
    );

    // The rest of the Messages API (batches, models under this path, another method on
    // /v1/messages) is not served: a 404 in Anthropic's shape, instead of falling through to the
    // upstream, which would answer in its own shape (vLLM: {"detail": "Not Found"}).
    const notServed = async (request: FastifyRequest) => {
      throw new ToolproofError('TP_ERR_NOT_FOUND', {
        message: `Not served by toolproof's Messages API: ${request.method} ${request.url.split('?')[0]}.`,
      });
    };
    scope.route({ method: ['GET', 'PUT', 'DELETE', 'PATCH'], url: '/v1/messages', handler: notServed });
    scope.all('/v1/messages/*', notServed);
  };
}
