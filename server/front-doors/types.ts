/**
 * A front door: one client API (chat completions, OpenAI Responses, Anthropic Messages) declared
 * as data and a few functions, and turned into routes by registerFrontDoor (register.ts). A door
 * owns only its edge: its request schema, its translation to a chat call and back, its stream
 * framing and its error body. Everything between (routing, policies, the attempt loop, retries,
 * metrics) is the one chat pipeline. See docs/front-doors.md.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ToolproofError } from '../../protocol/errors.js';
import type { AppState } from '../app-state.js';
import type { ChatCall } from '../chat/context.js';
import type { StreamOutput } from '../chat/output.js';
import type { ChatResult } from '../chat/pipeline.js';
import type { OpenStream } from '../open-streams.js';
import type { GatherHeld, RelayedStreamWatch } from '../worker-relay.js';

/** A model as GET /v1/models lists it (OpenAI's fields, plus whatever the upstream adds). */
export interface ModelEntry {
  id: string;
  object: 'model';
  created?: number;
  owned_by?: string;
  [extra: string]: unknown;
}

/**
 * The stream a door frames: the loop's output, closed by the route once the loop is done, and
 * the stream's shutdown event when it has its own (OpenStream).
 */
export type DoorOutput = StreamOutput & Partial<OpenStream> & { close(): void };

/**
 * One API. `Name` is its label (request.tp.api, the `api` label of the metrics, the log line);
 * `Turn` is what one request keeps between its start and its answer: the chat call it runs plus
 * whatever the answer's translation needs (for chat, the call itself).
 */
export interface FrontDoor<Name extends string = string, Turn = unknown> {
  readonly api: Name;
  /** The POST route of the API's one operation (its answers are what the upstream served). */
  readonly path: string;
  /** OpenAPI: the operation's summary and tags; `body` validates what the door reads (400 naming the field). */
  readonly schema: { readonly summary: string; readonly tags: readonly string[]; readonly body: object };
  /**
   * The API's error body. Every error on the door's routes (a schema 400, the auth hook's 401, an
   * upstream error, an internal one) is answered in it. Its special kinds are in err.detail.
   */
  errorBody(err: ToolproofError): unknown;
  /**
   * The API's stream error: the SSE bytes that end a stream which failed after its headers went
   * out (a failed attempt, the shutdown deadline). `turn` is the request's (Responses frames the
   * response as it stands).
   */
  errorEvent(err: ToolproofError, turn: Turn): string;
  /**
   * The translation to chat: the request opened as a chat call (startChatCall, or
   * startTranslatedCall for a body that is translated first). Sets what the door sends on every
   * answer (headers); throws a ToolproofError for a request it cannot translate.
   */
  open(request: FastifyRequest, reply: FastifyReply, state: AppState): Turn;
  /** The chat call a turn runs. Its request's `stream` picks answer() or output(). */
  callOf(turn: Turn): ChatCall;
  /** The translation back, not streamed: sends the loop's result in the API's shape. */
  answer(reply: FastifyReply, result: ChatResult, turn: Turn): FastifyReply;
  /**
   * Streamed: the output that frames the chat chunks the loop decided on as the API's events. One
   * with its own abortWithError ends the stream with its API's event at the shutdown deadline.
   */
  output(reply: FastifyReply, turn: Turn, state: AppState): DoorOutput;
  /**
   * More routes of the API (Messages: count_tokens, a 404 in its shape for what is not served),
   * registered in the door's scope, so their errors take its error body too. A route that should
   * carry the door's `api` label before its handler runs (a schema 400) says so in its
   * `config: { api }`.
   */
  routes?(scope: FastifyInstance, state: AppState): void;
  /**
   * For an API that keeps state between requests: the id of the kept state a request of the door's
   * routes needs (the first one it names), made by stateId (server/worker-relay.ts). With
   * TOOLPROOF_WORKERS > 1 a request whose state another worker made is answered by that worker.
   */
  heldBy?(request: FastifyRequest): string | undefined;
  /**
   * With heldBy: a watch of a stream the worker holding its state answers, so that a stream that
   * worker leaves unfinished (it exited) ends with the API's error events (worker-relay.ts).
   */
  relayedStream?(request: FastifyRequest): RelayedStreamWatch;
  /**
   * With heldBy: the state a request names beyond its first id that other workers hold, asked of
   * them and placed in the request before it is served (worker-relay.ts GatherHeld).
   */
  gatherHeld?(state: AppState): GatherHeld;
  /**
   * The API's page of GET /v1/models, for a request that shows it is this API's client (Anthropic:
   * the anthropic-version header). The first door that claims a request answers it; OpenAI's page
   * otherwise.
   */
  models?: {
    claims(request: FastifyRequest): boolean;
    page(models: readonly ModelEntry[], created: number): unknown;
    /** One model in the API's shape (GET /v1/models/{id}, the SDKs' models.retrieve). */
    model(model: ModelEntry, created: number): unknown;
  };
}
