import type { ChatCompletionRequest, JsonObject } from './openai.js';

/**
 * Tools one request may declare (the route answers 400 naming `tools` beyond it). Far above any
 * real client (OpenAI's own API stops at 128); every per-request step over the tool list is
 * linear, and this caps what linear costs.
 */
export const MAX_DECLARED_TOOLS = 4096;

/** A declared tool, as the request declared it (also what leak recovery reads: parsers/). */
export interface DeclaredTool {
  name: string;
  /** The JSON schema of its parameters (may be absent); XML-ish leak formats type raw values by it. */
  parameters?: JsonObject;
}

/** The request's declared function tools by name (the safety rules accept calls only to these). */
export function declaredTools(request: ChatCompletionRequest): Map<string, DeclaredTool> {
  const map = new Map<string, DeclaredTool>();
  if (!Array.isArray(request.tools)) return map;
  for (const tool of request.tools) {
    const fn = tool?.function;
    if (!fn || typeof fn.name !== 'string') continue;
    const parameters = fn.parameters && typeof fn.parameters === 'object' ? fn.parameters : undefined;
    map.set(fn.name, parameters ? { name: fn.name, parameters } : { name: fn.name });
  }
  return map;
}
