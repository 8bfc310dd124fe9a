/**
 * OpenAI chat-completions wire types, as much of them as toolproof reads or writes.
 * Every object keeps an index signature: fields toolproof does not own (vLLM's
 * `chat_template_kwargs`, llama-server's `timings`, ...) must pass through untouched.
 */

export type JsonObject = Record<string, unknown>;

export interface FunctionCall {
  name: string;
  /** Always a JSON string on the wire. History from clients may carry objects: repaired before upstream. */
  arguments: string;
}

export interface ToolCall {
  id: string;
  type: 'function';
  function: FunctionCall;
  /** Present in streamed deltas; some backends put it in non-streamed messages too. */
  index?: number;
  [extra: string]: unknown;
}

export interface ContentPart {
  type: string;
  text?: string;
  [extra: string]: unknown;
}

export type Role = 'system' | 'developer' | 'user' | 'assistant' | 'tool' | 'function';

export interface ChatMessage {
  role: Role | string;
  content?: string | ContentPart[] | null;
  name?: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  reasoning_content?: string | null;
  [extra: string]: unknown;
}

export interface FunctionDef {
  name: string;
  description?: string;
  parameters?: JsonObject;
  strict?: boolean;
}

export interface ToolDef {
  type: 'function';
  function: FunctionDef;
  [extra: string]: unknown;
}

export type NamedToolChoice = { type: 'function'; function: { name: string } };
export type ToolChoice = 'auto' | 'none' | 'required' | NamedToolChoice;

export interface ChatCompletionRequest {
  model: string;
  messages: ChatMessage[];
  tools?: ToolDef[];
  tool_choice?: ToolChoice;
  stream?: boolean;
  stream_options?: { include_usage?: boolean; [extra: string]: unknown } | null;
  response_format?: JsonObject;
  max_tokens?: number;
  max_completion_tokens?: number;
  parallel_tool_calls?: boolean;
  [extra: string]: unknown;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  [extra: string]: unknown;
}

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'function_call' | string;

export interface AssistantMessage {
  role: 'assistant';
  content: string | null;
  tool_calls?: ToolCall[];
  reasoning_content?: string | null;
  [extra: string]: unknown;
}

export interface Choice {
  index: number;
  message: AssistantMessage;
  finish_reason: FinishReason | null;
  logprobs?: unknown;
  [extra: string]: unknown;
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Choice[];
  usage?: Usage | null;
  [extra: string]: unknown;
}

export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function?: { name?: string; arguments?: string };
  [extra: string]: unknown;
}

export interface Delta {
  role?: 'assistant';
  content?: string | null;
  reasoning_content?: string | null;
  tool_calls?: ToolCallDelta[];
  [extra: string]: unknown;
}

export interface ChunkChoice {
  index: number;
  delta: Delta;
  finish_reason: FinishReason | null;
  logprobs?: unknown;
  [extra: string]: unknown;
}

export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: ChunkChoice[];
  usage?: Usage | null;
  [extra: string]: unknown;
}

/** The OpenAI error body. `code` is a string or null for toolproof's own errors; upstreams may send numbers. */
export interface OpenAIErrorBody {
  error: {
    message: string;
    type: string;
    param: string | null;
    code: string | number | null;
    [extra: string]: unknown;
  };
}
