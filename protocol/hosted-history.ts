/**
 * A hosted (server-side) tool's call or result found in a conversation's history: Anthropic's
 * `server_tool_use` / `web_search_tool_result` / `mcp_tool_use` ... blocks, the Responses API's
 * `web_search_call` / `code_interpreter_call` / `mcp_call` ... items. They come from a session that
 * began on the vendor's own API (Claude Code or Codex resumed against toolproof): the model never
 * writes them through toolproof, whose backends run no hosted tool. Refused, they came back with
 * every later turn and the resumed session was dead; each becomes one line of the assistant's text
 * instead, saying what ran where, with what it carried that the model can read (a query, result
 * titles and URLs), never its encrypted or binary parts. Pure and deterministic: the same block
 * gives the same line on every turn, so the prompt prefix holds (docs/prefix.md).
 */
import { isObject } from './is-object.js';

/** Most characters of one note: what a hosted tool carried is summarized, never replayed whole. */
const NOTE_MAX = 2_000;

/** Fields never shown: ids, opaque or encrypted payloads, and bulky binary-ish results. */
const HIDDEN = new Set([
  'type',
  'id',
  'tool_use_id',
  'call_id',
  'status',
  'encrypted_content',
  'encrypted_index',
  'signature',
  'result',
  'results',
  'outputs',
  'output',
  'content',
  'page_age',
  'cache_control',
  'citations',
  'tools',
  // a program's opaque replay fingerprint (programmatic tool calling)
  'fingerprint',
]);

function shown(value: unknown): string {
  if (!isObject(value)) return typeof value === 'string' ? value : JSON.stringify(value ?? null);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) if (!HIDDEN.has(k) && v !== null && v !== undefined) out[k] = v;
  return JSON.stringify(out);
}

/** Titles and URLs of search results (Anthropic `web_search_result`, Responses `results`). */
function resultList(content: unknown): string | undefined {
  if (!Array.isArray(content)) return undefined;
  const items = content
    .filter(isObject)
    .map((r) => {
      const title = typeof r.title === 'string' ? r.title : '';
      const url = typeof r.url === 'string' ? r.url : typeof r.filename === 'string' ? r.filename : '';
      return title && url ? `${title} (${url})` : title || url;
    })
    .filter((s) => s !== '');
  return items.length > 0 ? items.join('; ') : undefined;
}

function line(text: string): string {
  const one = text.replace(/[\r\n]+/g, ' ');
  return one.length > NOTE_MAX ? `${one.slice(0, NOTE_MAX)}…` : one;
}

/** Anthropic block types of hosted tools (server tools and MCP connectors), in assistant content. */
export function isHostedBlock(type: unknown): type is string {
  return (
    typeof type === 'string' &&
    (type === 'server_tool_use' ||
      type === 'mcp_tool_use' ||
      type === 'mcp_tool_listing' ||
      type.endsWith('_tool_result'))
  );
}

/** The note an Anthropic hosted-tool block becomes. */
export function hostedBlockNote(block: Record<string, unknown>): string {
  const type = String(block.type);
  if (type === 'server_tool_use' || type === 'mcp_tool_use') {
    const name = typeof block.name === 'string' ? block.name : 'a server tool';
    const server = typeof block.server_name === 'string' ? ` (MCP server ${block.server_name})` : '';
    return line(`[${name}${server} ran on the API this conversation began on, with ${shown(block.input)}]`);
  }
  if (type === 'mcp_tool_listing') {
    // The MCP connector's listing, sent back on every later turn (its SDK says to): the names.
    const server = typeof block.mcp_server_name === 'string' ? block.mcp_server_name : 'an MCP server';
    const names = toolNames(block.tools);
    return line(
      `[MCP server ${server} listed its tools on the API this conversation began on${names ? `: ${names}` : ''}]`,
    );
  }
  const content = block.content;
  const list = resultList(content) ?? (isObject(content) ? resultList([content]) : undefined);
  const error = isObject(content) && typeof content.error_code === 'string' ? content.error_code : undefined;
  const what = error ? `failed: ${error}` : list ? `gave: ${list}` : 'gave a result not available here';
  return line(
    `[${type.replace(/_tool_result$/, '')} result from the API this conversation began on ${what}]`,
  );
}

/**
 * Responses item types of hosted tools (`web_search_call`, `mcp_call`, ... and their outputs;
 * `tool_search_call` and its `tool_search_output`, the tools the search loaded).
 */
const HOSTED_ITEMS =
  /_call(_output)?$|^tool_search_output$|^mcp_(list_tools|approval_request|approval_response)$|^program(_output)?$/;

export function isHostedItem(type: string): boolean {
  return HOSTED_ITEMS.test(type);
}

/**
 * The line an assistant-side block or an item of a type toolproof does not know becomes (a newer
 * API's, from a session begun there): its type alone, so the same bytes every turn. Refused, it
 * came back with every later turn and the session was dead.
 */
export function unknownItemNote(type: unknown, what: 'block' | 'item'): string {
  const name = typeof type === 'string' && type !== '' ? type.slice(0, 64).replace(/[^\w.:-]/g, '?') : 'none';
  return `[${what} of type "${name}" from the API this conversation began on left out: toolproof does not know this type]`;
}

/** The names of the tools a `tool_search_output` loaded (functions, and namespaces by name). */
function toolNames(tools: unknown): string | undefined {
  if (!Array.isArray(tools)) return undefined;
  const names = tools.filter(isObject).flatMap((t) => (typeof t.name === 'string' && t.name ? [t.name] : []));
  return names.length > 0 ? names.join(', ') : undefined;
}

/** The note a Responses hosted-tool item becomes. */
export function hostedItemNote(item: Record<string, unknown>): string {
  const type = String(item.type);
  const action = isObject(item.action) ? item.action : undefined;
  const list =
    resultList(item.results) ??
    resultList(isObject(action) ? (action.sources as unknown) : undefined) ??
    toolNames(item.tools);
  const detail = shown(action ?? item);
  // program_output (programmatic tool calling's result, as the program's code in `program`): text
  const result = type === 'program_output' && typeof item.result === 'string' ? item.result : undefined;
  const tail =
    (list ?? result) !== undefined ? `; it gave: ${list ?? result}` : '; its result is not available here';
  return line(`[${type} ran on the API this conversation began on, with ${detail}${tail}]`);
}

/**
 * A compaction made by the vendor's API, standing in for the conversation before it: Anthropic's
 * `compaction` block (server-side compaction, `context_management` `compact_*`: the summary as
 * text, signed) and the Responses API's `compaction` item (`/v1/responses/compact`, Codex's remote
 * compaction: encrypted). A session compacted there and resumed through toolproof sends it first
 * on every later turn: refused, the session was dead. A readable summary is carried whole, under a
 * header saying what it is (it is all the model has of that conversation; never cut); one that
 * cannot be read (encrypted, or `content: null`, Anthropic's failed compaction) is a note saying
 * so. Deterministic, like the notes above.
 */
export function compactionText(
  summary: unknown,
  /** 'toolproof': a summary toolproof's own compaction wrote (protocol/responses/compaction.ts). */
  by?: 'toolproof',
): string {
  if (typeof summary === 'string' && summary !== '')
    return by === 'toolproof'
      ? `[summary of the earlier conversation, written when it was compacted]\n${summary}`
      : `[summary of the earlier conversation, written when the API this conversation began on compacted it]\n${summary}`;
  return '[the earlier conversation was compacted on the API this conversation began on; that summary is encrypted or empty and cannot be read here]';
}

/**
 * A `container_upload` block (a file the user put in the code-execution container of a session
 * begun on Anthropic's API): that container and its code execution are Anthropic's, so the file
 * is out of reach here. A note naming it, never a 400 on every later turn.
 */
export function containerUploadNote(fileId: unknown): string {
  const id = typeof fileId === 'string' ? fileId.replace(/[\r\n[\]]+/g, ' ').slice(0, 200) : 'a file';
  return `[file ${id} was uploaded to the code-execution container of the API this conversation began on; it is not available here]`;
}
