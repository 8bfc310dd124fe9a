import type { ChatCompletionRequest, JsonObject } from './openai.js';

/**
 * Tools one request may declare (the route answers 400 naming `tools` beyond it). Far above any
 * real client (OpenAI's own API stops at 128); every per-request step over the tool list is
 * linear, and this caps what linear costs.
 */
export const MAX_DECLARED_TOOLS = 4096;

/**
 * Characters of one tool name (or Responses namespace name) a request may declare (400 naming
 * the field beyond it). OpenAI's own API stops at 64; past 16,383 V8 hashes a string by its
 * length alone, so every Map and Set of the declared names (the engine's, the policies', the
 * doors') would compare each name with all the others: 1,000 tools of 20 KB names alike but for
 * their ends cost 3 s a request. Names up to here are hashed whole.
 */
export const MAX_TOOL_NAME_CHARS = 4096;

/** A declared tool, as the request declared it (also what leak recovery reads: parsers/). */
export interface DeclaredTool {
  name: string;
  /** The JSON schema of its parameters (may be absent); XML-ish leak formats type raw values by it. */
  parameters?: JsonObject;
}

/** declaredTools by tool list (a request's list is never changed in place: policies copy it). */
const DECLARED = new WeakMap<readonly unknown[], ReadonlyMap<string, DeclaredTool>>();

/** The request's declared function tools by name (the safety rules accept calls only to these). */
export function declaredTools(request: ChatCompletionRequest): ReadonlyMap<string, DeclaredTool> {
  const list = request.tools;
  if (!Array.isArray(list)) return new Map();
  // One map per tool list, shared by every choice and attempt of a request (a retry's request
  // is a copy with the same list): what the engine derives from it (the sorted names of
  // parsers/engine/name-starts.ts) is then derived once per request, not per stream.
  const known = DECLARED.get(list);
  if (known !== undefined) return known;
  const map = new Map<string, DeclaredTool>();
  for (const tool of list) {
    const fn = tool?.function;
    if (!fn || typeof fn.name !== 'string') continue;
    const parameters = fn.parameters && typeof fn.parameters === 'object' ? fn.parameters : undefined;
    map.set(fn.name, parameters ? { name: fn.name, parameters } : { name: fn.name });
  }
  DECLARED.set(list, map);
  return map;
}
