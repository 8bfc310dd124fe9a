/**
 * tool-fields (request side): a request without a tool (none declared, or none left after
 * translation: hosted tools dropped, empty namespaces, an agent's compaction turn that keeps its
 * `tool_choice`) goes upstream without any tool-only field: `tool_choice`, `parallel_tool_calls`,
 * and an empty `tools` array. vLLM refuses `tool_choice` without tools ("When using `tool_choice`,
 * `tools` must be set."), and recent vLLM an empty `tools` array: forwarded, the compaction fails
 * and the agent's session ends. Without tools, none of these fields can change the answer.
 * Runs before force-tool-use, which then sees a request with no tools and does not force it.
 */
import type { ChatCompletionRequest } from '../../protocol/openai.js';
import type { Policy } from '../types.js';
import { describeToolFieldsEffect, TOOL_FIELDS_POLICY, type ToolFieldsEffect } from './effects.js';

/** Fields that only mean something beside tools (the legacy `functions` API is not rewritten). */
const TOOL_ONLY_FIELDS = ['tools', 'tool_choice', 'parallel_tool_calls'] as const;

/** `request` without its tool-only fields when it carries no tool (the same object otherwise). */
export function withoutToolFields(request: ChatCompletionRequest): {
  request: ChatCompletionRequest;
  fields: string[];
} {
  const tools: unknown = request.tools;
  if (Array.isArray(tools) && tools.length > 0) return { request, fields: [] };
  const fields = TOOL_ONLY_FIELDS.filter((f) => Object.hasOwn(request, f));
  if (fields.length === 0) return { request, fields };
  const out = { ...request };
  for (const f of fields) delete out[f];
  return { request: out, fields };
}

export const toolFieldsPolicy: Policy<ToolFieldsEffect> = {
  name: TOOL_FIELDS_POLICY,
  // Always on: a tool-only field without tools is refused by vLLM and means nothing elsewhere.
  enabled: () => true,
  describeEffect: describeToolFieldsEffect,
  onRequest(request) {
    const { request: out, fields } = withoutToolFields(request);
    if (out === request) return { action: 'continue', request, effects: [] };
    return {
      action: 'continue',
      request: out,
      effects: [{ policy: TOOL_FIELDS_POLICY, kind: 'dropped-tool-fields', count: 1, detail: { fields } }],
    };
  },
};
