/**
 * Chat-completion chunks -> Responses output items and streamed events. One object holds all
 * stream state; the non-streamed response is the same translator fed the whole completion
 * once, so streamed and non-streamed answers agree by construction.
 *
 * Items open in the order their first delta arrives and close when a different item starts
 * (or at the end): reasoning -> `reasoning` item with one reasoning_text part, content ->
 * `message` with one output_text part, each tool call -> `function_call` whose call_id is the
 * chat tool_call id.
 *
 * Memory: each item's text is kept until the stream ends (the `.done` events and
 * response.completed carry it whole), so a stream holds about one copy of its answer.
 */
import { upstreamJsonProblem } from '../completion-shape.js';
import type { ChatCompletion, ChatCompletionChunk, Usage } from '../openai.js';
import { encodeOwnCompaction } from './compaction.js';
import { encodeReasoning } from './reasoning-token.js';
import type { CatalogEntry, ToolCatalog } from './tools.js';
import type {
  CustomToolCallItem,
  FunctionCallItem,
  OutputItem,
  OutputMessage,
  ReasoningItem,
  ResponseObject,
  ResponsesEvent,
  ResponsesEventBody,
  ResponsesRequest,
  ResponsesUsage,
  TypedCallItem,
} from './types.js';

export interface TranslatorContext {
  /** The client's request: echoed on the response object. */
  request: ResponsesRequest;
  /** New ids (`resp_`, `msg_`, `fc_`, `rs_`, `call_`): injected, so the translator stays pure. */
  newId: (prefix: string) => string;
  /** Unix seconds. */
  createdAt: number;
  /** How chat calls map back to the client's tools (request.ts); plain functions without it. */
  catalog?: ToolCatalog;
  /** The output items are kept for item_reference (the response's `store`). */
  stored?: boolean;
}

type OpenKind = 'reasoning' | 'message' | 'call';

interface Slot {
  kind: OpenKind | 'compaction';
  outputIndex: number;
  item: OutputItem;
  /** Text (message / reasoning) or arguments (call) accumulated so far. */
  text: string;
  done: boolean;
  /** A call's tool as the client declared it: a custom or typed call is sent whole at its end. */
  entry?: CatalogEntry;
}

/** A call's arguments as an object ({} when they are not one). */
function argsObject(args: string): Record<string, unknown> {
  if (upstreamJsonProblem(args) !== undefined) return {};
  try {
    const v: unknown = JSON.parse(args);
    if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // not JSON: the caller keeps the raw text where it can
  }
  return {};
}

/** The call item for a tool the client declared as custom or typed (tools.ts). */
function typedItem(
  entry: CatalogEntry,
  id: string,
  callId: string,
  args: string,
): CustomToolCallItem | TypedCallItem {
  const a = argsObject(args);
  const ns = entry.namespace ? { namespace: entry.namespace } : {};
  if (entry.kind === 'custom') {
    // The function's one argument; arguments that are not {"input": "..."} are kept as text.
    const input = typeof a.input === 'string' ? a.input : args;
    return {
      type: 'custom_tool_call',
      id,
      call_id: callId,
      name: entry.name,
      ...ns,
      input,
      status: 'in_progress',
    };
  }
  const opt = (k: string) => (a[k] === undefined ? null : a[k]);
  if (entry.kind === 'local_shell') {
    const action = {
      type: 'exec',
      command: Array.isArray(a.command) ? a.command : [],
      timeout_ms: opt('timeout_ms'),
      working_directory: opt('working_directory'),
      env: opt('env'),
      user: opt('user'),
    };
    return { type: 'local_shell_call', id, call_id: callId, status: 'in_progress', action };
  }
  if (entry.kind === 'shell') {
    const action = {
      commands: Array.isArray(a.commands) ? a.commands : [],
      timeout_ms: opt('timeout_ms'),
      max_output_length: opt('max_output_length'),
    };
    return { type: 'shell_call', id, call_id: callId, status: 'in_progress', action, environment: null };
  }
  const operation =
    a.operation && typeof a.operation === 'object' ? (a.operation as Record<string, unknown>) : {};
  return { type: 'apply_patch_call', id, call_id: callId, status: 'in_progress', operation };
}

const ID_PREFIX: Record<string, string> = {
  custom: 'ctc',
  local_shell: 'lsh',
  shell: 'sh',
  apply_patch: 'apc',
};

export class ResponsesTranslator {
  readonly id: string;
  private seq = 0;
  private readonly slots: Slot[] = [];
  private current: Slot | undefined;
  /** Chat tool_call index -> its slot. */
  private readonly calls = new Map<number, Slot>();
  private finish: string | null = null;
  private upstreamUsage: Usage | undefined;
  /**
   * The request ends on a `compaction_trigger` (compaction on OpenAI's servers, whose answer is a
   * `compaction` item): the model's text is that item's summary (compaction.ts), sent whole at
   * the end as OpenAI sends its own (output_item.added and .done, no deltas); its reasoning is
   * not part of the answer.
   */
  private readonly compacting: boolean;
  private summary = '';

  constructor(private readonly ctx: TranslatorContext) {
    this.id = ctx.newId('resp');
    const input = ctx.request.input;
    const last = Array.isArray(input) ? input[input.length - 1] : undefined;
    this.compacting = (last as { type?: unknown } | undefined)?.type === 'compaction_trigger';
  }

  private ev(body: ResponsesEventBody, out: ResponsesEvent[]): void {
    out.push({ ...body, sequence_number: this.seq++ });
  }

  /** response.created and response.in_progress. */
  start(): ResponsesEvent[] {
    const out: ResponsesEvent[] = [];
    const snapshot = this.response('in_progress');
    this.ev({ type: 'response.created', response: snapshot }, out);
    this.ev({ type: 'response.in_progress', response: snapshot }, out);
    return out;
  }

  /**
   * A keep-alive while nothing else can go out (an answer held for a possible retry): the
   * `keepalive` event OpenAI's own long Responses streams send, numbered like every event.
   */
  keepAlive(): ResponsesEvent {
    return { type: 'keepalive', sequence_number: this.seq++ };
  }

  push(chunk: ChatCompletionChunk): ResponsesEvent[] {
    const out: ResponsesEvent[] = [];
    if (chunk.usage) this.upstreamUsage = chunk.usage;
    const choice = chunk.choices?.[0];
    if (!choice) return out;
    const d = choice.delta ?? {};
    const reasoning = reasoningOf(d);
    if (this.compacting) {
      if (typeof d.content === 'string') this.summary += d.content;
    } else {
      if (reasoning) this.text('reasoning', reasoning, out);
      if (typeof d.content === 'string' && d.content) this.text('message', d.content, out);
    }
    for (const tc of d.tool_calls ?? []) this.callDelta(tc, out);
    if (choice.finish_reason) this.finish = choice.finish_reason;
    return out;
  }

  private text(kind: 'reasoning' | 'message', delta: string, out: ResponsesEvent[]): void {
    let slot = this.current;
    if (!slot || slot.kind !== kind) {
      this.closeCurrent(out);
      slot = this.open(kind, out);
    }
    slot.text += delta;
    const at = { item_id: slot.item.id, output_index: slot.outputIndex, content_index: 0 };
    if (kind === 'message') this.ev({ type: 'response.output_text.delta', ...at, delta, logprobs: [] }, out);
    else this.ev({ type: 'response.reasoning_text.delta', ...at, delta }, out);
  }

  private callDelta(
    tc: NonNullable<ChatCompletionChunk['choices'][number]['delta']['tool_calls']>[number],
    out: ResponsesEvent[],
  ): void {
    let slot = this.calls.get(tc.index);
    if (!slot) {
      this.closeCurrent(out);
      slot = this.open('call', out, tc.id || this.ctx.newId('call'), tc.function?.name ?? '');
      this.calls.set(tc.index, slot);
    } else if (tc.function?.name && !slot.entry) {
      (slot.item as FunctionCallItem).name += tc.function.name;
    }
    const args = tc.function?.arguments;
    if (args) {
      slot.text += args;
      // A custom or typed call goes out whole when it closes: its item is not a function's.
      if (slot.entry && slot.entry.kind !== 'function') return;
      this.ev(
        {
          type: 'response.function_call_arguments.delta',
          item_id: slot.item.id,
          output_index: slot.outputIndex,
          delta: args,
        },
        out,
      );
    }
  }

  private open(kind: OpenKind, out: ResponsesEvent[], callId = '', name = ''): Slot {
    const outputIndex = this.slots.length;
    let item: OutputItem | undefined;
    if (kind === 'message') {
      item = {
        type: 'message',
        id: this.ctx.newId('msg'),
        role: 'assistant',
        status: 'in_progress',
        content: [],
      };
    } else if (kind === 'reasoning') {
      item = { type: 'reasoning', id: this.ctx.newId('rs'), summary: [], content: [], status: 'in_progress' };
    }
    const entry = kind === 'call' ? this.ctx.catalog?.byChatName.get(name) : undefined;
    if (kind === 'call') {
      if (entry && entry.kind !== 'function') {
        item = typedItem(entry, this.ctx.newId(ID_PREFIX[entry.kind] ?? 'fc'), callId, '');
      } else {
        item = {
          type: 'function_call',
          id: this.ctx.newId('fc'),
          call_id: callId,
          name: entry?.name ?? name,
          ...(entry?.namespace ? { namespace: entry.namespace } : {}),
          arguments: '',
          status: 'in_progress',
        };
      }
    }
    const slot: Slot = { kind, outputIndex, item: item!, text: '', done: false, ...(entry ? { entry } : {}) };
    this.slots.push(slot);
    this.current = slot;
    this.ev(
      { type: 'response.output_item.added', output_index: outputIndex, item: structuredClone(slot.item) },
      out,
    );
    if (kind !== 'call') {
      const part =
        kind === 'message'
          ? { type: 'output_text', text: '', annotations: [] }
          : { type: 'reasoning_text', text: '' };
      this.ev(
        {
          type: 'response.content_part.added',
          item_id: slot.item.id,
          output_index: outputIndex,
          content_index: 0,
          part,
        },
        out,
      );
    }
    return slot;
  }

  private closeCurrent(out: ResponsesEvent[], status: 'completed' | 'incomplete' = 'completed'): void {
    const slot = this.current;
    this.current = undefined;
    if (!slot || slot.done) return;
    slot.done = true;
    const at = { item_id: slot.item.id, output_index: slot.outputIndex };
    if (slot.kind === 'message') {
      const item = slot.item as OutputMessage;
      const part = { type: 'output_text' as const, text: slot.text, annotations: [] };
      this.ev(
        { type: 'response.output_text.done', ...at, content_index: 0, text: slot.text, logprobs: [] },
        out,
      );
      this.ev({ type: 'response.content_part.done', ...at, content_index: 0, part }, out);
      item.content = [part];
      item.status = status;
    } else if (slot.kind === 'reasoning') {
      const item = slot.item as ReasoningItem;
      const part = { type: 'reasoning_text' as const, text: slot.text };
      this.ev({ type: 'response.reasoning_text.done', ...at, content_index: 0, text: slot.text }, out);
      this.ev({ type: 'response.content_part.done', ...at, content_index: 0, part }, out);
      item.content = [part];
      item.status = status;
      if (this.ctx.request.include?.includes('reasoning.encrypted_content'))
        item.encrypted_content = encodeReasoning(slot.text);
    } else if (slot.entry && slot.entry.kind !== 'function') {
      const prev = slot.item as CustomToolCallItem | TypedCallItem;
      const item = typedItem(slot.entry, prev.id ?? '', prev.call_id, slot.text);
      item.status = status;
      slot.item = item;
      if (item.type === 'custom_tool_call') {
        this.ev({ type: 'response.custom_tool_call_input.delta', ...at, delta: item.input }, out);
        this.ev({ type: 'response.custom_tool_call_input.done', ...at, input: item.input }, out);
      }
    } else {
      const item = slot.item as FunctionCallItem;
      item.arguments = slot.text;
      item.status = status;
      this.ev(
        { type: 'response.function_call_arguments.done', ...at, name: item.name, arguments: slot.text },
        out,
      );
    }
    this.ev(
      { type: 'response.output_item.done', output_index: slot.outputIndex, item: structuredClone(slot.item) },
      out,
    );
  }

  /** The status the finish reason gives: a length cut is `incomplete` (max_output_tokens). */
  private finalStatus(): 'completed' | 'incomplete' {
    return this.finish === 'length' || this.finish === 'content_filter' ? 'incomplete' : 'completed';
  }

  /**
   * Closes every open item and returns the closing events, ending with response.completed
   * (or response.incomplete). `usage` is the pipeline's sum over attempts when it has one.
   */
  end(usage?: Usage): ResponsesEvent[] {
    const out: ResponsesEvent[] = [];
    const status = this.finalStatus();
    // Only the item cut by the length limit is incomplete; items closed before it were whole.
    this.closeCurrent(out, status);
    for (const slot of this.slots) {
      if (!slot.done) {
        this.current = slot;
        this.closeCurrent(out, status);
      }
    }
    if (this.compacting) {
      const item = {
        type: 'compaction' as const,
        id: this.ctx.newId('cmp'),
        encrypted_content: encodeOwnCompaction(this.summary),
      };
      const outputIndex = this.slots.length;
      this.slots.push({ kind: 'compaction', outputIndex, item, text: '', done: true });
      this.ev({ type: 'response.output_item.added', output_index: outputIndex, item }, out);
      this.ev({ type: 'response.output_item.done', output_index: outputIndex, item }, out);
    }
    const response = this.response(status, usage ?? this.upstreamUsage);
    this.ev({ type: status === 'completed' ? 'response.completed' : 'response.incomplete', response }, out);
    return out;
  }

  /** A failure after the stream opened: an `error` event, then response.failed. */
  fail(err: { code: string; message: string; param: string | null }): ResponsesEvent[] {
    const out: ResponsesEvent[] = [];
    this.ev({ type: 'error', code: err.code, message: err.message, param: err.param }, out);
    const response = this.response('failed', this.upstreamUsage);
    response.error = { code: err.code, message: err.message };
    this.ev({ type: 'response.failed', response }, out);
    return out;
  }

  /** The response object as it stands (items in output order, closed ones complete). */
  response(status: ResponseObject['status'], usage?: Usage): ResponseObject {
    const r = this.ctx.request;
    const output = status === 'in_progress' ? [] : this.slots.map((s) => structuredClone(s.item));
    const outputText = output
      .filter((i): i is OutputMessage => i.type === 'message')
      .flatMap((m) => m.content.map((c) => c.text))
      .join('');
    return {
      id: this.id,
      object: 'response',
      created_at: this.ctx.createdAt,
      status,
      error: null,
      incomplete_details:
        status === 'incomplete'
          ? { reason: this.finish === 'content_filter' ? 'content_filter' : 'max_output_tokens' }
          : null,
      instructions: typeof r.instructions === 'string' ? r.instructions : null,
      max_output_tokens: typeof r.max_output_tokens === 'number' ? r.max_output_tokens : null,
      metadata: r.metadata ?? {},
      model: r.model,
      output,
      output_text: outputText,
      parallel_tool_calls: r.parallel_tool_calls !== false,
      previous_response_id: typeof r.previous_response_id === 'string' ? r.previous_response_id : null,
      reasoning: { effort: r.reasoning?.effort ?? null, summary: r.reasoning?.summary ?? null },
      store: this.ctx.stored === true,
      temperature: typeof r.temperature === 'number' ? r.temperature : null,
      text: { format: r.text?.format ?? { type: 'text' } },
      tool_choice: r.tool_choice ?? 'auto',
      tools: r.tools ?? [],
      top_p: typeof r.top_p === 'number' ? r.top_p : null,
      truncation: r.truncation === 'auto' ? 'auto' : 'disabled',
      usage: usage ? toResponsesUsage(usage) : null,
      ...(typeof r.user === 'string' ? { user: r.user } : {}),
      ...(r.background === true ? { background: true } : {}),
    };
  }
}

function toResponsesUsage(u: Usage): ResponsesUsage {
  const cached = (u.prompt_tokens_details as { cached_tokens?: unknown } | undefined)?.cached_tokens;
  const reasoning = (u.completion_tokens_details as { reasoning_tokens?: unknown } | undefined)
    ?.reasoning_tokens;
  return {
    input_tokens: u.prompt_tokens,
    input_tokens_details: { cached_tokens: typeof cached === 'number' ? cached : 0 },
    output_tokens: u.completion_tokens,
    output_tokens_details: { reasoning_tokens: typeof reasoning === 'number' ? reasoning : 0 },
    total_tokens: u.total_tokens,
  };
}

/** The reasoning text of a message or delta: `reasoning_content`, else `reasoning`, else ''. */
function reasoningOf(m: { reasoning_content?: unknown; reasoning?: unknown }): string {
  if (typeof m.reasoning_content === 'string') return m.reasoning_content;
  return typeof m.reasoning === 'string' ? m.reasoning : '';
}

/** A whole chat completion as the deltas a stream of it would carry (reasoning, text, calls, finish). */
function completionDeltas(c: ChatCompletion): ChatCompletionChunk[] {
  const base = { id: c.id, object: 'chat.completion.chunk' as const, created: c.created, model: c.model };
  const choice = c.choices[0];
  if (!choice) return [];
  // A choice without a message passes the shape check (completionShapeProblem): nothing said.
  const m = choice.message ?? { role: 'assistant', content: null };
  const reasoning = reasoningOf(m);
  const delta = {
    ...(reasoning ? { reasoning_content: reasoning } : {}),
    ...(typeof m.content === 'string' ? { content: m.content } : {}),
    tool_calls: (m.tool_calls ?? []).map((tc, index) => ({
      index,
      id: tc.id,
      type: 'function' as const,
      function: { name: tc.function.name, arguments: tc.function.arguments },
    })),
  };
  return [{ ...base, choices: [{ index: 0, delta, finish_reason: choice.finish_reason }] }];
}

/** The non-streamed Responses answer: the translator fed the whole completion once. */
export function completionToResponse(
  c: ChatCompletion,
  ctx: TranslatorContext,
  usage?: Usage,
): ResponseObject {
  const t = new ResponsesTranslator(ctx);
  for (const chunk of completionDeltas(c)) t.push(chunk);
  const events = t.end(usage ?? c.usage ?? undefined);
  return (events[events.length - 1] as unknown as { response: ResponseObject }).response;
}
