/**
 * Conversation items <-> chat messages. Responses input is a flat list of items (messages,
 * function calls, their outputs, reasoning); chat history groups an assistant turn's calls on
 * one assistant message and answers each with a `tool` message. A function_call item's
 * `call_id` is the chat tool_call id, both ways, so results stay paired with their calls.
 */
import { ToolproofError } from '../errors.js';
import type { ChatMessage, ContentPart, ToolCall } from '../openai.js';
import { fileDataUrl, filePart } from '../file-part.js';
import { compactionText, hostedItemNote, isHostedItem, unknownItemNote } from '../hosted-history.js';
import { COMPACTION_TRIGGER_TEXT, decodeOwnCompaction } from './compaction.js';
import { decodeReasoning } from './reasoning-token.js';
import { chatNameOf, type ToolCatalog } from './tools.js';
import type {
  CustomToolCallItem,
  FunctionCallItem,
  FunctionCallOutputItem,
  InputContent,
  InputItem,
  MessageItem,
  ReasoningItem,
  TypedCallItem,
} from './types.js';
import { stringifyJson } from '../lossless-json.js';
import { isObject } from '../is-object.js';

function invalid(param: string, message: string): ToolproofError {
  return new ToolproofError('TP_ERR_INVALID_FIELD', { param, message });
}

/** An `item_reference`'s item: one toolproof returned earlier, or undefined. */
export type ItemLookup = (id: string) => InputItem | undefined;

/**
 * What an item_reference toolproof no longer holds becomes, in the assistant turn it stood in: a
 * function of its id alone, so the next turn sends the same bytes. Toolproof keeps only the output
 * items it returned, so the item was the model's own (a message, a call, reasoning); a result that
 * answered a call left out this way is an orphan result for history repair.
 */
export function missingItemNote(id: string): string {
  const shown = id.replace(/[\r\n[\]]+/g, ' ').slice(0, 200);
  return `[earlier output item ${shown} left out: toolproof no longer holds it (evicted from its bounded item store, or returned by another worker, replica or process); send items whole (store: false) to keep them]`;
}

/** The 400 for an item_reference with the item store off: none can resolve. */
function unresolved(param: string, id: string): ToolproofError {
  return invalid(
    param,
    `${param}: item_reference "${id}" cannot be resolved: this toolproof keeps no items (its Responses item store is off). Send the item itself: with store: false (@ai-sdk/openai: providerOptions.openai.store = false) clients send whole items.`,
  );
}

/** The value at `field` when it is a non-empty string; else TP_ERR_INVALID_FIELD naming the field. */
function nonEmpty(value: unknown, field: string): string {
  if (typeof value !== 'string' || !value) throw invalid(field, `${field} must be a non-empty string.`);
  return value;
}

/** User / system content parts -> chat content parts. */
function toChatPart(part: InputContent, param: string): ContentPart {
  switch (part.type) {
    case 'input_text':
    case 'output_text':
    case 'text':
      if (typeof part.text !== 'string') throw invalid(`${param}.text`, `${param}.text must be a string.`);
      return { type: 'text', text: part.text };
    case 'input_image': {
      const url = (part as { image_url?: unknown }).image_url;
      const fileId = (part as { file_id?: unknown }).file_id;
      // An image by file_id: toolproof has no file store, so it can never be read. A chat `file`
      // part naming it, which the documents policy turns into a note saying so: the agent sends
      // this turn again on every later request, and a 400 would end its session.
      if ((typeof url !== 'string' || !url) && typeof fileId === 'string' && fileId)
        return filePart({ filename: 'image', file_id: fileId });
      if (typeof url !== 'string' || !url)
        throw invalid(param, `${param}: input_image needs an image_url (https or data: URL) or a file_id.`);
      const detail = (part as { detail?: unknown }).detail;
      return { type: 'image_url', image_url: { url, ...(typeof detail === 'string' ? { detail } : {}) } };
    }
    case 'input_file': {
      // A chat `file` part: the documents policy turns it into its text, or a note when it is a
      // file_id or URL toolproof never fetches.
      const f = part as { file_data?: unknown; file_id?: unknown; file_url?: unknown; filename?: unknown };
      const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
      const raw = str(f.file_data);
      // The API takes a data URL or bare base64 (typed by its bytes or the file name: fileDataUrl).
      const data = raw === undefined ? undefined : fileDataUrl(raw, str(f.filename));
      return filePart({
        filename: str(f.filename),
        file_data: data,
        file_id: str(f.file_id),
        file_url: str(f.file_url),
      });
    }
    case 'input_audio': {
      // A chat `input_audio` part, as it is: the backend takes it, or the audio policy turns it
      // into a note for a model that cannot (a 400 here ended the session: the agent sends it
      // again on every later turn).
      const audio = (part as { input_audio?: unknown }).input_audio;
      if (!isObject(audio) || typeof audio.data !== 'string')
        throw invalid(param, `${param}: input_audio needs input_audio.data (base64) and input_audio.format.`);
      return { type: 'input_audio', input_audio: { data: audio.data, format: audio.format } };
    }
    case 'refusal':
    case 'summary_text':
    case 'reasoning_text':
    case 'output_audio':
      // Known types of the model's output (an assistant message, a reasoning item): out of their
      // place, the client's error.
      throw invalid(`${param}.type`, `${param}: a "${part.type}" part cannot stand in this message.`);
    default:
      // A part of a type toolproof does not know (a newer API's): as it came, a chat part of the
      // same type and fields. The backend may take it; one whose parser refuses it has it as text
      // from then on (policies/unknown-parts). Before, a 400 here on every later turn.
      return { ...part, type: typeof part.type === 'string' ? part.type : '' };
  }
}

/** Message content as chat wants it: a plain string stays a string; text-only parts join. */
function toChatContent(content: unknown, param: string): string | ContentPart[] {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw invalid(param, `${param} must be a string or an array of parts.`);
  const parts = content.map((p, i) => {
    if (!isObject(p)) throw invalid(`${param}[${i}]`, `${param}[${i}] must be an object.`);
    return toChatPart(p as InputContent, `${param}[${i}]`);
  });
  return parts;
}

/** Assistant text sent back as input: output_text (and refusal) parts become one string. */
function assistantText(content: unknown, param: string): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw invalid(param, `${param} must be a string or an array of parts.`);
  let text = '';
  content.forEach((p, i) => {
    if (!isObject(p)) throw invalid(`${param}[${i}]`, `${param}[${i}] must be an object.`);
    if (typeof p.text === 'string') text += p.text;
    else if (typeof p.refusal === 'string') text += p.refusal;
  });
  return text;
}

function reasoningText(item: ReasoningItem): string {
  // toolproof's own encrypted_content (the client asked for it with include and sent it back).
  const own = decodeReasoning(item.encrypted_content);
  if (own !== undefined) return own;
  const parts = Array.isArray(item.content) && item.content.length > 0 ? item.content : item.summary;
  return Array.isArray(parts) ? parts.map((p) => (typeof p?.text === 'string' ? p.text : '')).join('') : '';
}

/** A typed call's arguments as the chat function declared for it has them (tools.ts). */
function typedArguments(item: TypedCallItem, param: string): { name: string; args: Record<string, unknown> } {
  const fields = (o: unknown, skip: string): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    if (!isObject(o)) return out;
    for (const [k, v] of Object.entries(o)) if (k !== skip && v !== null && v !== undefined) out[k] = v;
    return out;
  };
  if (item.type === 'local_shell_call') {
    if (!isObject(item.action)) throw invalid(`${param}.action`, `${param}.action must be an object.`);
    return { name: 'local_shell', args: fields(item.action, 'type') };
  }
  if (item.type === 'shell_call') {
    if (!isObject(item.action)) throw invalid(`${param}.action`, `${param}.action must be an object.`);
    return { name: 'shell', args: fields(item.action, '') };
  }
  if (!isObject(item.operation)) throw invalid(`${param}.operation`, `${param}.operation must be an object.`);
  return { name: 'apply_patch', args: { operation: item.operation } };
}

/**
 * A computer_call_output's screenshot (`{type: "computer_screenshot", image_url | file_id}`) as
 * chat content: an image part, or a `file` part naming a file_id (the documents policy's note:
 * toolproof has no file store); anything else as its JSON.
 */
function screenshotContent(output: unknown): string | ContentPart[] {
  if (isObject(output) && typeof output.image_url === 'string' && output.image_url !== '')
    return [{ type: 'image_url', image_url: { url: output.image_url } }];
  if (isObject(output) && typeof output.file_id === 'string' && output.file_id !== '')
    return [filePart({ filename: 'screenshot', file_id: output.file_id })];
  return JSON.stringify(output ?? '');
}

/** A tool output item's content: strings as they are, anything else as its JSON. */
function outputContent(output: unknown, param: string): string | ContentPart[] {
  if (typeof output === 'string') return output;
  if (
    Array.isArray(output) &&
    output.every((p) => isObject(p) && typeof p.type === 'string' && p.type.startsWith('input_'))
  )
    return toChatContent(output, param);
  return JSON.stringify(output ?? '');
}

/**
 * Translates Responses input (plus `instructions`) into chat messages. Throws a
 * TP_ERR_INVALID_FIELD naming `input[i]` for what a stateless chat backend cannot carry.
 */
/** The line an `additional_tools` item becomes: the names of the tools it adds. */
function additionalToolsText(tools: unknown): string {
  const names = Array.isArray(tools)
    ? tools.flatMap((t) =>
        isObject(t) && typeof t.name === 'string' && t.name ? [t.name.slice(0, 200)] : [],
      )
    : [];
  const shown = names.length > 20 ? [...names.slice(0, 20), `${names.length - 20} more`] : names;
  return shown.length > 0
    ? `[tools ${shown.join(', ').replace(/[\r\n[\]]+/g, ' ')} can be called from here on]`
    : '[more tools can be called from here on]';
}

export function inputToMessages(
  input: string | InputItem[] | undefined,
  instructions?: string | null,
  /** Maps namespaced and custom tools' names to the chat names they were declared under. */
  catalog?: ToolCatalog,
  /** Resolves an `item_reference` to an output item toolproof returned; absent: none kept. */
  lookup?: ItemLookup,
  /** The conversation `previous_response_id` continues (its items, oldest first), before `input`. */
  history?: readonly InputItem[],
): ChatMessage[] {
  const messages: ChatMessage[] = [];
  if (typeof instructions === 'string' && instructions.length > 0)
    messages.push({ role: 'system', content: instructions });
  if (input === undefined && history === undefined) return messages;
  if (typeof input === 'string' && history === undefined) {
    messages.push({ role: 'user', content: input });
    return messages;
  }
  // The assistant turn being assembled: calls that follow assistant text (or each other) join it.
  let turn: ChatMessage | undefined;
  let reasoning: string | undefined;
  const openTurn = (): ChatMessage => {
    if (!turn) {
      turn = { role: 'assistant', content: null };
      if (reasoning) turn.reasoning_content = reasoning;
      reasoning = undefined;
      messages.push(turn);
    }
    return turn;
  };

  const addCall = (id: string, name: string, args: string): void => {
    const t = openTurn();
    const call: ToolCall = { id, type: 'function', function: { name, arguments: args } };
    // Appended in place: a copy per call was quadratic (30k consecutive calls: 6 s of loop).
    if (t.tool_calls) t.tool_calls.push(call);
    else t.tool_calls = [call];
  };

  const add = (raw: unknown, param: string): void => {
    if (!isObject(raw)) throw invalid(param, `${param} must be an object.`);
    const type = typeof raw.type === 'string' ? raw.type : 'message';
    switch (type) {
      case 'message': {
        const item = raw as MessageItem;
        if (item.role === 'assistant') {
          const text = assistantText(item.content, `${param}.content`);
          // Text after calls of the same turn starts a new assistant message: order is kept.
          if (turn?.tool_calls?.length) turn = undefined;
          const t = openTurn();
          t.content = typeof t.content === 'string' ? t.content + text : text;
          return;
        }
        if (item.role !== 'user' && item.role !== 'system' && item.role !== 'developer')
          throw invalid(`${param}.role`, `${param}.role must be user, assistant, system or developer.`);
        turn = undefined;
        // Chat templates know "system"; "developer" is the Responses name for the same thing.
        const role = item.role === 'developer' ? 'system' : item.role;
        messages.push({ role, content: toChatContent(item.content, `${param}.content`) });
        return;
      }
      case 'additional_tools': {
        // Tools made callable from here on (declared upstream with the request's own: request.ts
        // addedTools): a line where the item stands, as the system turn it is. Before, a 400 on
        // every later turn of the session.
        turn = undefined;
        messages.push({ role: 'system', content: additionalToolsText(raw.tools) });
        return;
      }
      case 'compaction_trigger':
        // Compaction on OpenAI's servers: the model is asked for the summary (compaction.ts).
        turn = undefined;
        messages.push({ role: 'user', content: COMPACTION_TRIGGER_TEXT });
        return;
      case 'configuration_update':
        // Settings for the responses after it (request.ts applies the latest); nothing to read.
        return;
      case 'ghost_snapshot':
        // Codex's record of the worktree's state (a git commit id) for its undo, kept in its
        // history beside the model's items: nothing the model reads (Codex leaves it out itself).
        return;
      case 'function_call': {
        const item = raw as unknown as FunctionCallItem;
        const callId = nonEmpty(item.call_id, `${param}.call_id`);
        const name = nonEmpty(item.name, `${param}.name`);
        const args =
          typeof item.arguments === 'string' ? item.arguments : stringifyJson(item.arguments ?? {});
        const ns = typeof item.namespace === 'string' ? item.namespace : undefined;
        addCall(callId, chatNameOf(catalog, name, ns), args);
        return;
      }
      case 'custom_tool_call': {
        const item = raw as unknown as CustomToolCallItem;
        const callId = nonEmpty(item.call_id, `${param}.call_id`);
        const name = nonEmpty(item.name, `${param}.name`);
        if (typeof item.input !== 'string')
          throw invalid(`${param}.input`, `${param}.input must be a string.`);
        const ns = typeof item.namespace === 'string' ? item.namespace : undefined;
        // The one argument the custom tool was declared with (tools.ts).
        addCall(callId, chatNameOf(catalog, name, ns), JSON.stringify({ input: item.input }));
        return;
      }
      case 'local_shell_call':
      case 'shell_call':
      case 'apply_patch_call': {
        const item = raw as unknown as TypedCallItem;
        const id = nonEmpty(
          typeof item.call_id === 'string' && item.call_id ? item.call_id : item.id,
          `${param}.call_id`,
        );
        const { name, args } = typedArguments(item, param);
        addCall(id, name, JSON.stringify(args));
        return;
      }
      case 'computer_call': {
        // Computer use is run by the client (it clicks, then sends a screenshot back), so its call
        // and output are a call and its result, as a local_shell_call is: a call of `computer`
        // with the action, answered by a tool message holding the screenshot (an image part the
        // images policy turns into a note for a model that cannot see). As hosted-tool notes in
        // the assistant's turn they left the conversation ending on the assistant (a prefill)
        // and the next answer joined that turn: the prompt's earlier bytes changed every turn.
        const item = raw as { call_id?: unknown; id?: unknown; action?: unknown };
        const id = nonEmpty(
          typeof item.call_id === 'string' && item.call_id ? item.call_id : item.id,
          `${param}.call_id`,
        );
        addCall(id, 'computer', stringifyJson(isObject(item.action) ? item.action : {}));
        return;
      }
      case 'computer_call_output': {
        const item = raw as { call_id?: unknown; output?: unknown };
        const id = nonEmpty(item.call_id, `${param}.call_id`);
        turn = undefined;
        messages.push({ role: 'tool', tool_call_id: id, content: screenshotContent(item.output) });
        return;
      }
      case 'custom_tool_call_output':
      case 'local_shell_call_output':
      case 'shell_call_output':
      case 'apply_patch_call_output': {
        const item = raw as { call_id?: unknown; id?: unknown; output?: unknown; status?: unknown };
        // local_shell_call_output names its call by `id` in the API reference; Codex by call_id.
        const id = nonEmpty(
          typeof item.call_id === 'string' && item.call_id ? item.call_id : item.id,
          `${param}.call_id`,
        );
        turn = undefined;
        const output = item.output ?? (typeof item.status === 'string' ? item.status : '');
        messages.push({ role: 'tool', tool_call_id: id, content: outputContent(output, `${param}.output`) });
        return;
      }
      case 'function_call_output': {
        const item = raw as unknown as FunctionCallOutputItem;
        const callId = nonEmpty(item.call_id, `${param}.call_id`);
        turn = undefined;
        const output = item.output;
        const content = typeof output === 'string' ? output : toChatContent(output ?? '', `${param}.output`);
        messages.push({ role: 'tool', tool_call_id: callId, content });
        return;
      }
      case 'reasoning': {
        // Carried as the next assistant message's reasoning_content; encrypted reasoning is opaque.
        const text = reasoningText(raw as ReasoningItem);
        if (text) reasoning = (reasoning ?? '') + text;
        return;
      }
      case 'item_reference': {
        const id = nonEmpty(raw.id, `${param}.id`);
        // The store off: no reference can resolve, from a session's second turn on (the client's
        // to fix: the 400 says how). Kept: an item gone since (evicted, another replica, a
        // restart) would fail every later turn of a session that worked: a note in its place.
        if (lookup === undefined) throw unresolved(param, id);
        const item = lookup(id);
        if (item) add(item, param);
        else {
          const t = openTurn();
          const before = typeof t.content === 'string' && t.content !== '' ? `${t.content}\n` : '';
          t.content = `${before}${missingItemNote(id)}\n`;
        }
        return;
      }
      default: {
        // A hosted tool's item, or a compaction (`/v1/responses/compact`: its summary is
        // encrypted), from a session begun on OpenAI's API: a note in the assistant's turn.
        // `compaction_summary`: the compaction item's name in Codex's history before it was
        // `compaction` (codex-rs/protocol models.rs still reads it as an alias). An item of a type
        // toolproof does not know (a newer API's): a line naming its type. Before, a 400 on every
        // later turn of the session.
        const t = openTurn();
        const compaction = type === 'compaction' || type === 'compaction_summary';
        const note = compaction
          ? compactionText(decodeOwnCompaction(raw.encrypted_content), 'toolproof')
          : isHostedItem(type)
            ? hostedItemNote(raw)
            : unknownItemNote(type, 'item');
        // On a line of its own: the turn's text may go on after it.
        const before = typeof t.content === 'string' && t.content !== '' ? `${t.content}\n` : '';
        t.content = `${before}${note}\n`;
        return;
      }
    }
  };
  history?.forEach((raw, i) => {
    add(raw, `previous_response_id[${i}]`);
  });
  if (typeof input === 'string') add({ type: 'message', role: 'user', content: input }, 'input');
  else
    input?.forEach((raw, i) => {
      add(raw, `input[${i}]`);
    });
  return messages;
}
