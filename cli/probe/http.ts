/**
 * The probe's one network boundary: POST /chat/completions with undici's fetch, a per-request
 * timeout, and every failure (HTTP status, refused connection, timeout, unreadable body) turned
 * into a value. Nothing above this file knows undici or throws for a failed request.
 */
import { Agent, fetch } from 'undici';
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import { BodyTooLarge, boundedText } from '../bounded-body.js';

const TOOLPROOF_HEADER = 'x-toolproof-attempts';
/**
 * The most of an answer the probe reads: a model server's completion or model list is well under
 * it; an endless body (a hostile or broken server) was read whole until the timeout (120 s by
 * default: GBs at loopback speed, the probe's process out of memory first).
 */
export const MAX_ANSWER_BYTES = 16 * 1024 * 1024;

export type ChatOutcome =
  | { ok: true; status: number; body: unknown }
  | { ok: false; status: number | null; message: string };

export interface ChatClientOptions {
  /** Base URL including /v1, e.g. http://127.0.0.1:8000/v1. */
  baseUrl: string;
  apiKey?: string;
  timeoutMs: number;
  /** Extra headers on every request (tests select simulator scenarios with them). */
  headers?: Record<string, string>;
}

export interface ChatClient {
  send(body: ChatCompletionRequest): Promise<ChatOutcome>;
  /** GET a path under the base URL (e.g. '/models'). */
  get(path: string): Promise<ChatOutcome>;
  /** Whether any response so far came from toolproof (it sets x-toolproof-attempts on chat completions). */
  sawToolproof(): boolean;
  close(): Promise<void>;
}

export function createChatClient(options: ChatClientOptions): ChatClient {
  const base = options.baseUrl.replace(/\/+$/, '');
  // Own dispatcher so close() releases keep-alive sockets: a probe run must not keep the process alive.
  const dispatcher = new Agent({ keepAliveTimeout: 2_000, connections: 16 });
  const headers: Record<string, string> = { 'content-type': 'application/json', ...options.headers };
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;

  let viaToolproof = false;

  async function request(path: string, body?: ChatCompletionRequest): Promise<ChatOutcome> {
    let response: Awaited<ReturnType<typeof fetch>>;
    try {
      response = await fetch(`${base}${path}`, {
        method: body ? 'POST' : 'GET',
        headers,
        ...(body ? { body: JSON.stringify(body) } : {}),
        dispatcher,
        signal: AbortSignal.timeout(options.timeoutMs),
      });
    } catch (err) {
      return { ok: false, status: null, message: describeFetchError(err, options.timeoutMs) };
    }
    let text: string;
    try {
      text = await boundedText(response.body, MAX_ANSWER_BYTES);
    } catch (err) {
      return {
        ok: false,
        status: response.status,
        message: `reading the body failed: ${err instanceof BodyTooLarge ? err.message : describeFetchError(err, options.timeoutMs)}`,
      };
    }
    if (response.headers.has(TOOLPROOF_HEADER)) viaToolproof = true;
    if (!response.ok) return { ok: false, status: response.status, message: errorMessage(text) };
    try {
      return { ok: true, status: response.status, body: JSON.parse(text) as unknown };
    } catch {
      return { ok: false, status: response.status, message: `the body is not JSON: ${truncate(text, 120)}` };
    }
  }

  return {
    send: (body) => request('/chat/completions', body),
    get: (path) => request(path),
    sawToolproof: () => viaToolproof,
    close: () => dispatcher.close(),
  };
}

function describeFetchError(err: unknown, timeoutMs: number): string {
  if (err instanceof Error) {
    if (err.name === 'TimeoutError' || err.name === 'AbortError') return `timed out after ${timeoutMs} ms`;
    // undici wraps the socket error: "fetch failed" with cause ECONNREFUSED etc.
    const cause = err.cause;
    if (cause instanceof Error) {
      const code = (cause as Error & { code?: unknown }).code;
      return typeof code === 'string' ? `${code}: ${cause.message}` : cause.message;
    }
    return err.message;
  }
  return String(err);
}

/**
 * The backend's error message if the body is an OpenAI error (or vLLM's / llama-server's variants).
 * Kept long: llama-server puts the model output it failed to parse into the message.
 */
function errorMessage(text: string): string {
  try {
    const parsed: unknown = JSON.parse(text);
    if (isRecord(parsed)) {
      const error = parsed.error;
      if (isRecord(error) && typeof error.message === 'string') return clip(error.message);
      if (typeof error === 'string') return clip(error);
      if (typeof parsed.message === 'string') return clip(parsed.message);
      if (typeof parsed.detail === 'string') return clip(parsed.detail);
    }
  } catch {
    // not JSON: fall through to the raw text
  }
  return clip(text);
}

const MAX_ERROR_CHARS = 16_000;

function clip(text: string): string {
  return text.length > MAX_ERROR_CHARS ? text.slice(0, MAX_ERROR_CHARS) : text;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function truncate(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
