/**
 * The OpenTelemetry GenAI semantic conventions toolproof writes: attribute names (as strings:
 * the conventions' own constants live in the package's "incubating" entry, which loads every
 * experimental name there is), and the chat messages in the conventions' JSON shape for
 * `gen_ai.input.messages` / `gen_ai.output.messages` (only written under the content opt-in).
 * Loaded with the SDK only (sdk.ts): nothing here runs with tracing off.
 */
import type { AttributeValue } from '@opentelemetry/api';
import type { ChatCompletion, ChatCompletionRequest } from '../../protocol/openai.js';
import { pushAll } from '../../protocol/append-all.js';
import { upstreamJsonProblem } from '../../protocol/completion-shape.js';

export const GEN_AI = {
  operation: 'gen_ai.operation.name',
  /** The provider attribute's current name; the deprecated `gen_ai.system` it replaced is not written. */
  provider: 'gen_ai.provider.name',
  requestModel: 'gen_ai.request.model',
  maxTokens: 'gen_ai.request.max_tokens',
  temperature: 'gen_ai.request.temperature',
  topP: 'gen_ai.request.top_p',
  choiceCount: 'gen_ai.request.choice.count',
  seed: 'gen_ai.request.seed',
  frequencyPenalty: 'gen_ai.request.frequency_penalty',
  presencePenalty: 'gen_ai.request.presence_penalty',
  topK: 'gen_ai.request.top_k',
  stopSequences: 'gen_ai.request.stop_sequences',
  outputType: 'gen_ai.output.type',
  stream: 'gen_ai.request.stream',
  responseModel: 'gen_ai.response.model',
  responseId: 'gen_ai.response.id',
  finishReasons: 'gen_ai.response.finish_reasons',
  timeToFirstChunk: 'gen_ai.response.time_to_first_chunk',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  cacheReadTokens: 'gen_ai.usage.cache_read.input_tokens',
  reasoningTokens: 'gen_ai.usage.reasoning.output_tokens',
  conversationId: 'gen_ai.conversation.id',
  inputMessages: 'gen_ai.input.messages',
  outputMessages: 'gen_ai.output.messages',
  toolDefinitions: 'gen_ai.tool.definitions',
} as const;

/** vLLM and llama-server speak OpenAI's chat completions: the wire's provider (server.address names the host). */
export const PROVIDER = 'openai';

type Part = Record<string, unknown>;
interface OutMessage {
  role: string;
  parts: Part[];
  finish_reason?: string;
}

/**
 * The request's sampling settings, as the conventions name them, written onto `span` one by one
 * (no attribute object: each one would be copied by the SDK and then left to the collector).
 */
export function setRequestAttributes(
  span: { setAttribute(key: string, value: AttributeValue): unknown },
  request: ChatCompletionRequest,
): void {
  const r = request as unknown as Record<string, unknown>;
  const maxTokens = r.max_completion_tokens ?? r.max_tokens;
  if (typeof maxTokens === 'number') span.setAttribute(GEN_AI.maxTokens, maxTokens);
  if (typeof r.temperature === 'number') span.setAttribute(GEN_AI.temperature, r.temperature);
  if (typeof r.top_p === 'number') span.setAttribute(GEN_AI.topP, r.top_p);
  if (typeof r.n === 'number' && r.n !== 1) span.setAttribute(GEN_AI.choiceCount, r.n);
  if (typeof r.seed === 'number') span.setAttribute(GEN_AI.seed, r.seed);
  if (typeof r.frequency_penalty === 'number')
    span.setAttribute(GEN_AI.frequencyPenalty, r.frequency_penalty);
  if (typeof r.presence_penalty === 'number') span.setAttribute(GEN_AI.presencePenalty, r.presence_penalty);
  // vLLM's and llama-server's extension of the OpenAI request.
  if (typeof r.top_k === 'number') span.setAttribute(GEN_AI.topK, r.top_k);
  const stop = typeof r.stop === 'string' ? [r.stop] : Array.isArray(r.stop) ? r.stop : undefined;
  if (stop && stop.length > 0 && stop.every((x) => typeof x === 'string'))
    // The client's strings: at most 16, each cut at 256 characters (as names the client picks are).
    span.setAttribute(
      GEN_AI.stopSequences,
      (stop as string[]).slice(0, MAX_STOP_SEQUENCES).map((x) => (x.length > 256 ? x.slice(0, 256) : x)),
    );
  // Conditionally required by the conventions when the request names an output format.
  const format = (r.response_format as { type?: unknown } | undefined)?.type;
  if (format === 'json_object' || format === 'json_schema') span.setAttribute(GEN_AI.outputType, 'json');
  else if (format === 'text') span.setAttribute(GEN_AI.outputType, 'text');
}

/** The most stop sequences a span names (OpenAI takes 4; vLLM any number). */
const MAX_STOP_SEQUENCES = 16;

function textOf(content: unknown): Part[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', content }];
  if (!Array.isArray(content)) return [];
  const parts: Part[] = [];
  for (const p of content as unknown[]) {
    if (typeof p !== 'object' || p === null) continue;
    const part = p as { type?: unknown; text?: unknown };
    if (typeof part.text === 'string') parts.push({ type: 'text', content: part.text });
    // Images and files: their kind only (a data URL is no trace attribute).
    else if (typeof part.type === 'string') parts.push({ type: part.type });
  }
  return parts;
}

function toolCallParts(calls: unknown): Part[] {
  if (!Array.isArray(calls)) return [];
  const parts: Part[] = [];
  for (const c of calls as unknown[]) {
    const call = c as { id?: unknown; function?: { name?: unknown; arguments?: unknown } } | null;
    if (!call || typeof call !== 'object') continue;
    parts.push({
      type: 'tool_call',
      ...(typeof call.id === 'string' ? { id: call.id } : {}),
      name: call.function?.name,
      arguments: call.function?.arguments,
    });
  }
  return parts;
}

/** A chat request's messages as `gen_ai.input.messages` (a JSON string). */
export function inputMessages(request: ChatCompletionRequest): string {
  const out: OutMessage[] = [];
  const messages: unknown = request.messages;
  if (!Array.isArray(messages)) return '[]';
  for (const m of messages as unknown[]) {
    if (typeof m !== 'object' || m === null) continue;
    const msg = m as Record<string, unknown>;
    const role = typeof msg.role === 'string' ? msg.role : 'user';
    if (role === 'tool') {
      out.push({
        role,
        parts: [{ type: 'tool_call_response', id: msg.tool_call_id, response: msg.content }],
      });
      continue;
    }
    const parts: Part[] = [];
    const reasoning = msg.reasoning_content ?? msg.reasoning;
    if (typeof reasoning === 'string' && reasoning !== '')
      parts.push({ type: 'reasoning', content: reasoning });
    pushAll(pushAll(parts, textOf(msg.content)), toolCallParts(msg.tool_calls));
    out.push({ role, parts });
  }
  return JSON.stringify(out);
}

/**
 * The tools a request offered, as `gen_ai.tool.definitions` (a JSON string): each one's type and
 * name only. The conventions advise against the descriptions and schemas by default (an agent's
 * run to tens of KB a request, cut at the attribute limit into JSON that no longer parses), and
 * the names are what tells a model's call apart from a tool it was never offered.
 */
export function toolDefinitions(request: ChatCompletionRequest): string | undefined {
  const tools: unknown = (request as { tools?: unknown }).tools;
  if (!Array.isArray(tools) || tools.length === 0) return undefined;
  const out: Array<{ type: string; name: string }> = [];
  for (const t of tools as unknown[]) {
    if (typeof t !== 'object' || t === null) continue;
    const tool = t as { type?: unknown; name?: unknown; function?: { name?: unknown } };
    const type = typeof tool.type === 'string' ? tool.type : 'function';
    const name = typeof tool.function?.name === 'string' ? tool.function.name : tool.name;
    if (typeof name === 'string') out.push({ type, name });
  }
  return JSON.stringify(out);
}

/** A whole completion's choices as `gen_ai.output.messages`. */
export function completionMessages(completion: ChatCompletion): string {
  const out: OutMessage[] = [];
  for (const choice of completion.choices ?? []) {
    const msg = (choice?.message ?? {}) as unknown as Record<string, unknown>;
    const parts: Part[] = [];
    const reasoning = msg.reasoning_content ?? msg.reasoning;
    if (typeof reasoning === 'string' && reasoning !== '')
      parts.push({ type: 'reasoning', content: reasoning });
    pushAll(pushAll(parts, textOf(msg.content)), toolCallParts(msg.tool_calls));
    out.push({
      role: 'assistant',
      parts,
      ...(typeof choice?.finish_reason === 'string' ? { finish_reason: choice.finish_reason } : {}),
    });
  }
  return JSON.stringify(out);
}

interface Reassembled {
  reasoning: string;
  content: string;
  calls: Array<{ id?: string; name: string; arguments: string }>;
  finish?: string;
}

/**
 * A stream's events (the payloads of its `data:` lines, as the upstream sent them) reassembled
 * into `gen_ai.output.messages`: what the model wrote, before toolproof touched it.
 */
export function streamedMessages(payloads: readonly string[]): string {
  const choices = new Map<number, Reassembled>();
  for (const payload of payloads) {
    // An event the stream refused unparsed (nesting, keys: protocol/completion-shape.ts) stays so.
    if (payload === '[DONE]' || upstreamJsonProblem(payload) !== undefined) continue;
    let chunk: unknown;
    try {
      chunk = JSON.parse(payload);
    } catch {
      continue; // a broken event is in the stream's error, not in its text
    }
    const list = (chunk as { choices?: unknown } | null)?.choices;
    if (!Array.isArray(list)) continue;
    for (const c of list as unknown[]) {
      const choice = c as {
        index?: unknown;
        delta?: Record<string, unknown>;
        finish_reason?: unknown;
      } | null;
      if (!choice || typeof choice !== 'object') continue;
      const index = typeof choice.index === 'number' ? choice.index : 0;
      let r = choices.get(index);
      if (!r) choices.set(index, (r = { reasoning: '', content: '', calls: [] }));
      const delta = choice.delta ?? {};
      const reasoning = delta.reasoning_content ?? delta.reasoning;
      if (typeof reasoning === 'string') r.reasoning += reasoning;
      if (typeof delta.content === 'string') r.content += delta.content;
      if (Array.isArray(delta.tool_calls))
        for (const d of delta.tool_calls as unknown[]) {
          const tc = d as {
            index?: unknown;
            id?: unknown;
            function?: { name?: unknown; arguments?: unknown };
          };
          const at = typeof tc.index === 'number' ? tc.index : r.calls.length;
          const call = (r.calls[at] ??= { name: '', arguments: '' });
          if (typeof tc.id === 'string') call.id = tc.id;
          if (typeof tc.function?.name === 'string') call.name += tc.function.name;
          if (typeof tc.function?.arguments === 'string') call.arguments += tc.function.arguments;
        }
      if (typeof choice.finish_reason === 'string') r.finish = choice.finish_reason;
    }
  }
  const out: OutMessage[] = [];
  for (const index of [...choices.keys()].sort((a, b) => a - b)) {
    const r = choices.get(index)!;
    const parts: Part[] = [];
    if (r.reasoning) parts.push({ type: 'reasoning', content: r.reasoning });
    if (r.content) parts.push({ type: 'text', content: r.content });
    for (const c of r.calls)
      if (c)
        parts.push({
          type: 'tool_call',
          ...(c.id ? { id: c.id } : {}),
          name: c.name,
          arguments: c.arguments,
        });
    out.push({ role: 'assistant', parts, ...(r.finish ? { finish_reason: r.finish } : {}) });
  }
  return JSON.stringify(out);
}
