/**
 * Anthropic Messages API wire types (POST /v1/messages), as much as toolproof reads or writes.
 * Shapes follow the public API reference and the `@anthropic-ai/sdk` types. Request objects
 * keep an index signature: clients send fields toolproof ignores (cache_control, citations).
 */

export interface CacheControl {
  type: string;
  [extra: string]: unknown;
}

export interface TextBlock {
  type: 'text';
  text: string;
  cache_control?: CacheControl | null;
  [extra: string]: unknown;
}

export type ImageSource =
  | { type: 'base64'; media_type: string; data: string }
  | { type: 'url'; url: string }
  | { type: 'file'; file_id: string };

export interface ImageBlock {
  type: 'image';
  source: ImageSource;
  [extra: string]: unknown;
}

export interface ToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  input: Record<string, unknown>;
  [extra: string]: unknown;
}

export interface ToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  content?: string | Array<TextBlock | ImageBlock | DocumentBlock | SearchResultBlock>;
  is_error?: boolean;
  [extra: string]: unknown;
}

export interface ThinkingBlock {
  type: 'thinking';
  thinking: string;
  signature?: string;
  [extra: string]: unknown;
}

export interface RedactedThinkingBlock {
  type: 'redacted_thinking';
  data: string;
  [extra: string]: unknown;
}

/** A document: a PDF or plain text (base64, text, content, url or file source). */
export interface DocumentBlock {
  type: 'document';
  source: unknown;
  title?: string;
  [extra: string]: unknown;
}

/** A search result (RAG): its text blocks, under a title and a source. */
export interface SearchResultBlock {
  type: 'search_result';
  source: string;
  title: string;
  content: TextBlock[];
  [extra: string]: unknown;
}

/**
 * Anthropic's server-side compaction: the summary standing in for the conversation before it,
 * sent back first in `messages` (`content` null: a compaction that failed).
 */
export interface CompactionBlock {
  type: 'compaction';
  content?: string | null;
  [extra: string]: unknown;
}

/** Anthropic's server-side fallback, echoed back: rendered into no prompt (its API's own rule). */
export interface FallbackBlock {
  type: 'fallback';
  [extra: string]: unknown;
}

/** A file uploaded to Anthropic's code-execution container (a session begun on its API). */
export interface ContainerUploadBlock {
  type: 'container_upload';
  file_id?: unknown;
  [extra: string]: unknown;
}

export type RequestBlock =
  | TextBlock
  | ImageBlock
  | DocumentBlock
  | SearchResultBlock
  | ToolUseBlock
  | ToolResultBlock
  | ThinkingBlock
  | RedactedThinkingBlock
  | CompactionBlock
  | FallbackBlock
  | ContainerUploadBlock;

export interface MessageParam {
  /** "system": Claude Code's mid-conversation system turns (text only). */
  role: 'user' | 'assistant' | 'system';
  content: string | RequestBlock[];
}

export interface ToolParam {
  name: string;
  description?: string;
  input_schema: Record<string, unknown>;
  /** Absent or "custom" for client tools; Anthropic's server tools carry a versioned type. */
  type?: string;
  cache_control?: CacheControl | null;
  [extra: string]: unknown;
}

export type ToolChoiceParam =
  | { type: 'auto'; disable_parallel_tool_use?: boolean }
  | { type: 'any'; disable_parallel_tool_use?: boolean }
  | { type: 'tool'; name: string; disable_parallel_tool_use?: boolean }
  | { type: 'none' };

export interface ThinkingParam {
  type: 'enabled' | 'disabled' | 'adaptive' | string;
  budget_tokens?: number;
  /** "summarized" or "omitted": how Anthropic shows thinking; toolproof returns it as it is. */
  display?: string;
}

/** count_tokens takes this; a Messages request adds max_tokens. */
export interface CountTokensRequest {
  model: string;
  messages: MessageParam[];
  system?: string | TextBlock[];
  tools?: ToolParam[];
  tool_choice?: ToolChoiceParam;
  stop_sequences?: string[];
  temperature?: number;
  top_p?: number;
  top_k?: number;
  thinking?: ThinkingParam;
  metadata?: { user_id?: string | null; [extra: string]: unknown };
  /** effort (low | medium | high | max) and format (a JSON schema for the answer). */
  output_config?: { effort?: string; format?: Record<string, unknown>; [extra: string]: unknown };
  context_management?: Record<string, unknown>;
  /** Server-held conversation state (beta): `{type: 'create'}` or `{type: 'continue', previous_message_id}`. */
  thread?: { type?: string; previous_message_id?: string; [extra: string]: unknown } | null;
  stream?: boolean;
  [extra: string]: unknown;
}

export interface MessagesRequest extends CountTokensRequest {
  max_tokens: number;
}

export type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'refusal';

export interface ResponseTextBlock {
  type: 'text';
  text: string;
}

export interface ResponseThinkingBlock {
  type: 'thinking';
  thinking: string;
  signature: string;
}

export type ResponseBlock = ResponseTextBlock | ToolUseBlock | ResponseThinkingBlock;

export interface MessageUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
}

export interface Message {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: ResponseBlock[];
  stop_reason: StopReason | null;
  stop_sequence: string | null;
  usage: MessageUsage;
}

export type ContentDelta =
  | { type: 'text_delta'; text: string }
  | { type: 'input_json_delta'; partial_json: string }
  | { type: 'thinking_delta'; thinking: string };

export type StreamEvent =
  | { type: 'message_start'; message: Message }
  | { type: 'ping' }
  | { type: 'content_block_start'; index: number; content_block: ResponseBlock }
  | { type: 'content_block_delta'; index: number; delta: ContentDelta }
  | { type: 'content_block_stop'; index: number }
  | {
      type: 'message_delta';
      delta: { stop_reason: StopReason | null; stop_sequence: string | null };
      usage: MessageUsage;
    }
  | { type: 'message_stop' }
  | { type: 'error'; error: { type: string; message: string } };

export interface ErrorBody {
  type: 'error';
  error: { type: string; message: string; details?: { error_code: string } };
}
