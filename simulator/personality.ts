/** What differs between backends on the wire, behind one interface. */
import type { Generation } from './generate.js';
import type { Personality, SimulatorOptions } from './types.js';

export interface SimError {
  status: number;
  message: string;
  /** Defaults per personality and status when absent. */
  type?: string;
  /** The body is `message` as text/plain, not the personality's error JSON (an uncaught exception's ASGI 500). */
  plain?: boolean;
  /** The offending field, where the backend names one (vLLM validation errors). */
  param?: string | null;
  /**
   * Counts the backend puts beside the message, after its own keys (llama-server's
   * exceed_context_size_error: n_prompt_tokens and n_ctx).
   */
  counts?: Readonly<Record<string, number>>;
}

export interface ResponseMeta {
  id: string;
  created: number;
  model: string;
  promptTokens: number;
  /** Prompt tokens the replica's prefix cache served (0 without a cache). */
  cachedTokens: number;
  /** vLLM: report `prompt_tokens_details` (`--enable-prompt-tokens-details`). */
  promptTokensDetails: boolean;
  completionTokens: number;
  includeUsage: boolean;
  toolCallIds: string[];
  /** Where reasoning goes: `reasoning_content`, or `reasoning` for current vLLM. */
  reasoningField: 'reasoning_content' | 'reasoning';
  /** top_logprobs count when the request asked for logprobs, else null. */
  logprobs: number | null;
  /** vLLM: the request's `prompt_logprobs` (top count), else null. */
  promptLogprobs?: number | null;
}

export interface SimStats {
  running: number;
  promptTokens: number;
  /** Prompt tokens served from the prefix cache. */
  cachedTokens: number;
  generationTokens: number;
  requests: number;
  ttftSeconds: number[];
  e2eSeconds: number[];
}

export type ParsedBody = { ok: true; value: unknown } | { ok: false; error: SimError };

export interface PersonalityImpl {
  name: Personality;
  /** Headers for a successful response of this content type. */
  okHeaders(contentType: 'json' | 'sse' | 'text', origin: string | undefined): Record<string, string>;
  errorHeaders(origin: string | undefined): Record<string, string>;
  errorBody(err: SimError, options?: SimulatorOptions): unknown;
  /** Whether `apiKey` guards this (normalised) path, and the answer when the key is wrong. */
  guarded(path: string): boolean;
  unauthorized(): { status: number; body: unknown };
  /** Unknown path, or a known path with the wrong method. */
  routeNotFound(knownPath: boolean): { status: number; body: unknown };
  parseBody(raw: string): ParsedBody;
  /** Request checks before generation; returns the backend's own error, or null. */
  validateChat(body: Record<string, unknown>, options: SimulatorOptions): SimError | null;
  completionId(): string;
  toolCallId(): string;
  completion(gen: Generation, meta: ResponseMeta): unknown;
  /** SSE payloads in order, without the final `[DONE]`. */
  chunks(gen: Generation, meta: ResponseMeta): unknown[];
  /** The stream event for an error after the stream started, and whether `[DONE]` follows. */
  midStreamError(err: SimError): { event: unknown; done: boolean };
  models(options: SimulatorOptions, created: number): unknown;
  /** llama-server's GET /props (vLLM has none: a 404). */
  props?(options: SimulatorOptions): unknown;
  metrics(
    options: SimulatorOptions,
    stats: SimStats,
  ): { ok: true; text: string } | { ok: false; error: SimError };
  health(): { status: number; body: unknown };
  /** The reported model name. */
  modelName(options: SimulatorOptions): string;
}

/** nlohmann / Python type names for "type must be X, but is Y" messages. */
export function jsonTypeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'object') return 'object';
  if (typeof value === 'boolean') return 'boolean';
  if (typeof value === 'number') return 'number';
  return 'string';
}
