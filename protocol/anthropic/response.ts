/**
 * Chat completion -> Anthropic message (non-streamed), and the mappings the stream shares:
 * ids, stop reasons, usage. Pure. Ids round-trip: a chat tool-call id is the tool_use id as it
 * is, so the client's next tool_result.tool_use_id maps straight back to the chat call id.
 */
import { upstreamJsonProblem } from '../completion-shape.js';
import { keepSourceText } from '../lossless-json.js';
import type { ChatCompletion, FinishReason, ToolCall, Usage } from '../openai.js';
import type { Message, MessageUsage, ResponseBlock, StopReason, ToolUseBlock } from './types.js';

/** What the response side needs from the route and the client's request. */
export interface MessageContext {
  /** The message id (messageId of toolproof's request id, known before the upstream answers). */
  id: string;
  /** The model name the client asked for (echoed back, as Anthropic does). */
  model: string;
  stopSequences?: readonly string[];
}

/** `msg_` + toolproof's request id: the id a client reports is the one in toolproof's log line. */
export function messageId(requestId: string): string {
  return `msg_${requestId.replace(/[^A-Za-z0-9_-]/g, '_')}`;
}

/** The chat call id when the upstream gave one; else a stable id derived from the message. */
export function toolUseId(callId: string | undefined, msgId: string, index: number): string {
  if (callId) return callId;
  return `toolu_${msgId.replace(/^msg_/, '')}_${index}`;
}

/**
 * Tool arguments as the `input` object. Validation already ran in the pipeline; a value that
 * still is not a JSON object is kept under "_raw" rather than dropped. `keepText`: the object
 * will be written (stringifyJson) with the model's own numbers and key order; the stream, which
 * only asks what the input is, skips that.
 */
export function toolInput(args: unknown, keepText = true): Record<string, unknown> {
  // The pipeline hands over strings (normalize-tool-calls); anything else is kept, never thrown on.
  if (args === undefined || args === null) return {};
  if (typeof args !== 'string') return { _raw: JSON.stringify(args) ?? String(args) };
  if (args.trim() === '') return {};
  // Past the bounds JSON.parse pays seconds for (and the writer would overflow the stack): raw.
  if (upstreamJsonProblem(args) !== undefined) return { _raw: args };
  try {
    const v: unknown = JSON.parse(args);
    if (v && typeof v === 'object' && !Array.isArray(v)) {
      // Written back with stringifyJson: the numbers and key order the model wrote, as the
      // stream's partial_json (the arguments themselves) has them.
      if (keepText) keepSourceText(v, Buffer.from(args), true);
      return v as Record<string, unknown>;
    }
  } catch {
    // fall through
  }
  return { _raw: args };
}

/**
 * The stop reason. `matched` is vLLM's choice.stop_reason: the stop string that ended the
 * text, when one did.
 */
export function stopReason(
  finish: FinishReason | null | undefined,
  hasToolUse: boolean,
  matched: unknown,
  ctx: MessageContext,
): { stop_reason: StopReason; stop_sequence: string | null } {
  if (finish === 'length') return { stop_reason: 'max_tokens', stop_sequence: null };
  if (hasToolUse || finish === 'tool_calls') return { stop_reason: 'tool_use', stop_sequence: null };
  if (finish === 'content_filter') return { stop_reason: 'refusal', stop_sequence: null };
  if (typeof matched === 'string' && ctx.stopSequences?.includes(matched))
    return { stop_reason: 'stop_sequence', stop_sequence: matched };
  return { stop_reason: 'end_turn', stop_sequence: null };
}

/**
 * Anthropic's usage counts a prompt in parts that add up: `input_tokens` is what was not read
 * from the cache, `cache_read_input_tokens` what was (chat completions' `prompt_tokens` holds
 * both, `cached_tokens` the second). Claude Code sums them (with `cache_creation_input_tokens`)
 * as the context used and compacts on that sum: the whole prompt in `input_tokens` made a prompt
 * with a warm cache count nearly twice, and compaction start at half the window.
 */
export function toMessageUsage(usage: Usage | null | undefined): MessageUsage {
  const prompt = usage?.prompt_tokens ?? 0;
  const out: MessageUsage = { input_tokens: prompt, output_tokens: usage?.completion_tokens ?? 0 };
  const cached = (usage?.prompt_tokens_details as { cached_tokens?: unknown } | undefined)?.cached_tokens;
  if (typeof cached === 'number' && Number.isFinite(cached) && cached >= 0) {
    const read = Math.min(cached, prompt);
    out.input_tokens = prompt - read;
    out.cache_read_input_tokens = read;
  }
  return out;
}

function toolUseBlock(call: ToolCall, msgId: string, index: number): ToolUseBlock {
  return {
    type: 'tool_use',
    id: toolUseId(call.id, msgId, index),
    name: call.function.name,
    input: toolInput(call.function.arguments),
  };
}

/** A whole completion as a message: thinking, then text, then one tool_use per call. */
export function toMessage(completion: ChatCompletion, ctx: MessageContext): Message {
  const id = ctx.id;
  const choice = completion.choices[0];
  const msg = choice?.message;
  const content: ResponseBlock[] = [];
  if (msg?.reasoning_content)
    content.push({ type: 'thinking', thinking: msg.reasoning_content, signature: '' });
  if (typeof msg?.content === 'string' && msg.content !== '')
    content.push({ type: 'text', text: msg.content });
  (msg?.tool_calls ?? []).forEach((call, i) => {
    content.push(toolUseBlock(call, id, i));
  });
  const hasToolUse = content.some((b) => b.type === 'tool_use');
  return {
    id,
    type: 'message',
    role: 'assistant',
    model: ctx.model,
    content,
    ...stopReason(choice?.finish_reason, hasToolUse, choice?.stop_reason, ctx),
    usage: toMessageUsage(completion.usage),
  };
}
