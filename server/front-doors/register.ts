/**
 * registerFrontDoor: a FrontDoor declaration (types.ts) becomes its routes, in a scope of its own
 * whose error handler answers in the door's error body (the auth hook's 401s included: Fastify
 * hands a hook's error to the route's own handler). The one route skeleton of every door: open the
 * call, then either run it whole and translate the answer, or stream it through the door's output.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppState } from '../app-state.js';
import { completeChat, streamChat } from '../chat/pipeline.js';
import { cutWhenUnread } from '../drain.js';
import { errorHandler } from '../error-handler.js';
import type { OpenStream } from '../open-streams.js';
import { relayToOwner } from '../worker-relay.js';
import type { FrontDoorApi } from './index.js';
import type { DoorOutput, FrontDoor } from './types.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The front door a route belongs to: its requests' `api` label, also when rejected before the handler. */
    api?: FrontDoorApi;
  }
}

function hasOwnShutdownEvent(out: DoorOutput): out is DoorOutput & OpenStream {
  return out.abortWithError !== undefined;
}

export async function registerFrontDoor(
  app: FastifyInstance,
  state: AppState,
  /** Any door of the table: its turn is opaque here, only handed back to its own methods. */
  door: FrontDoor<FrontDoorApi>,
): Promise<void> {
  const deps = state.chatDeps;
  const handler = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const turn = door.open(request, reply, state);
    const call = door.callOf(turn);
    // Over its key's concurrency, it waits here for a slot (server/keys.ts), before any byte of
    // its answer: a refusal after the wait is still the HTTP 429 the client retries on. The wait
    // is the request's queuedMs too (log line, inspector), as the upstream's admission queue's is.
    if (request.tpKeyWait !== undefined) {
      const from = performance.now();
      try {
        await request.tpKeyWait;
      } finally {
        call.trace.queuedMs += performance.now() - from;
      }
    }
    if (call.original.stream !== true) {
      const result = await completeChat(call, deps);
      reply.header('x-toolproof-attempts', String(call.trace.attempts));
      const answered = door.answer(reply, result, turn);
      // A client that never reads the answer is cut as gone, as a stream's is (drain.ts).
      cutWhenUnread(reply.raw, state.config.clientTimeouts.requestMs);
      return answered;
    }
    const out = door.output(reply, turn, state);
    // app.ts drops it when the response closes; without its own, the reply's chat framing stays.
    if (hasOwnShutdownEvent(out)) state.openStreams.claim(reply.raw, out);
    try {
      await streamChat(call, deps, out);
    } finally {
      out.close();
    }
    return reply;
  };
  await app.register(async (scope) => {
    // State another worker holds: the request is answered there (worker-relay.ts).
    if (door.heldBy)
      scope.addHook(
        'preHandler',
        relayToOwner(state, door.heldBy, door.relayedStream, door.gatherHeld?.(state)),
      );
    scope.setErrorHandler(
      errorHandler(door.errorBody, (model) => state.metrics.internalErrors.labels(model).inc()),
    );
    scope.post(
      door.path,
      {
        schema: { summary: door.schema.summary, tags: [...door.schema.tags], body: door.schema.body },
        config: { api: door.api },
      },
      handler,
    );
    door.routes?.(scope, state);
  });
}
