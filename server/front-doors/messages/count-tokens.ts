/**
 * POST /v1/messages/count_tokens: a Messages request's input tokens, counted as it would go
 * upstream (translated to chat, then the request policies: server/chat/prepare.ts): the upstream's own
 * /tokenize when it has one, else an estimate (4 characters per token).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { activePolicies } from '../../../policies/composition.js';
import { conversationText, estimateTokens, tokenizeCount } from '../../../protocol/anthropic/count.js';
import { translateRequest } from '../../../protocol/anthropic/request.js';
import type { CountTokensRequest } from '../../../protocol/anthropic/types.js';
import { keepSourceText, stringifyJson } from '../../../protocol/lossless-json.js';
import type { ChatCompletionRequest } from '../../../protocol/openai.js';
import { RequestAbort } from '../../abort.js';
import type { AppState } from '../../app-state.js';
import { readText } from '../../chat/attempt.js';
import { firstAttemptContext, prepareRequest } from '../../chat/prepare.js';
import { parseUpstreamBody } from '../../error-handler.js';
import { memoryModel } from '../../fallback-memory.js';
import { withLearntWindow } from '../../context-window.js';
import { allowsModel, forbiddenModel } from '../../keys.js';
import { resolveRoute } from '../../routing.js';
import { countTokensBody } from './schema.js';

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
  controller: RequestAbort,
): Promise<number | undefined> {
  for (const { form, body, extra } of tokenizeTries(chat.model, chat)) {
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

export function registerCountTokens(scope: FastifyInstance, state: AppState): void {
  scope.post(
    '/v1/messages/count_tokens',
    {
      schema: {
        summary:
          "Count a Messages request's input tokens: the upstream's /tokenize when it has one, else an estimate (4 characters per token).",
        tags: ['anthropic'],
        body: countTokensBody,
      },
      config: { api: 'messages' },
    },
    async (request, reply) => {
      const body = request.body as CountTokensRequest;
      if (request.rawBody) keepSourceText(body, request.rawBody);
      // The key's allow-list holds here too: counting asks the model's upstream (/tokenize).
      const key = request.tpKey;
      if (key && !allowsModel(key, body.model)) {
        state.metrics.keyRefusals.labels(key.name, 'model').inc();
        throw forbiddenModel(key, body.model);
      }
      // With the window the chat path would use: one the upstream named refusing an earlier prompt
      // (per upstream, model and key) cuts tool results here as it does for the turn itself, so the
      // count is the prompt that would go upstream, learnt window or configured one alike.
      const route = withLearntWindow(
        resolveRoute(state.config, state.upstreams, body.model, state.modelLabels, key),
        state.chatDeps.windows,
        body.model,
        key?.name,
      );
      const {
        chat: translated,
        dropped,
        refusal,
      } = translateRequest({ ...body, max_tokens: 1, stream: false });
      // Counted as it would go upstream: the one prepareRequest of the attempt loop (system turns
      // placed, history repaired, the synthetic answer tool added when the turn would be forced),
      // its PDFs read first as the loop reads them, so a document counts as the text the model
      // reads (the same cache: a message sent after its count reads none of them again).
      const ctx = firstAttemptContext(
        route,
        translated,
        state.memory.isActive(
          route.client.label,
          memoryModel(route.upstreamModel ?? String(body.model), key?.name),
        ),
        { hostedTools: { dropped, ...(refusal ? { refusal } : {}) } },
      );
      // app.ts's close listener aborts it when the client goes away: the PDF reads only this
      // request waited for stop (a worker terminated, a queued read gone), as the chat loop's do.
      const controller = new RequestAbort();
      request.tpAbort = controller;
      const reader = state.chatDeps.documents;
      const documents =
        reader && route.settings.documents
          ? await reader.prepare(translated, controller, key?.name)
          : undefined;
      const phase = prepareRequest(
        activePolicies(state.policies, route.settings),
        translated,
        documents ? { ...ctx, documents } : ctx,
      );
      if (phase.error) throw phase.error;
      const chat = phase.request;
      request.tp = { model: route.name, upstream: route.client.label, stream: false, api: 'messages' };
      const counted = await upstreamCount(request, route, chat, controller);
      reply.header('x-toolproof-token-count', counted === undefined ? 'estimate' : 'tokenize');
      return { input_tokens: counted ?? estimateTokens(chat) };
    },
  );
}
