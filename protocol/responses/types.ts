/**
 * OpenAI Responses API wire types, as much of them as toolproof reads or writes (field names
 * from the `openai` package's responses.d.ts). Stateless: toolproof keeps no response, so the
 * types cover what one request carries in and one response carries out.
 */
import type { JsonObject } from '../openai.js';

export interface InputText {
  type: 'input_text';
  text: string;
}
export interface InputImage {
  type: 'input_image';
  image_url?: string | null;
  file_id?: string | null;
  detail?: string;
}
/** Assistant text when a client sends earlier output back as input. */
export interface OutputText {
  type: 'output_text';
  text: string;
  annotations?: unknown[];
  [extra: string]: unknown;
}
export type InputContent = InputText | InputImage | OutputText | { type: string; [extra: string]: unknown };

export interface MessageItem {
  type?: 'message';
  id?: string;
  role: 'user' | 'assistant' | 'system' | 'developer';
  content: string | InputContent[];
  status?: string;
  [extra: string]: unknown;
}

export interface FunctionCallItem {
  type: 'function_call';
  id?: string;
  call_id: string;
  name: string;
  /** The namespace tool the function belongs to, when it was declared inside one. */
  namespace?: string;
  arguments: string;
  status?: 'in_progress' | 'completed' | 'incomplete';
  [extra: string]: unknown;
}

/** A call of a custom (freeform) tool: its input is raw text. */
export interface CustomToolCallItem {
  type: 'custom_tool_call';
  id?: string;
  call_id: string;
  name: string;
  namespace?: string;
  input: string;
  status?: 'in_progress' | 'completed' | 'incomplete';
  [extra: string]: unknown;
}

/** local_shell_call, shell_call, apply_patch_call: client-executed typed calls. */
export interface TypedCallItem {
  type: 'local_shell_call' | 'shell_call' | 'apply_patch_call';
  id?: string;
  call_id: string;
  status?: 'in_progress' | 'completed' | 'incomplete';
  action?: Record<string, unknown>;
  operation?: Record<string, unknown>;
  [extra: string]: unknown;
}

export interface FunctionCallOutputItem {
  type: 'function_call_output';
  id?: string | null;
  call_id: string;
  output: string | InputContent[];
  [extra: string]: unknown;
}

export interface ReasoningText {
  type: 'reasoning_text' | 'summary_text';
  text: string;
}

export interface ReasoningItem {
  type: 'reasoning';
  id: string;
  summary: ReasoningText[];
  content?: ReasoningText[];
  encrypted_content?: string | null;
  status?: 'in_progress' | 'completed' | 'incomplete';
  [extra: string]: unknown;
}

export type InputItem =
  | MessageItem
  | FunctionCallItem
  | FunctionCallOutputItem
  | ReasoningItem
  | { type: string; [extra: string]: unknown };

export interface FunctionTool {
  type: 'function';
  name: string;
  description?: string | null;
  parameters?: JsonObject | null;
  strict?: boolean | null;
}

export type ResponsesToolChoice =
  | 'auto'
  | 'none'
  | 'required'
  | { type: 'function'; name: string; namespace?: string }
  | { type: string; [extra: string]: unknown };

export interface TextFormat {
  type: 'text' | 'json_schema' | 'json_object' | string;
  name?: string;
  schema?: JsonObject;
  strict?: boolean | null;
  description?: string;
}

export interface ResponsesRequest {
  model: string;
  input?: string | InputItem[];
  instructions?: string | null;
  tools?: Array<FunctionTool | { type: string; [extra: string]: unknown }>;
  tool_choice?: ResponsesToolChoice;
  parallel_tool_calls?: boolean | null;
  text?: { format?: TextFormat; verbosity?: string | null; [extra: string]: unknown } | null;
  max_output_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  reasoning?: { effort?: string | null; summary?: string | null; [extra: string]: unknown } | null;
  metadata?: Record<string, string> | null;
  store?: boolean | null;
  include?: string[] | null;
  previous_response_id?: string | null;
  /** A conversation (POST /v1/conversations): its id, or `{id}`. */
  conversation?: string | { id?: unknown } | null;
  stream?: boolean | null;
  user?: string;
  [extra: string]: unknown;
}

export interface OutputMessage {
  type: 'message';
  id: string;
  role: 'assistant';
  status: 'in_progress' | 'completed' | 'incomplete';
  content: OutputText[];
}

/** A compaction toolproof made (compaction.ts): the summary, in the clear under a marker. */
export interface CompactionOutputItem {
  type: 'compaction';
  id: string;
  encrypted_content: string;
}

export type OutputItem =
  | OutputMessage
  | FunctionCallItem
  | CustomToolCallItem
  | TypedCallItem
  | ReasoningItem
  | CompactionOutputItem;

export interface ResponsesUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed';

export interface ResponseObject {
  id: string;
  object: 'response';
  created_at: number;
  status: ResponseStatus;
  error: { code: string; message: string } | null;
  incomplete_details: { reason: 'max_output_tokens' | 'content_filter' } | null;
  instructions: string | null;
  max_output_tokens: number | null;
  metadata: Record<string, string>;
  model: string;
  output: OutputItem[];
  output_text: string;
  parallel_tool_calls: boolean;
  previous_response_id: string | null;
  reasoning: { effort: string | null; summary: string | null };
  store: boolean;
  temperature: number | null;
  text: { format: TextFormat };
  tool_choice: ResponsesToolChoice;
  tools: unknown[];
  top_p: number | null;
  truncation: 'auto' | 'disabled';
  usage: ResponsesUsage | null;
  user?: string;
  /** Echoed when the request asked for it (answered in the foreground all the same). */
  background?: boolean;
}

/** A streamed event before its sequence number is stamped on. */
export type ResponsesEventBody = { type: string; [field: string]: unknown };
export type ResponsesEvent = ResponsesEventBody & { sequence_number: number };
