/**
 * Chat-completion chunks -> Anthropic stream events. Pure: all state lives in the object, the
 * route only frames the events. One content block per thinking run, text run or tool call;
 * block boundaries fall where the kind of delta changes. A tool_use block opens once its name
 * is known (some backends stream the name in pieces); ids come from the chunks, as in the
 * non-streamed translation, so both give the same message.
 *
 * A tool_use block's arguments are held until the block closes and then sent as one
 * input_json_delta holding exactly the non-streamed `input` (toolInput). Forwarded piece by
 * piece they are only right when the whole is a JSON object: SDKs accumulate the pieces with a
 * partial-JSON parser, so arguments the model cut (max_tokens) or left invalid after the retries
 * ran out came out as a different object ({} for `{"city":"Par`), a non-object (`[1,2]`), or an
 * exception from the Anthropic SDK's finalMessage() (`hello`, `{...}x`).
 */
import type { ChatCompletionChunk, FinishReason, Usage } from '../openai.js';
import { type MessageContext, stopReason, toMessageUsage, toolInput, toolUseId } from './response.js';
import type { StreamEvent } from './types.js';

type Open =
  | { kind: 'text' | 'thinking'; index: number }
  | {
      kind: 'tool';
      index: number;
      callIndex: number;
      callId: string | undefined;
      started: boolean;
      name: string;
      /** The arguments so far, sent when the block closes. */
      args: string;
    };

/** The arguments as sent: as the model wrote them when they are a JSON object, else the non-streamed `input`. */
function inputJson(args: string): string {
  if (args.trim() === '') return '';
  const input = toolInput(args, false);
  return Object.hasOwn(input, '_raw') && Object.keys(input).length === 1 ? JSON.stringify(input) : args;
}

export class MessageStreamTranslator {
  private started = false;
  private nextIndex = 0;
  private open: Open | null = null;
  private finish: FinishReason | null = null;
  private matched: unknown = null;
  private hasToolUse = false;
  private toolCount = 0;

  constructor(private readonly ctx: MessageContext) {}

  /**
   * message_start and a ping, once. The route sends them as soon as the stream opens, so the
   * client hears from us during a long prefill; push and end emit them if it did not.
   */
  start(out: StreamEvent[] = []): StreamEvent[] {
    if (this.started) return out;
    this.started = true;
    out.push(
      {
        type: 'message_start',
        message: {
          id: this.ctx.id,
          type: 'message',
          role: 'assistant',
          model: this.ctx.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          // Unknown until the upstream's last chunk: message_delta carries the real counts.
          usage: { input_tokens: 0, output_tokens: 0 },
        },
      },
      { type: 'ping' },
    );
    return out;
  }

  private close(out: StreamEvent[]): void {
    const o = this.open;
    if (!o) return;
    if (o.kind === 'tool') {
      if (!o.started) this.startTool(o, out);
      const json = inputJson(o.args);
      if (json !== '')
        out.push({
          type: 'content_block_delta',
          index: o.index,
          delta: { type: 'input_json_delta', partial_json: json },
        });
    }
    out.push({ type: 'content_block_stop', index: o.index });
    this.open = null;
  }

  private startTool(o: Extract<Open, { kind: 'tool' }>, out: StreamEvent[]): void {
    o.started = true;
    this.hasToolUse = true;
    out.push({
      type: 'content_block_start',
      index: o.index,
      content_block: {
        type: 'tool_use',
        id: toolUseId(o.callId, this.ctx.id, this.toolCount++),
        name: o.name,
        input: {},
      },
    });
  }

  private openBlock(kind: 'text' | 'thinking', out: StreamEvent[]): number {
    if (this.open?.kind === kind) return this.open.index;
    this.close(out);
    const index = this.nextIndex++;
    this.open = { kind, index };
    out.push({
      type: 'content_block_start',
      index,
      content_block:
        kind === 'text' ? { type: 'text', text: '' } : { type: 'thinking', thinking: '', signature: '' },
    });
    return index;
  }

  /** Events for a batch of chunks, in order. */
  push(chunks: readonly ChatCompletionChunk[]): StreamEvent[] {
    const out: StreamEvent[] = [];
    for (const chunk of chunks) {
      const choice = chunk.choices?.[0];
      if (!choice) continue;
      this.start(out);
      const d = choice.delta ?? {};
      if (typeof d.reasoning_content === 'string' && d.reasoning_content !== '') {
        const index = this.openBlock('thinking', out);
        out.push({
          type: 'content_block_delta',
          index,
          delta: { type: 'thinking_delta', thinking: d.reasoning_content },
        });
      }
      if (typeof d.content === 'string' && d.content !== '') {
        const index = this.openBlock('text', out);
        out.push({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: d.content } });
      }
      for (const tc of d.tool_calls ?? []) this.toolDelta(tc, out);
      if (choice.finish_reason) this.finish = choice.finish_reason;
      if (typeof choice.stop_reason === 'string') this.matched = choice.stop_reason;
    }
    return out;
  }

  private toolDelta(
    tc: NonNullable<ChatCompletionChunk['choices'][number]['delta']['tool_calls']>[number],
    out: StreamEvent[],
  ): void {
    let o = this.open;
    const sameCall =
      o?.kind === 'tool' &&
      o.callIndex === tc.index &&
      (tc.id === undefined || tc.id === '' || tc.id === o.callId);
    if (!sameCall) {
      this.close(out);
      o = {
        kind: 'tool',
        index: this.nextIndex++,
        callIndex: tc.index,
        callId: tc.id || undefined,
        started: false,
        name: '',
        args: '',
      };
      this.open = o;
    }
    const tool = o as Extract<Open, { kind: 'tool' }>;
    if (tc.function?.name && !tool.started) tool.name += tc.function.name;
    const args = tc.function?.arguments;
    if (typeof args === 'string' && args !== '') {
      if (!tool.started) this.startTool(tool, out);
      tool.args += args;
    }
  }

  /** The closing events: last block stop, message_delta (stop reason, usage), message_stop. */
  end(usage: Usage | null | undefined): StreamEvent[] {
    const out = this.start();
    this.close(out);
    out.push(
      {
        type: 'message_delta',
        delta: stopReason(this.finish, this.hasToolUse, this.matched, this.ctx),
        usage: toMessageUsage(usage),
      },
      { type: 'message_stop' },
    );
    return out;
  }
}
