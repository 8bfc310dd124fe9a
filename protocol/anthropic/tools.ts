/**
 * Anthropic tool declarations -> chat functions. Pure. Three kinds arrive in `tools`:
 * - client tools (no type, or "custom"): a name and an input_schema, passed on as they are;
 * - Anthropic-defined client tools (bash_*, text_editor_*, computer_*, memory_*): the client runs
 *   them, but the request carries no schema (Anthropic's models are trained on it). They become
 *   functions under the name the client gave, with the input schema Anthropic's tool reference
 *   documents, so the model's tool_use comes back in the shape the client's handler expects;
 * - server tools (web_search_*, web_fetch_*, code_execution_*, tool_search_tool_*): run on
 *   Anthropic's servers, which a self-hosted backend has no equivalent of. Left out, and reported
 *   by the caller, with the refusal the hosted-tools policy answers when the model's
 *   hostedTools setting is `reject` (policies/hosted-tools).
 *
 * Deferred tools (`defer_loading: true`) are hidden from the model until a tool_reference block
 * in a tool_result names them (Claude Code's ToolSearch answers with such blocks): only the
 * referenced ones are declared upstream.
 */
import { ToolproofError } from '../errors.js';
import type { JsonObject, ToolDef } from '../openai.js';
import type { MessageParam, ToolParam } from './types.js';
import { isObject } from '../is-object.js';
import { StringSet } from '../string-set.js';

function invalid(param: string, message: string): ToolproofError {
  return new ToolproofError('TP_ERR_INVALID_FIELD', { param, message });
}

const str = (description: string): JsonObject => ({ type: 'string', description });

/** The text editor's input (text_editor_20250124 and later; the 2024 version is the same). */
function textEditorSchema(withUndo: boolean): JsonObject {
  const commands = ['view', 'create', 'str_replace', 'insert', ...(withUndo ? ['undo_edit'] : [])];
  return {
    type: 'object',
    properties: {
      command: { type: 'string', enum: commands, description: 'The command to run.' },
      path: str('Absolute path to the file or directory.'),
      file_text: str('For create: the content of the new file.'),
      old_str: str('For str_replace: the exact text to replace (must match once).'),
      new_str: str('For str_replace: the replacement text; for insert: the text to insert.'),
      insert_line: { type: 'integer', description: 'For insert: the line after which to insert (0 = top).' },
      view_range: {
        type: 'array',
        items: { type: 'integer' },
        minItems: 2,
        maxItems: 2,
        description: 'For view: [start, end] line numbers, 1-based; end -1 reads to the end.',
      },
    },
    required: ['command', 'path'],
  };
}

const BASH_SCHEMA: JsonObject = {
  type: 'object',
  properties: {
    command: str('The bash command to run.'),
    restart: { type: 'boolean', description: 'Restart the bash session.' },
  },
};

const MEMORY_SCHEMA: JsonObject = {
  type: 'object',
  properties: {
    command: {
      type: 'string',
      enum: ['view', 'create', 'str_replace', 'insert', 'delete', 'rename'],
      description: 'The memory command to run.',
    },
    path: str('Path inside /memories.'),
    file_text: str('For create: the file content.'),
    old_str: str('For str_replace: the text to replace.'),
    new_str: str('For str_replace: the replacement text.'),
    insert_line: { type: 'integer', description: 'For insert: the line to insert at.' },
    insert_text: str('For insert: the text to insert.'),
    old_path: str('For rename: the current path.'),
    new_path: str('For rename: the new path.'),
    view_range: { type: 'array', items: { type: 'integer' }, minItems: 2, maxItems: 2 },
  },
  required: ['command'],
};

function computerSchema(): JsonObject {
  const coordinate = { type: 'array', items: { type: 'integer' }, minItems: 2, maxItems: 2 };
  return {
    type: 'object',
    properties: {
      action: {
        type: 'string',
        enum: [
          'key',
          'type',
          'mouse_move',
          'left_click',
          'left_click_drag',
          'right_click',
          'middle_click',
          'double_click',
          'triple_click',
          'screenshot',
          'cursor_position',
          'left_mouse_down',
          'left_mouse_up',
          'scroll',
          'hold_key',
          'wait',
        ],
      },
      coordinate: { ...coordinate, description: '[x, y] in screen pixels.' },
      start_coordinate: { ...coordinate, description: 'For left_click_drag: where the drag starts.' },
      text: str('For key, type and hold_key: the text or key combination.'),
      scroll_direction: { type: 'string', enum: ['up', 'down', 'left', 'right'] },
      scroll_amount: { type: 'integer', minimum: 0 },
      duration: { type: 'number', description: 'For hold_key and wait: seconds.' },
    },
    required: ['action'],
  };
}

interface Typed {
  description: string | ((tool: ToolParam) => string);
  schema: (tool: ToolParam) => JsonObject;
}

function displaySize(tool: ToolParam): string {
  const w = tool.display_width_px;
  const h = tool.display_height_px;
  return typeof w === 'number' && typeof h === 'number' ? ` The display is ${w}x${h} pixels.` : '';
}

/** Anthropic-defined client tools by type prefix (the date suffix picks a version). */
function typedTool(type: string): Typed | undefined {
  if (/^bash_\d{8}$/.test(type))
    return {
      description:
        'Run a command in a persistent bash shell. State (working directory, variables) is kept between calls; restart: true starts a new shell.',
      schema: () => BASH_SCHEMA,
    };
  if (/^text_editor_\d{8}$/.test(type)) {
    // undo_edit exists in the 2024 and 20250124 versions only.
    const withUndo = type <= 'text_editor_20250124';
    return {
      description:
        'View, create and edit files: view a file or directory, create a file, replace one exact occurrence of a string, insert text after a line.',
      schema: () => textEditorSchema(withUndo),
    };
  }
  if (/^computer_\d{8}$/.test(type))
    return {
      description: (tool) => `Control the computer: screenshots, mouse and keyboard.${displaySize(tool)}`,
      schema: () => computerSchema(),
    };
  if (/^memory_\d{8}$/.test(type))
    return {
      description: 'Read and write files in the /memories directory, kept across conversations.',
      schema: () => MEMORY_SCHEMA,
    };
  return undefined;
}

/** Tools only Anthropic's servers run. */
const SERVER_TOOL =
  /^(web_search|web_fetch|code_execution|tool_search_tool_regex|tool_search_tool_bm25)_\d{8}$|^mcp_toolset$/;

/** Whether a tool's `type` is a server tool's (left out upstream). */
export const isServerTool = (type: unknown): type is string =>
  typeof type === 'string' && SERVER_TOOL.test(type);

export interface ToolTranslation {
  tools: ToolDef[];
  /** Server tools left out, by type (the response header, log line and metric report them). */
  dropped: string[];
  /** The 400 for the first one, in this API's shape, for a model that refuses them (hostedTools: reject). */
  refusal?: ToolproofError;
}

/**
 * The `tool_addition` blocks of the conversation's system turns (Claude Code's mid-conversation
 * tool changes, its `mid-conversation-tool-changes` beta: a tool that comes or goes mid-session,
 * an MCP server connecting or leaving, is a system turn instead of a new `tools` list).
 */
function toolAdditions(messages: readonly MessageParam[]): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const m of messages) {
    if (m?.role !== 'system' || !Array.isArray(m.content)) continue;
    for (const block of m.content as unknown[])
      if (isObject(block) && block.type === 'tool_addition' && isObject(block.tool)) out.push(block.tool);
  }
  return out;
}

/**
 * The tools a conversation's system turns define as they add them (`tool_definition`): declared
 * upstream after the request's own, from their turn on as from the start (a chat backend has one
 * tool list). A name the request declares already keeps the request's declaration.
 */
export function addedToolDefinitions(
  tools: readonly ToolParam[] | undefined,
  messages: readonly MessageParam[],
): ToolParam[] {
  // Names a system turn adds are the client's, not yet length-checked: a StringSet holds long ones apart.
  const declared = new StringSet();
  for (const t of tools ?? []) if (isObject(t) && typeof t.name === 'string') declared.add(t.name);
  const out: ToolParam[] = [];
  for (const tool of toolAdditions(messages)) {
    const def = tool.type === 'tool_definition' ? tool.definition : undefined;
    if (!isObject(def) || typeof def.name !== 'string' || declared.has(def.name)) continue;
    declared.add(def.name);
    out.push(def as unknown as ToolParam);
  }
  return out;
}

/**
 * Names the conversation's tool_reference blocks load (deferred tools the model may now see),
 * and the deferred tools its system turns add by reference.
 */
function referencedTools(messages: readonly MessageParam[]): StringSet {
  // The client's names, of any length: a StringSet holds long ones apart.
  const names = new StringSet();
  for (const tool of toolAdditions(messages))
    if (tool.type === 'tool_reference' && typeof tool.name === 'string') names.add(tool.name);
  for (const m of messages) {
    if (!Array.isArray(m?.content)) continue;
    for (const block of m.content) {
      if (block?.type !== 'tool_result' || !Array.isArray(block.content)) continue;
      for (const inner of block.content as unknown[]) {
        if (isObject(inner) && inner.type === 'tool_reference' && typeof inner.tool_name === 'string')
          names.add(inner.tool_name);
      }
    }
  }
  return names;
}

function describe(tool: ToolParam, fallback: Typed['description']): { description?: string } {
  if (typeof tool.description === 'string') return { description: tool.description };
  const text = typeof fallback === 'function' ? fallback(tool) : fallback;
  return text ? { description: text } : {};
}

export function toolDefs(tools: readonly ToolParam[], messages: readonly MessageParam[]): ToolTranslation {
  const out: ToolDef[] = [];
  const dropped: string[] = [];
  let refusal: ToolproofError | undefined;
  let loaded: StringSet | undefined;
  tools.forEach((tool, i) => {
    const path = `tools.${i}`;
    if (!isObject(tool)) throw invalid(path, `"${path}" must be an object.`);
    const type = tool.type;
    if (isServerTool(type)) {
      refusal ??= invalid(
        `${path}.type`,
        `Anthropic server tool "${type}" is not supported: it runs on Anthropic's servers, which a self-hosted backend has no equivalent of (set hostedTools: drop to leave it out).`,
      );
      dropped.push(type);
      return;
    }
    if (typeof tool.name !== 'string' || tool.name === '')
      throw invalid(`${path}.name`, `"${path}.name" is required.`);
    if (tool.defer_loading === true) {
      loaded ??= referencedTools(messages);
      if (!loaded.has(tool.name)) return;
    }
    if (type !== undefined && type !== null && type !== 'custom') {
      const typed = typeof type === 'string' ? typedTool(type) : undefined;
      if (!typed)
        throw invalid(
          `${path}.type`,
          `Tool type "${String(type)}" is not supported: declare client tools with an input_schema.`,
        );
      out.push({
        type: 'function',
        function: { name: tool.name, ...describe(tool, typed.description), parameters: typed.schema(tool) },
      });
      return;
    }
    if (!isObject(tool.input_schema))
      throw invalid(`${path}.input_schema`, `"${path}.input_schema" must be an object.`);
    out.push({
      type: 'function',
      function: { name: tool.name, ...describe(tool, ''), parameters: tool.input_schema as JsonObject },
    });
  });
  return refusal ? { tools: out, dropped, refusal } : { tools: out, dropped };
}
