/**
 * Classify one backend response: a structured tool call, a tool call leaked into content (as
 * toolproof's parser engine recognises it), a prose answer, or an error. Pure: the leak
 * detector comes in as an argument.
 */
import type { DeclaredTool } from '../../parsers/types.js';
import type { LeakDetector } from './detect.js';
import { type ChatOutcome, isRecord, truncate } from './http.js';
import type { BackendInfo, CellCounts, Classification } from './types.js';

/**
 * Prose that claims a tool ran when none did ("I ran it in Python", "calculated with Python").
 * A heuristic for the report only: it never changes a classification.
 */
const EXECUTION_CLAIM =
  /\b(?:i|we)(?:'ve| have)?\s+(?:ran|run|executed|computed|calculated|verified|checked)\b|\b(?:using|with|in|via)\s+(?:python|the run_python tool|code execution)\b/i;

/** Envelope markers of tool-call formats, known to toolproof's parsers or not. */
const CALL_MARKERS =
  /<tool_call|<function[=>\s]|<\|tool|\[TOOL_CALLS\]|<\|python_tag\|>|"(?:arguments|parameters)"\s*:|functions\.\w+:\d|<invoke\b/;

export function classifyResponse(
  outcome: ChatOutcome,
  tools: readonly DeclaredTool[],
  detect: LeakDetector,
): Classification {
  if (!outcome.ok) {
    if (outcome.status !== null && outcome.status >= 500) {
      const leak = detect({ content: null, reasoning: null, errorText: outcome.message }, tools);
      if (leak) return { kind: 'leaked', ...leak };
    }
    return { kind: 'error', status: outcome.status, message: truncate(outcome.message, 200) };
  }
  const message = firstMessage(outcome.body);
  if (!message) {
    return { kind: 'error', status: outcome.status, message: 'the response has no choices[0].message' };
  }
  const names = toolCallNames(message.tool_calls);
  if (names.length > 0) return { kind: 'tool_call', names };

  const content = textOf(message.content);
  const reasoning = textOf(message.reasoning_content) ?? textOf(message.reasoning);
  const leak = detect({ content, reasoning }, tools);
  if (leak) return { kind: 'leaked', ...leak };

  const text = content ?? '';
  return {
    kind: 'prose',
    claimsExecution: EXECUTION_CLAIM.test(text),
    looksLikeCall: CALL_MARKERS.test(text) || CALL_MARKERS.test(reasoning ?? ''),
    excerpt: truncate(text, 160),
  };
}

function firstMessage(body: unknown): Record<string, unknown> | null {
  if (!isRecord(body) || !Array.isArray(body.choices)) return null;
  const choice: unknown = body.choices[0];
  if (!isRecord(choice) || !isRecord(choice.message)) return null;
  return choice.message;
}

function toolCallNames(value: unknown): string[] {
  if (!Array.isArray(value)) return [];
  const names: string[] = [];
  for (const call of value) {
    if (!isRecord(call) || !isRecord(call.function)) continue;
    const name = call.function.name;
    names.push(typeof name === 'string' ? name : '');
  }
  return names;
}

/** content may be a string, null, or (rarely, from some backends) an array of text parts. */
function textOf(value: unknown): string | null {
  if (typeof value === 'string') return value.length > 0 ? value : null;
  if (Array.isArray(value)) {
    const text = value
      .map((part) => (isRecord(part) && typeof part.text === 'string' ? part.text : ''))
      .join('');
    return text.length > 0 ? text : null;
  }
  return null;
}

/** One short phrase for a progress line. */
export function describeClassification(result: Classification): string {
  switch (result.kind) {
    case 'tool_call':
      return `tool call (${result.names.join(', ')})`;
    case 'leaked':
      return `leaked ${result.format}${result.recovered ? ' (recoverable)' : ''}`;
    case 'prose':
      return result.looksLikeCall
        ? 'prose with unrecognised tool-call markers'
        : result.claimsExecution
          ? 'prose (claims execution)'
          : 'prose';
    case 'error':
      return result.status === null
        ? `error: ${result.message}`
        : `error ${result.status}: ${result.message}`;
  }
}

/** vLLM lists its models as owned_by "vllm", llama-server as "llamacpp". */
export function identifyBackend(outcome: ChatOutcome, viaToolproof: boolean): BackendInfo {
  if (!outcome.ok || !isRecord(outcome.body) || !Array.isArray(outcome.body.data))
    return { kind: 'unknown', viaToolproof };
  const first: unknown = outcome.body.data[0];
  const ownedBy = isRecord(first) && typeof first.owned_by === 'string' ? first.owned_by : undefined;
  if (ownedBy === undefined) return { kind: 'unknown', viaToolproof };
  const lower = ownedBy.toLowerCase();
  const kind =
    lower === 'vllm' ? 'vllm' : lower === 'llamacpp' || lower === 'llama.cpp' ? 'llama-server' : 'unknown';
  return { kind, ownedBy, viaToolproof };
}

export function countKinds(results: readonly Classification[]): CellCounts {
  const counts: CellCounts = { tool: 0, leak: 0, prose: 0, error: 0 };
  for (const result of results) {
    if (result.kind === 'tool_call') counts.tool++;
    else if (result.kind === 'leaked') counts.leak++;
    else if (result.kind === 'prose') counts.prose++;
    else counts.error++;
  }
  return counts;
}

/** The tool names a response called, structured or recovered from a leak. */
export function calledNames(result: Classification): string[] {
  return result.kind === 'tool_call' || result.kind === 'leaked' ? result.names : [];
}
