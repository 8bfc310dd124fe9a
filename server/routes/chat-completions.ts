import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { RequestAbort } from '../abort.js';
import { ChatCall, type ChatDeps } from '../chat/context.js';
import { completeChat } from '../chat/complete.js';
import { type SseSink, streamChat } from '../chat/stream.js';
import { activePolicies } from '../chat/policy-runner.js';
import { newTrace } from '../chat/trace.js';
import type { AppState } from '../app-state.js';
import { resolveRoute } from '../routing.js';
import { chatCompletionBody } from './schemas.js';

/** Writes SSE straight to the socket; a full socket buffer pauses the upstream read (backpressure). */
class ReplySink implements SseSink {
  opened = false;
  constructor(
    private readonly reply: FastifyReply,
    private readonly headers: Record<string, string>,
  ) {}

  open(): void {
    if (this.opened) return;
    this.opened = true;
    this.reply.hijack();
    this.reply.raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
      connection: 'keep-alive',
      ...this.headers,
    });
  }

  write(data: string | Uint8Array): Promise<void> {
    const raw = this.reply.raw;
    if (raw.destroyed || raw.writableEnded) return Promise.resolve();
    if (raw.write(data)) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        raw.off('drain', done);
        raw.off('close', done);
        resolve();
      };
      raw.on('drain', done);
      raw.on('close', done);
    });
  }
}

/** Headers worth forwarding upstream (conversation ids, tracing); never the client's API key. */
function forwardHeaders(headers: Record<string, unknown>, reqId: string): Record<string, string> {
  const out: Record<string, string> = { 'x-request-id': reqId };
  for (const name of ['x-conversation-id', 'traceparent', 'tracestate', 'x-sim-scenario']) {
    const v = headers[name];
    if (typeof v === 'string') out[name] = v;
  }
  return out;
}

export function registerChatRoute(app: FastifyInstance, state: AppState): void {
  const deps: ChatDeps = state.chatDeps;
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
      const route = resolveRoute(state.config, state.upstreams, body.model, state.modelLabels);
      // app.ts's close listener aborts it when the client goes away: no GPU time for nobody.
      const controller = new RequestAbort();
      request.tpAbort = controller;
      const trace = newTrace();
      const call = new ChatCall(
        request.id,
        body,
        request.rawBody ?? Buffer.from(JSON.stringify(body)),
        route,
        activePolicies(state.policies, route.settings),
        controller,
        trace,
        forwardHeaders(request.headers, request.id),
        state.memory.isActive(route.client.label, route.name),
      );
      request.tp = { model: route.name, upstream: route.client.label, stream: body.stream === true, call };

      if (body.stream !== true) {
        const outcome = await completeChat(call, deps);
        reply.header('x-toolproof-attempts', String(trace.attempts));
        reply.code(outcome.status);
        if (typeof outcome.body === 'string') return reply.type('application/json').send(outcome.body);
        return reply.send(outcome.body);
      }

      const sink = new ReplySink(reply, { 'x-request-id': request.id });
      try {
        await streamChat(call, deps, sink);
      } catch (err) {
        if (!sink.opened) throw err; // nothing sent yet: a normal JSON error response
        // Headers are out: the only honest ending left is to close the stream.
      } finally {
        if (sink.opened) {
          if (!reply.raw.writableEnded) reply.raw.end();
        }
      }
      return reply;
    },
  );
}
