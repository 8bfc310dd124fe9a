/**
 * The chat completions front door (POST /v1/chat/completions), declared for registerFrontDoor
 * (../register.ts) and listed in FRONT_DOORS (../index.ts).
 */
import {
  CustomCallChunks,
  toCustomCalls,
  translateCustomTools,
} from '../../../protocol/chat-custom-tools.js';
import { toLegacyFunctionCall, translateLegacyFunctions } from '../../../protocol/chat-legacy-functions.js';
import { narrowChatAllowedTools } from '../../../protocol/allowed-tools.js';
import type { ChatCompletionRequest } from '../../../protocol/openai.js';
import { chatForBackends } from '../../../protocol/chat-backend-shapes.js';
import type { ChatCall } from '../../chat/context.js';
import { startChatCall } from '../../chat/start.js';
import type { FrontDoor } from '../types.js';
import { chatErrorEvent, openAIErrorBody } from './errors.js';
import { ChatSseOutput, CustomToolsSseOutput, LegacyFunctionsSseOutput } from './output.js';
import { chatCompletionBody } from './schema.js';

/**
 * Chat completions: the pipeline's own API, so nothing to translate. A request without tools is
 * relayed byte for byte (the loop's raw result), its stream too (ChatSseOutput.relay).
 */
/** A chat request's call, and the custom tools it declared (translated: chat-custom-tools.ts). */
interface ChatTurn {
  call: ChatCall;
  custom?: ReadonlySet<string>;
  /** It declared the deprecated `functions`: the answer goes back in that shape (chat-legacy-functions.ts). */
  legacy?: true;
}

export const chat: FrontDoor<'chat', ChatTurn> = {
  api: 'chat',
  path: '/v1/chat/completions',
  schema: {
    summary:
      'Create a chat completion (OpenAI-compatible), with forced tool use, leak recovery and history repair.',
    tags: ['openai'],
    body: chatCompletionBody,
  },
  errorBody: openAIErrorBody,
  errorEvent: chatErrorEvent,
  open(request, _reply, state) {
    const sent = request.body as ChatCompletionRequest;
    // Refusal parts and developer messages as backends take them: not the client's bytes then.
    const plain = chatForBackends(sent);
    // The deprecated `functions` as the tools they are, answered in their own shape.
    const legacy = translateLegacyFunctions(plain ?? sent);
    if (legacy) return { call: startChatCall(request, state, legacy, 'chat'), legacy: true };
    // tool_choice allowed_tools as the request it means: only those tools, the mode as tool_choice.
    const narrowed = narrowChatAllowedTools(plain ?? sent);
    const body = narrowed ?? plain ?? sent;
    const translated = translateCustomTools(body);
    if (!translated)
      return {
        call: startChatCall(request, state, body, 'chat', plain || narrowed ? undefined : request.rawBody),
      };
    // Not the client's bytes any more: no raw body to forward.
    return { call: startChatCall(request, state, translated.chat, 'chat'), custom: translated.custom };
  },
  callOf: (turn) => turn.call,
  answer(reply, result, turn) {
    if (result.kind === 'raw') {
      reply.code(result.status);
      // The charset is what Fastify adds to a JSON string body: the same header as before.
      return reply.type('application/json; charset=utf-8').send(result.body);
    }
    if (turn.legacy) return reply.send(toLegacyFunctionCall(result.completion));
    return reply.send(turn.custom ? toCustomCalls(result.completion, turn.custom) : result.completion);
  },
  output(reply, turn, state) {
    const headers = { 'x-request-id': reply.request.id };
    if (turn.legacy) return new LegacyFunctionsSseOutput(reply, headers, state.config.streamKeepAliveMs);
    return turn.custom
      ? new CustomToolsSseOutput(
          reply,
          headers,
          state.config.streamKeepAliveMs,
          new CustomCallChunks(turn.custom),
        )
      : new ChatSseOutput(reply, headers, state.config.streamKeepAliveMs);
  },
};
