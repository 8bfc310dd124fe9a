/**
 * One request on the three front doors (chat completions, Responses, Anthropic Messages) through
 * the real SDKs, non-streamed and streamed (the SDK's own accumulator), each answer read as one
 * comparable outcome: the assembled result with its random ids numbered in order and its clock
 * zeroed, or the error's status and body. Streamed equals non-streamed is then one toEqual.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { ChatCompletionStream } from 'openai/lib/ChatCompletionStream';

export type Door = 'chat' | 'responses' | 'messages';
export const DOORS: Door[] = ['chat', 'responses', 'messages'];

/** What the client got: the result, or the error's status (undefined after the headers) and body. */
export type Outcome = { ok: unknown } | { status: number | undefined; error: unknown };

/** The request, as each door spells it. */
export interface DoorAsk {
  chat?: Record<string, unknown>;
  responses?: Record<string, unknown>;
  messages?: Record<string, unknown>;
}

const DROPPED = new Set(['parsed', 'output_parsed', 'parsed_arguments', 'parsed_output']);

/** Random ids numbered in order of appearance, clocks zeroed, the SDKs' client-side fields left out. */
export function normalize(v: unknown): unknown {
  const ids = new Map<string, string>();
  return JSON.parse(
    JSON.stringify(v, (k, x) => {
      if (DROPPED.has(k)) return undefined;
      // A backend's own extras on a whole body (vLLM's nulls, llama-server's timings, which count
      // its prompt cache) are relayed as they came; a stream's chunks carry none of them.
      if (x === null || k === 'timings') return undefined;
      // What the backend's prompt cache held differs from one request to the next.
      if (k === 'cached_tokens') return undefined;
      if (k === 'tool_calls' && Array.isArray(x) && x.length === 0) return undefined;
      if (k === 'created' || k === 'created_at') return 0;
      if ((k === 'id' || k === 'call_id' || k === 'tool_use_id') && typeof x === 'string') {
        if (!ids.has(x)) ids.set(x, `id${ids.size}`);
        return ids.get(x);
      }
      return x;
    }),
  );
}

async function outcome(p: () => Promise<unknown>): Promise<Outcome> {
  try {
    return { ok: normalize(await p()) };
  } catch (err) {
    const e = err as { status?: number; error?: unknown; message?: string };
    if (e.error === undefined && e.status === undefined) throw err;
    return { status: e.status, error: normalize(e.error) };
  }
}

export function doorClients(origin: string, headers: Record<string, string> = {}) {
  return {
    openai: new OpenAI({
      baseURL: `${origin}/v1`,
      apiKey: 'k',
      maxRetries: 0,
      timeout: 15_000,
      defaultHeaders: headers,
    }),
    anthropic: new Anthropic({
      baseURL: origin,
      apiKey: 'k',
      maxRetries: 0,
      timeout: 15_000,
      defaultHeaders: headers,
    }),
  };
}

/** The outcome on `door`, streamed or not. */
export async function askDoor(
  clients: ReturnType<typeof doorClients>,
  door: Door,
  params: Record<string, unknown>,
  stream: boolean,
): Promise<Outcome> {
  const { openai, anthropic } = clients;
  if (door === 'chat')
    return outcome(async () => {
      if (!stream) return openai.chat.completions.create(params as never);
      // Usage comes on a chat stream when asked (OpenAI's contract); the whole answer has it.
      const asked = { ...params, stream_options: { include_usage: true } };
      // The helper parses content under a json_schema response_format as it comes, which
      // create() does not: read the same bytes through its accumulator without the parse.
      const runner =
        params.response_format === undefined
          ? openai.chat.completions.stream(asked as never)
          : ChatCompletionStream.fromReadableStream(
              (
                await openai.chat.completions.create({
                  ...asked,
                  stream: true,
                } as OpenAI.Chat.ChatCompletionCreateParamsStreaming)
              ).toReadableStream(),
            );
      for await (const _ of runner) {
        // drained
      }
      return runner.finalChatCompletion();
    });
  if (door === 'responses')
    return outcome(async () => {
      if (!stream) return openai.responses.create(params as never);
      const s = openai.responses.stream({ ...params, stream: true } as never);
      for await (const _ of s) {
        // drained
      }
      return s.finalResponse();
    });
  return outcome(async () => {
    if (!stream) return anthropic.messages.create(params as never);
    return anthropic.messages.stream(params as never).finalMessage();
  });
}
