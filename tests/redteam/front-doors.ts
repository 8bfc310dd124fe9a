/**
 * Probe harness for the Responses and Messages front doors: toolproof on loopback in front of a
 * scripted upstream that answers each request with the planned turn (as JSON or as SSE, cut in
 * small pieces, with a usage chunk when asked), plus the real `openai` and `@anthropic-ai/sdk`
 * clients. Each front door is asked the same thing twice, non-streamed and streamed through
 * the SDK's own accumulator (finalMessage / finalResponse), and the two are compared.
 */
import Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import type { ChatCompletionChunk } from '../../protocol/openai.js';
import {
  type ScriptedReply,
  type ScriptedStack,
  startScriptedStack,
  type Turn,
  turnChunks,
  turnCompletion,
} from '../server/scripted-upstream.js';

export interface PlannedTurn extends Turn {
  reasoning?: string;
}

export interface FrontDoors {
  stack: ScriptedStack;
  anthropic: Anthropic;
  openai: OpenAI;
  origin: string;
  /** The turns the upstream answers with, in order, counted apart for streamed and non-streamed requests. */
  plan(turns: PlannedTurn[]): void;
  /** Upstream requests served since the last plan(), [non-streamed, streamed]. */
  served(): [number, number];
  close(): Promise<void>;
}

const USAGE = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };

function chunksFor(t: PlannedTurn, includeUsage: boolean): ChatCompletionChunk[] {
  const out = turnChunks(t);
  const first = out[0]!;
  if (t.reasoning)
    out.splice(1, 0, {
      ...first,
      choices: [{ index: 0, delta: { reasoning_content: t.reasoning }, finish_reason: null }],
    } as ChatCompletionChunk);
  if (includeUsage) out.push({ ...first, choices: [], usage: USAGE } as ChatCompletionChunk);
  return out;
}

export function replyFor(t: PlannedTurn, body: Record<string, unknown>): ScriptedReply {
  if (body.stream !== true) {
    const c = turnCompletion(t) as { choices: Array<{ message: Record<string, unknown> }> };
    if (t.reasoning) c.choices[0]!.message.reasoning_content = t.reasoning;
    return { json: c };
  }
  const usage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true;
  return { sse: chunksFor(t, usage) };
}

export async function startFrontDoors(
  options: Parameters<typeof startScriptedStack>[1] = {},
): Promise<FrontDoors> {
  let turns: PlannedTurn[] = [{ content: 'hi' }];
  const count = [0, 0];
  const stack = await startScriptedStack((body) => {
    const k = body.stream === true ? 1 : 0;
    const i = count[k]!++;
    return replyFor(turns[Math.min(i, turns.length - 1)]!, body);
  }, options);
  const origin = stack.url.slice(0, -'/v1'.length);
  return {
    stack,
    origin,
    openai: stack.client,
    anthropic: new Anthropic({ baseURL: origin, apiKey: 'x', maxRetries: 0, timeout: 15_000 }),
    plan(t) {
      turns = t;
      count[0] = 0;
      count[1] = 0;
    },
    served: () => [count[0]!, count[1]!],
    close: () => stack.close(),
  };
}

/** A message with its per-request id blanked and the SDK's client-side fields left out. */
export function normalizeMessage(m: Anthropic.Message): unknown {
  return JSON.parse(JSON.stringify({ ...m, id: 'msg' }, (k, v) => (k === 'parsed_output' ? undefined : v)));
}

/** A response with its random ids numbered in order, its clock zeroed, the SDK's parsed_* fields left out. */
export function normalizeResponse(r: OpenAI.Responses.Response): unknown {
  const ids = new Map<string, string>();
  return JSON.parse(
    JSON.stringify({ ...r, created_at: 0 }, (k, v) => {
      if (k === 'parsed' || k === 'output_parsed' || k === 'parsed_arguments') return undefined;
      if (k === 'id' && typeof v === 'string') {
        if (!ids.has(v)) ids.set(v, `id${ids.size}`);
        return ids.get(v);
      }
      return v;
    }),
  );
}

/** messages.create, then messages.stream().finalMessage() with every event's type. */
export async function bothMessages(
  fd: FrontDoors,
  params: Anthropic.MessageCreateParamsNonStreaming,
): Promise<{
  plain: Anthropic.Message;
  streamed: Anthropic.Message;
  events: Anthropic.MessageStreamEvent[];
}> {
  const plain = await fd.anthropic.messages.create(params);
  const stream = fd.anthropic.messages.stream(params);
  const events: Anthropic.MessageStreamEvent[] = [];
  stream.on('streamEvent', (e) => events.push(e));
  const streamed = await stream.finalMessage();
  return { plain, streamed, events };
}

/** responses.create, then responses.stream().finalResponse() with every event. */
export async function bothResponses(
  fd: FrontDoors,
  params: OpenAI.Responses.ResponseCreateParamsNonStreaming,
): Promise<{
  plain: OpenAI.Responses.Response;
  streamed: OpenAI.Responses.Response;
  events: OpenAI.Responses.ResponseStreamEvent[];
}> {
  const plain = await fd.openai.responses.create(params);
  const stream = fd.openai.responses.stream({ ...params, stream: true });
  const events: OpenAI.Responses.ResponseStreamEvent[] = [];
  for await (const e of stream) events.push(e);
  const streamed = await stream.finalResponse();
  return { plain, streamed, events };
}
