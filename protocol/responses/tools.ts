/**
 * Responses tool declarations -> chat functions, and the catalog that maps a chat call back to
 * the item the client expects. Pure.
 * - `function`: as it is.
 * - `namespace` (Codex groups its sub-agent tools so): each inner tool is declared on its own,
 *   under its own name (qualified as `namespace__name` only if two would clash); the call comes
 *   back as a function_call with that name and a `namespace` field, as OpenAI returns it.
 * - `custom` (freeform: Codex's apply_patch in a freeform catalog): a function with one string
 *   argument `input`. The tool's format becomes that string's JSON-schema `pattern`, so the
 *   pipeline's argument validation (RE2, linear) checks it after generation and the corrective
 *   retry re-asks once when it fails: a regex format whole-input; a Lark grammar by the literal
 *   text its start rule begins and ends with (lark-markers.ts), the grammar itself given to the
 *   model in the argument's description. Returned as a custom_tool_call item.
 * - client-executed typed tools (`local_shell`, `shell`, `apply_patch`): a function with the
 *   action's documented fields, returned as the typed call item (local_shell_call, shell_call,
 *   apply_patch_call).
 * - hosted tools (web_search, file_search, code_interpreter, ...), which run on OpenAI's servers:
 *   left out and reported by the caller, with the refusal the hosted-tools policy answers for a
 *   model whose hostedTools setting is `reject`.
 */
import { ToolproofError } from '../errors.js';
import type { JsonObject, ToolDef } from '../openai.js';
import { MAX_DECLARED_TOOLS, MAX_TOOL_NAME_CHARS } from '../tools.js';
import { larkMarkers, markerPattern } from './lark-markers.js';
import type { FunctionTool, ResponsesRequest } from './types.js';
import { isObject } from '../is-object.js';

function invalid(param: string, message: string): ToolproofError {
  return new ToolproofError('TP_ERR_INVALID_FIELD', { param, message });
}

/** Tool types that run on OpenAI's servers. */
const HOSTED_TOOL_TYPES = new Set([
  'web_search',
  'web_search_preview',
  'web_search_2025_08_26',
  'web_search_preview_2025_03_11',
  'file_search',
  'code_interpreter',
  'image_generation',
  'computer',
  'computer_use_preview',
  'mcp',
  'tool_search',
]);

export type TypedKind = 'local_shell' | 'shell' | 'apply_patch';
export type ToolKind = 'function' | 'custom' | TypedKind;

export interface CatalogEntry {
  kind: ToolKind;
  /** The name the client knows the tool by (inside its namespace, if any). */
  name: string;
  namespace?: string;
}

export interface ToolCatalog {
  /** Chat function name -> what the client declared. */
  byChatName: Map<string, CatalogEntry>;
  /** `namespace\u0000name` (or `\u0000name`) of a function / custom tool -> its chat name. */
  chatName: Map<string, string>;
}

const emptyCatalog = (): ToolCatalog => ({ byChatName: new Map(), chatName: new Map() });

const key = (name: string, namespace?: string) => `${namespace ?? ''}\u0000${name}`;

/** The chat name of a client tool (a call sent back in history); the client name when unknown. */
export function chatNameOf(catalog: ToolCatalog | undefined, name: string, namespace?: string): string {
  return catalog?.chatName.get(key(name, namespace)) ?? name;
}

const TYPED: Record<TypedKind, { description: string; parameters: JsonObject }> = {
  local_shell: {
    description: 'Run a command on the local machine. command is the argv list (e.g. ["bash", "-lc", "ls"]).',
    parameters: {
      type: 'object',
      properties: {
        command: { type: 'array', items: { type: 'string' } },
        working_directory: { type: 'string' },
        timeout_ms: { type: 'integer', minimum: 0 },
        env: { type: 'object', additionalProperties: { type: 'string' } },
        user: { type: 'string' },
      },
      required: ['command'],
    },
  },
  shell: {
    description: 'Run shell commands on the local machine, in order.',
    parameters: {
      type: 'object',
      properties: {
        commands: { type: 'array', items: { type: 'string' }, minItems: 1 },
        timeout_ms: { type: 'integer', minimum: 0 },
        max_output_length: { type: 'integer', minimum: 0 },
      },
      required: ['commands'],
    },
  },
  apply_patch: {
    description:
      'Create, update or delete a file. For update_file, diff is a unified-diff style patch of the file; for create_file, the new content as a diff of added lines.',
    parameters: {
      type: 'object',
      properties: {
        operation: {
          type: 'object',
          properties: {
            type: { type: 'string', enum: ['create_file', 'update_file', 'delete_file'] },
            path: { type: 'string' },
            diff: { type: 'string' },
          },
          required: ['type', 'path'],
        },
      },
      required: ['operation'],
    },
  },
};

/** The JSON-schema of a custom tool's one argument, from its format. */
function customInput(tool: Record<string, unknown>, param: string): JsonObject {
  const input: JsonObject = { type: 'string' };
  const format = tool.format;
  if (format === undefined || format === null) return input;
  if (!isObject(format)) throw invalid(`${param}.format`, `${param}.format must be an object.`);
  if (format.type === 'text') return input;
  if (format.type !== 'grammar')
    throw invalid(`${param}.format.type`, `${param}.format.type must be "text" or "grammar".`);
  const definition = format.definition;
  if (typeof definition !== 'string' || definition === '')
    throw invalid(`${param}.format.definition`, `${param}.format.definition must be a non-empty string.`);
  if (format.syntax === 'regex') {
    input.pattern = `^(?:${definition})$`;
    input.description = 'The whole input must match this regular expression.';
    return input;
  }
  if (format.syntax === 'lark') {
    const pattern = markerPattern(larkMarkers(definition));
    if (pattern) input.pattern = pattern;
    input.description = `The raw input text (not JSON), following this Lark grammar:\n${definition}`;
    return input;
  }
  throw invalid(`${param}.format.syntax`, `${param}.format.syntax must be "lark" or "regex".`);
}

export interface Declared {
  def: ToolDef;
  entry: CatalogEntry;
}

function fromFunction(t: FunctionTool, param: string, namespace?: string): Declared {
  if (typeof t.name !== 'string' || !t.name)
    throw invalid(`${param}.name`, `${param}.name must be a non-empty string.`);
  checkNameLength(t.name, `${param}.name`);
  const def: ToolDef = { type: 'function', function: { name: t.name } };
  if (typeof t.description === 'string') def.function.description = t.description;
  if (t.parameters !== undefined && t.parameters !== null) {
    // Dropped, a non-object would declare a tool without arguments the client never asked for.
    if (typeof t.parameters !== 'object' || Array.isArray(t.parameters))
      throw invalid(`${param}.parameters`, `${param}.parameters must be a JSON schema object.`);
    def.function.parameters = t.parameters;
  }
  if (typeof t.strict === 'boolean') def.function.strict = t.strict;
  return { def, entry: { kind: 'function', name: t.name, ...(namespace ? { namespace } : {}) } };
}

/** A tool's or namespace's name past MAX_TOOL_NAME_CHARS: a 400 naming the field (protocol/tools.ts). */
function checkNameLength(name: string, param: string): void {
  if (name.length > MAX_TOOL_NAME_CHARS)
    throw invalid(param, `${param} must be at most ${MAX_TOOL_NAME_CHARS} characters.`);
}

export function fromCustom(t: Record<string, unknown>, param: string, namespace?: string): Declared {
  if (typeof t.name !== 'string' || !t.name)
    throw invalid(`${param}.name`, `${param}.name must be a non-empty string.`);
  checkNameLength(t.name, `${param}.name`);
  const def: ToolDef = {
    type: 'function',
    function: {
      name: t.name,
      ...(typeof t.description === 'string' ? { description: t.description } : {}),
      parameters: {
        type: 'object',
        properties: { input: customInput(t, param) },
        required: ['input'],
        additionalProperties: false,
      },
    },
  };
  return { def, entry: { kind: 'custom', name: t.name, ...(namespace ? { namespace } : {}) } };
}

export interface ToolsTranslation {
  tools: ToolDef[];
  catalog: ToolCatalog;
  /** Hosted tool types left out. */
  dropped: string[];
  /** The 400 for the first one, in this API's shape (hostedTools: reject, policies/hosted-tools). */
  refusal?: ToolproofError;
}

/**
 * Chat names: the client's, qualified as `namespace__name` only where two would be the same.
 * A qualified name may itself be declared (a top-level `ns__f` beside namespace `ns` holding `f`):
 * then `_2`, `_3`, ... is added until it names no other tool, so each chat name stands for one
 * declaration and a call comes back as the tool it was. Deterministic: the same tools give the
 * same names on every turn (the prompt's prefix stays the same).
 */
function chatNames(declared: readonly Declared[]): string[] {
  const count = new Map<string, number>();
  for (const d of declared) count.set(d.entry.name, (count.get(d.entry.name) ?? 0) + 1);
  const qualifies = (d: Declared) => (count.get(d.entry.name) ?? 0) > 1 && d.entry.namespace !== undefined;
  // Which declaration each name stands for: first the names kept as the client wrote them.
  const owner = new Map<string, string>();
  for (const d of declared) {
    if (!qualifies(d) && !owner.has(d.entry.name))
      owner.set(d.entry.name, key(d.entry.name, d.entry.namespace));
  }
  // One search per declaration (a duplicate reuses it), resumed where the last search of the
  // same base stopped: many declarations share a base (namespace `a__b` with `c`, namespace `a`
  // with `b__c`), and each search from _2 walked every suffix the ones before it took (an 18 MB
  // request stalled the loop 27 s). Each taken suffix is passed once: linear in the tools.
  const named = new Map<string, string>();
  const nextSuffix = new Map<string, number>();
  return declared.map((d) => {
    if (!qualifies(d)) return d.entry.name;
    const id = key(d.entry.name, d.entry.namespace);
    const known = named.get(id);
    if (known !== undefined) return known;
    const base = `${d.entry.namespace}__${d.entry.name}`;
    let n = nextSuffix.get(base) ?? 1;
    let name = n === 1 ? base : `${base}_${n}`;
    while (owner.has(name)) name = `${base}_${++n}`;
    nextSuffix.set(base, n + 1);
    owner.set(name, id);
    named.set(id, name);
    return name;
  });
}

export function translateTools(tools: ResponsesRequest['tools']): ToolsTranslation {
  const declared: Declared[] = [];
  const dropped: string[] = [];
  let refusal: ToolproofError | undefined;
  (tools ?? []).forEach((raw, i) => {
    const param = `tools[${i}]`;
    if (!isObject(raw)) throw invalid(param, `${param} must be an object.`);
    const type = raw.type;
    if (type === 'function') declared.push(fromFunction(raw as unknown as FunctionTool, param));
    else if (type === 'custom') declared.push(fromCustom(raw, param));
    else if (type === 'namespace') {
      const ns = raw.name;
      if (typeof ns !== 'string' || !ns)
        throw invalid(`${param}.name`, `${param}.name must be a non-empty string.`);
      checkNameLength(ns, `${param}.name`);
      if (!Array.isArray(raw.tools)) throw invalid(`${param}.tools`, `${param}.tools must be an array.`);
      raw.tools.forEach((inner: unknown, j) => {
        const p = `${param}.tools[${j}]`;
        if (!isObject(inner)) throw invalid(p, `${p} must be an object.`);
        if (inner.type === 'function') declared.push(fromFunction(inner as unknown as FunctionTool, p, ns));
        else if (inner.type === 'custom') declared.push(fromCustom(inner, p, ns));
        else throw invalid(`${p}.type`, `${p}.type must be "function" or "custom" inside a namespace.`);
      });
    } else if (type === 'local_shell' || type === 'shell' || type === 'apply_patch') {
      const typed = TYPED[type];
      declared.push({
        def: {
          type: 'function',
          function: { name: type, description: typed.description, parameters: typed.parameters },
        },
        entry: { kind: type, name: type },
      });
    } else if (typeof type === 'string' && HOSTED_TOOL_TYPES.has(type)) {
      refusal ??= invalid(
        `${param}.type`,
        `Tool type "${type}" is not supported: it is a hosted tool that runs on OpenAI's servers, which a self-hosted chat backend has no equivalent of (set hostedTools: drop to leave it out).`,
      );
      dropped.push(type);
    } else {
      throw invalid(
        `${param}.type`,
        `Tool type "${String(type)}" is not supported: toolproof runs function, custom, namespace, local_shell, shell and apply_patch tools.`,
      );
    }
  });

  // The route's schema caps the list; a namespace's own tools count as the tools they become.
  if (declared.length > MAX_DECLARED_TOOLS)
    throw invalid(
      'tools',
      `tools declares more than ${MAX_DECLARED_TOOLS} tools, counting those inside namespaces.`,
    );
  const names = chatNames(declared);
  const catalog = emptyCatalog();
  const out: ToolDef[] = [];
  declared.forEach((d, i) => {
    const name = names[i]!;
    // A name declared twice goes upstream twice, as before; the first declaration maps calls.
    if (!catalog.byChatName.has(name)) {
      catalog.byChatName.set(name, d.entry);
      catalog.chatName.set(key(d.entry.name, d.entry.namespace), name);
    }
    out.push(name === d.def.function.name ? d.def : { ...d.def, function: { ...d.def.function, name } });
  });
  return refusal ? { tools: out, catalog, dropped, refusal } : { tools: out, catalog, dropped };
}
