/**
 * guided-schema (request side): when the upstream's guided decoding refused a schema of the
 * request for keywords it cannot compile (refusal.ts; vLLM with the xgrammar backend by name: a
 * tool's `"format": "uri"` or `"uniqueItems"`, a Pydantic answer schema's `"format": "date-time"`),
 * the request goes again with those keywords left out of every tool's parameters and of the
 * `response_format` schema (strip.ts), the synthetic answer tool included. The server sets
 * `ctx.refused` from that refusal and remembers it per upstream and model
 * (server/chat/attempt.ts), so later turns send the same stripped bytes from the start.
 *
 * Forced tool use keeps its guarantee (a tool_choice "required" the backend enforces) instead of
 * falling back to "auto", and a client's own "required", named tool or schema answer is served
 * instead of relayed as a 400 it would send again every turn. What guided decoding no longer
 * enforces, toolproof still checks: the arguments are validated against the client's whole
 * schema, and a call that fails it is re-asked (corrective-retry).
 */
import type { ChatCompletionRequest, JsonObject, ToolDef } from '../../protocol/openai.js';
import { isObject } from '../../protocol/is-object.js';
import { type Policy, wasRefused } from '../types.js';
import { describeGuidedSchemaEffect, GUIDED_SCHEMA_POLICY, type GuidedSchemaEffect } from './effects.js';
import { refusesSchemaFeatures } from './refusal.js';
import { withoutRefusedKeywords } from './strip.js';

/** `request` with the refused keywords left out of its schemas, and what was left out where. */
export function withGuidableSchemas(request: ChatCompletionRequest): {
  request: ChatCompletionRequest;
  keywords: string[];
  schemas: string[];
} {
  const keywords = new Set<string>();
  const schemas: string[] = [];
  let tools: ToolDef[] | undefined;
  if (Array.isArray(request.tools))
    request.tools.forEach((t, i) => {
      const fn = isObject(t) && isObject(t.function) ? t.function : undefined;
      if (!fn || !isObject(fn.parameters)) return;
      const { schema, dropped } = withoutRefusedKeywords(fn.parameters);
      if (dropped.length === 0) return;
      for (const k of dropped) keywords.add(k);
      schemas.push(String(fn.name));
      tools ??= request.tools!.slice();
      tools[i] = { ...t, function: { ...t.function, parameters: schema as JsonObject } };
    });
  let responseFormat: JsonObject | undefined;
  const rf = request.response_format;
  if (
    isObject(rf) &&
    rf.type === 'json_schema' &&
    isObject(rf.json_schema) &&
    isObject(rf.json_schema.schema)
  ) {
    const { schema, dropped } = withoutRefusedKeywords(rf.json_schema.schema);
    if (dropped.length > 0) {
      for (const k of dropped) keywords.add(k);
      schemas.push('response_format');
      responseFormat = { ...rf, json_schema: { ...rf.json_schema, schema } } as JsonObject;
    }
  }
  if (!tools && !responseFormat) return { request, keywords: [], schemas };
  return {
    request: {
      ...request,
      ...(tools ? { tools } : {}),
      ...(responseFormat ? { response_format: responseFormat } : {}),
    },
    keywords: [...keywords],
    schemas,
  };
}

/** The refusal's fact: the upstream's guided decoding refused a schema keyword. */
const SCHEMA_KEYWORDS_FACT = 'schema-keywords';

export const guidedSchemaPolicy: Policy<GuidedSchemaEffect> = {
  name: GUIDED_SCHEMA_POLICY,
  // Always on: it acts only once the upstream refused a schema (ctx.refused).
  enabled: () => true,
  describeEffect: describeGuidedSchemaEffect,
  refusal: {
    fact: SCHEMA_KEYWORDS_FACT,
    decision: 'schema-keywords-refused',
    refused: (status, body) => refusesSchemaFeatures(status, body),
    describe: (status) =>
      `the upstream's guided decoding refused a schema keyword (status ${status}): sent again without them; the arguments are still checked against the whole schema`,
  },
  onRequest(request, ctx) {
    if (!wasRefused(ctx, SCHEMA_KEYWORDS_FACT)) return { action: 'continue', request, effects: [] };
    const out = withGuidableSchemas(request);
    if (out.request === request) return { action: 'continue', request, effects: [] };
    return {
      action: 'continue',
      request: out.request,
      effects: [
        {
          policy: GUIDED_SCHEMA_POLICY,
          kind: 'dropped-schema-keywords',
          count: out.schemas.length,
          detail: { keywords: out.keywords, schemas: out.schemas },
        },
      ],
    };
  },
};
