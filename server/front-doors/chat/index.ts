/**
 * The chat completions front door (POST /v1/chat/completions), declared for registerFrontDoor
 * (../register.ts) and listed in FRONT_DOORS (../index.ts).
 */
import type { ChatCompletionRequest } from '../../../protocol/openai.js';
import type { ChatCall } from '../../chat/context.js';
import { startChatCall } from '../../chat/start.js';
import type { FrontDoor } from '../types.js';
import { chatErrorEvent, openAIErrorBody } from './errors.js';
import { ChatSseOutput } from './output.js';
import { chatCompletionBody } from './schema.js';

/**
 * Chat completions: the pipeline's own API, so nothing to translate. A request without tools is
 * relayed byte for byte (the loop's raw result), its stream too (ChatSseOutput.relay).
 */
export const chat: FrontDoor<'chat', ChatCall> = {
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
    return startChatCall(request, state, request.body as ChatCompletionRequest, 'chat', request.rawBody);
  },
  callOf: (call) => call,
  answer(reply, result) {
    if (result.kind === 'raw') {
      reply.code(result.status);
      // The charset is what Fastify adds to a JSON string body: the same header as before.
      return reply.type('application/json; charset=utf-8').send(result.body);
    }
    return reply.send(result.completion);
  },
  output(reply, _call, state) {
    return new ChatSseOutput(reply, { 'x-request-id': reply.request.id }, state.config.streamKeepAliveMs);
  },
};
