/**
 * Anthropic Messages request -> chat-completions request, so a Messages call runs through the
 * one chat pipeline (forced final answer, history repair, leak recovery, retries). Pure.
 * What chat cannot express is refused with a 400 naming the field, never silently dropped:
 * MCP servers, containers. Search results become their text. Documents become chat `file` parts
 * (protocol/file-part.ts), which the documents policy turns into their text or a note. Server
 * tools are left out and reported (or refused, by the hosted-tools policy; see tools.ts); their
 * blocks in a resumed history become notes (protocol/hosted-history.ts).
 */
import { stripBillingNonce } from '../billing-header.js';
import { ToolproofError } from '../errors.js';
import type { ChatCompletionRequest, ChatMessage, ContentPart, ToolCall, ToolChoice } from '../openai.js';
import { filePart } from '../file-part.js';
import { addedToolDefinitions, isServerTool, toolDefs } from './tools.js';
import { MAX_DECLARED_TOOLS, MAX_TOOL_NAME_CHARS } from '../tools.js';
import type {
  ImageBlock,
  MessageParam,
  MessagesRequest,
  TextBlock,
  ToolChoiceParam,
  ToolResultBlock,
} from './types.js';
import { pushAll } from '../append-all.js';
import { stringifyJson } from '../lossless-json.js';
import { isObject } from '../is-object.js';
import {
  compactionText,
  containerUploadNote,
  hostedBlockNote,
  isHostedBlock,
  unknownItemNote,
} from '../hosted-history.js';

/** Tells the model a tool failed (chat tool messages have no error flag). */
export const TOOL_ERROR_PREFIX = '[tool error] ';

function invalid(param: string, message: string): ToolproofError {
  return new ToolproofError('TP_ERR_INVALID_FIELD', { param, message });
}

function text(block: unknown, path: string): string {
  if (!isObject(block) || typeof block.text !== 'string')
    throw invalid(path, `"${path}.text" must be a string.`);
  return block.text;
}

/**
 * An image source's URL as chat's image_url takes it: a base64 source as a data URL, a url source
 * as its URL; undefined for another (chat-backend-shapes reads image blocks sent to chat so too).
 */
export function imageSourceUrl(src: unknown): string | undefined {
  if (isObject(src) && src.type === 'base64' && typeof src.data === 'string') {
    const media = typeof src.media_type === 'string' ? src.media_type : 'image/png';
    return `data:${media};base64,${src.data}`;
  }
  if (isObject(src) && src.type === 'url' && typeof src.url === 'string') return src.url;
  return undefined;
}

/** An image block as a chat image part: base64 sources become data URLs. */
function imagePart(block: ImageBlock, path: string): ContentPart {
  const src = block.source as unknown;
  const url = imageSourceUrl(src);
  if (url !== undefined) return { type: 'image_url', image_url: { url } };
  // A Files API image: toolproof has no file store, so a `file` part naming it, which the
  // documents policy turns into a note (a 400 would come back on every later turn).
  if (isObject(src) && src.type === 'file' && typeof src.file_id === 'string' && src.file_id !== '')
    return filePart({ filename: 'image', file_id: src.file_id });
  throw invalid(`${path}.source`, `"${path}.source" must be a base64, url or file image source.`);
}

/**
 * A `search_result` block (a RAG tool's or the client's own search result) as the text the
 * model reads: a header naming its title and source, then its text blocks. Nothing of it is
 * dropped but the citation switch, which has no chat equivalent.
 */
function searchResultText(block: unknown, path: string): ContentPart {
  if (!isObject(block)) throw invalid(path, `"${path}" must be an object.`);
  const field = (k: 'title' | 'source'): string => {
    const v = block[k];
    if (typeof v !== 'string') throw invalid(`${path}.${k}`, `"${path}.${k}" must be a string.`);
    return v.replace(/[\r\n[\]]+/g, ' ');
  };
  const title = field('title');
  const source = field('source');
  if (!Array.isArray(block.content))
    throw invalid(`${path}.content`, `"${path}.content" must be an array of text blocks.`);
  const body = block.content.map((c: unknown, i) => text(c, `${path}.content.${i}`)).join('\n\n');
  return { type: 'text', text: `[search result: ${title} (${source})]\n${body}` };
}

/**
 * A `document` block as chat content parts: a base64 or plain-text source becomes a chat `file`
 * part with a data URL (the documents policy reads it), a `content` source its text and image
 * blocks, a `url` or `file` source a `file` part naming it (never fetched: the policy writes a
 * note). `title` names the file. A source of another shape is the client's error: 400.
 */
function documentParts(block: unknown, path: string): ContentPart[] {
  const b = block as { source?: unknown; title?: unknown };
  const src = b.source;
  const filename = typeof b.title === 'string' ? b.title : undefined;
  if (isObject(src) && src.type === 'base64' && typeof src.data === 'string') {
    const media = typeof src.media_type === 'string' ? src.media_type : 'application/pdf';
    return [filePart({ filename, file_data: `data:${media};base64,${src.data}` })];
  }
  if (isObject(src) && src.type === 'text' && typeof src.data === 'string') {
    const media = typeof src.media_type === 'string' ? src.media_type : 'text/plain';
    const data = Buffer.from(src.data, 'utf8').toString('base64');
    return [filePart({ filename, file_data: `data:${media};base64,${data}` })];
  }
  if (isObject(src) && src.type === 'content') {
    const blocks = typeof src.content === 'string' ? [{ type: 'text', text: src.content }] : src.content;
    if (!Array.isArray(blocks))
      throw invalid(
        `${path}.source.content`,
        `"${path}.source.content" must be a string or an array of blocks.`,
      );
    return blocks.map((c: unknown, i) => {
      const p = `${path}.source.content.${i}`;
      if (isObject(c) && c.type === 'image') return imagePart(c as unknown as ImageBlock, p);
      return { type: 'text', text: text(c, p) };
    });
  }
  if (isObject(src) && src.type === 'url' && typeof src.url === 'string')
    return [filePart({ filename, file_url: src.url })];
  if (isObject(src) && src.type === 'file' && typeof src.file_id === 'string')
    return [filePart({ filename, file_id: src.file_id })];
  throw invalid(
    `${path}.source`,
    `"${path}.source" must be a base64, text, content, url or file document source.`,
  );
}

/**
 * The block types of the Messages API toolproof knows (@anthropic-ai/sdk's ContentBlockParam and
 * BetaContentBlockParam, and the tool_result blocks): one where its role or place does not take
 * it (a tool_use in a user turn, a document in the assistant's) is the client's error, a 400.
 * Hosted tools' blocks are known by their names (isHostedBlock).
 */
const KNOWN_BLOCKS: ReadonlySet<string> = new Set([
  'text',
  'image',
  'document',
  'search_result',
  'thinking',
  'redacted_thinking',
  'tool_use',
  'tool_result',
  'tool_reference',
  'container_upload',
  'compaction',
  'tool_addition',
  'tool_removal',
  'fallback',
]);

/** Is this a block of a type toolproof does not know (a newer API's)? */
function isUnknownBlock(type: unknown): boolean {
  return !(typeof type === 'string' && (KNOWN_BLOCKS.has(type) || isHostedBlock(type)));
}

/**
 * A user or tool_result block of a type toolproof does not know (a newer API's), as a chat part
 * of the same type and fields: the backend may take it, and one whose parser refuses it has it as
 * text from then on (policies/unknown-parts). Before, a 400 here on every later turn. A known type
 * out of its place is the client's error: a 400 saying `where` it cannot stand.
 */
function unknownBlockPart(block: unknown, path: string, where: string): ContentPart {
  if (!isObject(block)) throw invalid(path, `"${path}" must be an object.`);
  if (!isUnknownBlock(block.type))
    throw invalid(`${path}.type`, `A "${String(block.type)}" block cannot stand in ${where}.`);
  return { ...block, type: typeof block.type === 'string' ? block.type : '' };
}

/** Text and images as chat content: a plain string when there is no image. */
function userContent(parts: ContentPart[]): string | ContentPart[] {
  if (parts.every((p) => p.type === 'text')) return parts.map((p) => p.text ?? '').join('\n\n');
  return parts;
}

function toolResultMessage(block: ToolResultBlock, path: string): ChatMessage {
  if (typeof block.tool_use_id !== 'string' || block.tool_use_id === '')
    throw invalid(`${path}.tool_use_id`, `"${path}.tool_use_id" must be a non-empty string.`);
  const parts: ContentPart[] = [];
  const content = block.content;
  if (typeof content === 'string') parts.push({ type: 'text', text: content });
  else if (Array.isArray(content)) {
    content.forEach((b, i) => {
      const p = `${path}.content.${i}`;
      if (b?.type === 'text') parts.push({ type: 'text', text: text(b, p) });
      else if (b?.type === 'image') parts.push(imagePart(b, p));
      else if ((b as { type?: unknown } | null)?.type === 'document') pushAll(parts, documentParts(b, p));
      else if (b?.type === 'search_result') parts.push(searchResultText(b, p));
      else if ((b as { type?: unknown } | null)?.type === 'tool_reference') {
        // ToolSearch's answer: the named deferred tool is declared from this turn on (tools.ts).
        const name = (b as { tool_name?: unknown }).tool_name;
        if (typeof name !== 'string' || name === '')
          throw invalid(`${p}.tool_name`, `"${p}.tool_name" must be a non-empty string.`);
        parts.push({ type: 'text', text: `Tool ${name} loaded: it can be called now.` });
      } else parts.push(unknownBlockPart(b, p, 'a tool_result'));
    });
  } else if (content !== undefined && content !== null) {
    throw invalid(`${path}.content`, `"${path}.content" must be a string or an array of blocks.`);
  }
  if (block.is_error === true) {
    const first = parts.find((p) => p.type === 'text');
    if (first) first.text = TOOL_ERROR_PREFIX + (first.text ?? '');
    else parts.unshift({ type: 'text', text: TOOL_ERROR_PREFIX.trimEnd() });
  }
  return { role: 'tool', tool_call_id: block.tool_use_id, content: userContent(parts) };
}

/**
 * A user turn: its tool_result blocks become tool messages first (chat wants them right after
 * the assistant's calls), then the rest of the turn as one user message.
 */
function userMessages(msg: MessageParam, path: string): ChatMessage[] {
  if (typeof msg.content === 'string') return [{ role: 'user', content: msg.content }];
  const tools: ChatMessage[] = [];
  const parts: ContentPart[] = [];
  msg.content.forEach((block, i) => {
    const p = `${path}.content.${i}`;
    switch (block?.type) {
      case 'text':
        parts.push({ type: 'text', text: text(block, p) });
        break;
      case 'image':
        parts.push(imagePart(block, p));
        break;
      case 'document':
        pushAll(parts, documentParts(block, p));
        break;
      case 'search_result':
        parts.push(searchResultText(block, p));
        break;
      case 'compaction':
        // A compaction from Anthropic's API opens a resumed conversation: its summary.
        parts.push({ type: 'text', text: compactionText(block.content) });
        break;
      case 'container_upload':
        // A file put in the code-execution container of a session begun on Anthropic's API.
        parts.push({ type: 'text', text: containerUploadNote(block.file_id) });
        break;
      case 'tool_result':
        tools.push(toolResultMessage(block, p));
        break;
      default:
        parts.push(unknownBlockPart(block, p, 'a user message'));
    }
  });
  const out = tools;
  if (parts.length > 0) out.push({ role: 'user', content: userContent(parts) });
  return out;
}

function assistantMessage(msg: MessageParam, path: string): ChatMessage {
  if (typeof msg.content === 'string') return { role: 'assistant', content: msg.content };
  let content = '';
  // Whether `content` ends a line, kept as it grows: reading its end (endsWith) flattens the
  // string built by +=, a copy of all of it per hosted block (10k blocks: 25 s of event loop).
  let atLineStart = true;
  let reasoning = '';
  const calls: ToolCall[] = [];
  msg.content.forEach((block, i) => {
    const p = `${path}.content.${i}`;
    switch (block?.type) {
      case 'text': {
        const t = text(block, p);
        content += t;
        if (t !== '') atLineStart = t.charCodeAt(t.length - 1) === 10;
        break;
      }
      case 'thinking':
        if (typeof block.thinking !== 'string')
          throw invalid(`${p}.thinking`, `"${p}.thinking" must be a string.`);
        reasoning += block.thinking;
        break;
      case 'redacted_thinking':
        break; // encrypted for Anthropic's own models: nothing a self-hosted model can read
      case 'fallback':
        // Anthropic's server-side fallback (its model declined, another went on) echoed back:
        // its API accepts it and renders nothing of it into the prompt; neither does toolproof.
        break;
      case 'compaction': {
        // Anthropic's server-side compaction, from a session begun there: its summary, whole.
        const t = compactionText(block.content);
        content += `${atLineStart ? '' : '\n'}${t}\n`;
        atLineStart = true;
        break;
      }
      case 'tool_use': {
        if (typeof block.id !== 'string' || typeof block.name !== 'string')
          throw invalid(p, `"${p}" needs a string "id" and "name".`);
        // The tool_use id is the chat call id: the next tool_result refers to it unchanged.
        calls.push({
          id: block.id,
          type: 'function',
          // The input's numbers and key order as the client wrote them (lossless-json.ts).
          function: { name: block.name, arguments: stringifyJson(block.input ?? {}) },
        });
        break;
      }
      default:
        // A hosted tool's call or result, from a session begun on Anthropic's API: a note.
        if (isObject(block) && isHostedBlock(block.type)) {
          // On a line of its own: the turn's text may go on after it.
          content += `${atLineStart ? '' : '\n'}${hostedBlockNote(block)}\n`;
          atLineStart = true;
          break;
        }
        if (!isObject(block)) throw invalid(p, `"${p}" must be an object.`);
        if (!isUnknownBlock(block.type))
          throw invalid(`${p}.type`, `A "${String(block.type)}" block cannot stand in an assistant message.`);
        // A block of a type toolproof does not know (a newer API's, a session begun there): a
        // line naming its type, the same every turn; a 400 came back with every later turn.
        content += `${atLineStart ? '' : '\n'}${unknownItemNote(block.type, 'block')}\n`;
        atLineStart = true;
        break;
    }
  });
  const out: ChatMessage = {
    role: 'assistant',
    content: content === '' && calls.length > 0 ? null : content,
  };
  if (calls.length > 0) out.tool_calls = calls;
  if (reasoning !== '') out.reasoning_content = reasoning;
  return out;
}

/**
 * A mid-conversation tool change (`tool_addition`, `tool_removal`) as the line the model reads
 * where it stands: the tool's name, and whether it comes or goes from here on. An added tool's
 * definition is declared upstream (tools.ts addedToolDefinitions); a removed one stays declared
 * (a chat backend has one tool list), the line says it is gone.
 */
function toolChangeText(block: Record<string, unknown>): string {
  const tool = isObject(block.tool) ? block.tool : {};
  const def = isObject(tool.definition) ? tool.definition : undefined;
  const raw = def?.name ?? tool.name ?? tool.server_name;
  const name = typeof raw === 'string' ? raw.replace(/[\r\n[\]]+/g, ' ').slice(0, 200) : 'a tool';
  const what = tool.type === 'mcp_toolset_reference' ? `the tools of MCP server ${name}` : `tool ${name}`;
  return block.type === 'tool_addition'
    ? `[${what} can be called from here on]`
    : `[${what} can no longer be called from here on]`;
}

/** The system prompt as one text; Claude Code's per-request billing nonce made constant (docs/prefix.md). */
function systemText(system: MessagesRequest['system'], path = 'system', turn = false): string | undefined {
  if (system === undefined || system === null) return undefined;
  if (typeof system === 'string') return stripBillingNonce(system);
  if (!Array.isArray(system)) throw invalid(path, `"${path}" must be a string or an array of text blocks.`);
  return system
    .map((b: TextBlock, i) => {
      // A system turn's tool changes (Claude Code's mid-conversation-tool-changes beta).
      const type = (b as { type?: unknown } | null)?.type;
      if (turn && (type === 'tool_addition' || type === 'tool_removal'))
        return toolChangeText(b as unknown as Record<string, unknown>);
      if (b?.type !== 'text') throw invalid(`${path}.${i}.type`, 'System blocks must be text blocks.');
      return stripBillingNonce(text(b, `${path}.${i}`));
    })
    .join('\n\n');
}

/** Whether `name` is a server tool's of `tools` (left out upstream: tools.ts). */
function namesServerTool(tools: MessagesRequest['tools'], name: unknown): boolean {
  if (!Array.isArray(tools) || typeof name !== 'string') return false;
  return tools.some((t) => isObject(t) && t.name === name && isServerTool(t.type));
}

function toolChoice(choice: ToolChoiceParam): { tool_choice: ToolChoice; parallel?: false } {
  const parallel = 'disable_parallel_tool_use' in choice && choice.disable_parallel_tool_use === true;
  const extra = parallel ? { parallel: false as const } : {};
  switch (choice.type) {
    case 'auto':
      return { tool_choice: 'auto', ...extra };
    case 'any':
      return { tool_choice: 'required', ...extra };
    case 'none':
      return { tool_choice: 'none' };
    case 'tool':
      if (typeof choice.name !== 'string' || choice.name === '')
        throw invalid('tool_choice.name', '"tool_choice.name" is required for type "tool".');
      return { tool_choice: { type: 'function', function: { name: choice.name } }, ...extra };
    default:
      throw invalid(
        'tool_choice.type',
        `Unknown tool_choice type "${String((choice as { type?: unknown }).type)}".`,
      );
  }
}

/** The conversation as chat messages: system first, then each turn. */
function toChatMessages(req: Pick<MessagesRequest, 'system' | 'messages'>): ChatMessage[] {
  const out: ChatMessage[] = [];
  const system = systemText(req.system);
  if (system !== undefined && system !== '') out.push({ role: 'system', content: system });
  req.messages.forEach((msg, i) => {
    const path = `messages.${i}`;
    if (msg?.role === 'user') pushAll(out, userMessages(msg, path));
    else if (msg?.role === 'assistant') out.push(assistantMessage(msg, path));
    else if (msg?.role === 'system') {
      // Claude Code's mid-conversation system turns (its environment section, reminders). Kept
      // as system messages in place; history repair decides where the template can take them.
      const content = systemText(msg.content as MessagesRequest['system'], `${path}.content`, true);
      out.push({ role: 'system', content: content ?? '' });
    } else throw invalid(`${path}.role`, `"${path}.role" must be "user", "assistant" or "system".`);
  });
  return out;
}

/**
 * Anthropic's server-held threads (beta; the SDK's tool runner uses them): `{type: 'create'}`
 * sends the whole conversation and asks the server to keep it, `{type: 'continue',
 * previous_message_id}` sends only the new turn. toolproof keeps no state: `create` is answered
 * like any request (it holds the whole conversation), and `continue` is refused with
 * `thread_not_found`, on which the SDK sends the whole conversation again with `create`. Read
 * as it was, a `continue` gave the model a conversation of orphan tool results.
 */
function refuseThreadContinue(thread: MessagesRequest['thread']): void {
  if (!isObject(thread) || thread.type !== 'continue') return;
  throw new ToolproofError('TP_ERR_NOT_FOUND', {
    param: 'thread',
    message:
      'toolproof keeps no threads (it is stateless): send the whole conversation, with thread {"type": "create"} or no thread.',
    detail: { kind: 'error-code', errorCode: 'thread_not_found' },
  });
}

/**
 * Anthropic's MCP connector (`mcp_servers`: remote MCP servers Anthropic's API calls for the model)
 * and code-execution container (`container`: the sandbox its code_execution tool runs in). Both are
 * run by Anthropic's servers, as server tools are: a self-hosted backend has nothing to call them
 * with, and the tools that use them (code_execution, `mcp_toolset`) are left out as hosted tools.
 * They are left out the same way (hostedTools: drop, reported by the door's header, log line and
 * metric; reject answers the 400). Refused, every turn of a session that set them failed alike.
 */
const HOSTED_FIELDS = ['mcp_servers', 'container'] as const;

/** Anthropic's effort levels as chat's reasoning_effort (vLLM reads it for gpt-oss and others). */
const EFFORT: Record<string, string> = { low: 'low', medium: 'medium', high: 'high', max: 'high' };

export interface ChatTranslation {
  chat: ChatCompletionRequest;
  /** Server tools left out of the upstream request, by type. */
  dropped: string[];
  /** The 400 the hosted-tools policy answers for them when the model refuses them. */
  refusal?: ToolproofError;
}

/**
 * The whole request. `thinking` maps to `chat_template_kwargs.enable_thinking` (the switch
 * Qwen3, GLM and similar templates read; others ignore it): enabled and adaptive turn it on,
 * disabled off; budget_tokens and display have no chat equivalent and are not forwarded.
 * `output_config.effort` becomes `reasoning_effort`, `output_config.format` (a JSON schema)
 * `response_format`. `metadata`, `context_management` (server-side context editing: toolproof
 * forwards the whole history it is given) and `service_tier` are accepted and not forwarded.
 */
export function translateRequest(req: MessagesRequest): ChatTranslation {
  refuseThreadContinue(req.thread);
  const out: ChatCompletionRequest = { model: req.model, messages: toChatMessages(req) };
  if (typeof req.max_tokens === 'number') out.max_tokens = req.max_tokens;
  const dropped: string[] = [];
  let refusal: ToolproofError | undefined;
  for (const f of HOSTED_FIELDS) {
    const v = req[f];
    if (v === undefined || v === null || v === '' || (Array.isArray(v) && v.length === 0)) continue;
    refusal ??= invalid(
      f,
      `"${f}" is not supported: it is run by Anthropic's servers, which a self-hosted backend has no equivalent of (set hostedTools: drop to leave it out).`,
    );
    dropped.push(f);
  }
  const tools = [
    ...(Array.isArray(req.tools) ? req.tools : []),
    ...addedToolDefinitions(req.tools, req.messages),
  ];
  // The route's schema caps `tools`; the tools system turns add are declared upstream beside them,
  // and count against the same cap (every per-request step over the tool list is linear in it).
  if (tools.length > MAX_DECLARED_TOOLS)
    throw invalid(
      'tools',
      `tools declares more than ${MAX_DECLARED_TOOLS} tools, counting those the conversation's system turns add (tool_addition).`,
    );
  // The schema caps `tools[].name`; a name a system turn adds is held to the same (protocol/tools.ts).
  if (tools.some((t) => isObject(t) && typeof t.name === 'string' && t.name.length > MAX_TOOL_NAME_CHARS))
    throw invalid('tools', `a tool name must be at most ${MAX_TOOL_NAME_CHARS} characters.`);
  if (tools.length > 0) {
    const t = toolDefs(tools, req.messages);
    if (t.tools.length > 0) out.tools = t.tools;
    pushAll(dropped, t.dropped);
    refusal ??= t.refusal;
  }
  if (req.tool_choice) {
    const c = toolChoice(req.tool_choice);
    // A server tool named by tool_choice was left out with the server tools: nothing upstream can
    // call it, and a named choice of a tool not sent is the backend's 400 (vLLM: "The tool
    // specified in `tool_choice` does not match any of the specified `tools`") on every turn.
    // The request goes on as with the tool dropped (hostedTools: drop): the model chooses.
    if (req.tool_choice.type === 'tool' && namesServerTool(req.tools, req.tool_choice.name))
      c.tool_choice = 'auto';
    out.tool_choice = c.tool_choice;
    if (c.parallel === false) out.parallel_tool_calls = false;
  }
  if (Array.isArray(req.stop_sequences) && req.stop_sequences.length > 0) out.stop = req.stop_sequences;
  for (const k of ['temperature', 'top_p', 'top_k'] as const) {
    if (typeof req[k] === 'number') out[k] = req[k];
  }
  if (req.thinking && typeof req.thinking === 'object') {
    out.chat_template_kwargs = { enable_thinking: req.thinking.type !== 'disabled' };
  }
  const config = req.output_config;
  if (isObject(config) && typeof config.effort === 'string' && EFFORT[config.effort])
    out.reasoning_effort = EFFORT[config.effort];
  // Structured output: output_config.format, or the older top-level output_format (Claude Code's
  // side queries, memory selection and classifiers, ask for JSON this way).
  const [format, formatPath] = isObject(config?.format)
    ? [config.format, 'output_config.format']
    : [req.output_format, 'output_format'];
  if (isObject(format) && format.type === 'json_schema') {
    if (!isObject(format.schema))
      throw invalid(`${formatPath}.schema`, `"${formatPath}.schema" must be a JSON schema object.`);
    out.response_format = { type: 'json_schema', json_schema: { name: 'output', schema: format.schema } };
  }
  if (req.stream === true) {
    out.stream = true;
    out.stream_options = { include_usage: true };
  }
  return refusal ? { chat: out, dropped, refusal } : { chat: out, dropped };
}

/** The chat request alone (count_tokens, tests). */
export function toChatRequest(req: MessagesRequest): ChatCompletionRequest {
  return translateRequest(req).chat;
}
