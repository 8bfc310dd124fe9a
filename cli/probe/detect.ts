/**
 * The one adapter between the probe and toolproof's parser engine (parsers/recover.ts). The
 * probe asks a single question of it: "is there a tool call written into this text, in which
 * format, and could toolproof recover it?". Keeping the import here means an API change in the
 * engine touches one small file.
 */
import type { DeclaredTool } from '../../parsers/types.js';
import {
  detectFormat,
  type RecoveryResult,
  recoverFromErrorText,
  recoverMessage,
} from '../../parsers/recover.js';
import { PARSERS } from '../../parsers/registry.js';
import type { BackendParsers, LeakFinding } from './types.js';

export interface AssistantText {
  content: string | null;
  reasoning: string | null;
  /** An upstream error message that may carry the model output (llama-server's "Failed to parse input at pos N: ..."). */
  errorText?: string;
}

export type LeakDetector = (message: AssistantText, tools: readonly DeclaredTool[]) => LeakFinding | null;

/** The real detector, backed by toolproof's recovery engine. */
export const detectLeak: LeakDetector = (message, tools) => {
  const toolMap = new Map(tools.map((tool) => [tool.name, tool]));
  let next = 0;
  const options = { tools: toolMap, newId: () => `call_probe_${++next}` };
  if (message.errorText !== undefined) {
    // The backend's own parser failed and put the output into its error: a leak by another route.
    const recovered = recoverFromErrorText(message.errorText, options);
    return recovered ? findingOf(recovered) : null;
  }
  const result = recoverMessage({ content: message.content, reasoning: message.reasoning }, options);
  const finding = findingOf(result);
  if (finding) return finding;
  // A format the engine recognises but could not even classify as a leak (e.g. a broken envelope).
  for (const text of [message.content, message.reasoning]) {
    if (!text) continue;
    const detected = detectFormat(text);
    if (detected) {
      return describe(detected.format, detected.backendHint, false, []);
    }
  }
  return null;
};

function findingOf(result: RecoveryResult): LeakFinding | null {
  const leak = result.leaks[0];
  if (!leak) return null;
  const names = result.calls.map((call) => call.name);
  return describe(leak.format, leak.backendHint, names.length > 0, names);
}

function describe(
  format: string,
  backendHint: string | undefined,
  recovered: boolean,
  names: string[],
): LeakFinding {
  const finding: LeakFinding = { format, recovered, names };
  if (backendHint) finding.backendHint = backendHint;
  const backends = backendParsers(format);
  if (backends) finding.backends = backends;
  return finding;
}

/** The backend parser names for a registered format (vLLM's --tool-call-parser, llama-server's chat format). */
export function backendParsers(format: string): BackendParsers | undefined {
  const parser = PARSERS.find((p) => p.name === format);
  if (!parser) return undefined;
  const { vllm, llamacpp, sglang } = parser.backend;
  return { ...(vllm ? { vllm } : {}), ...(llamacpp ? { llamacpp } : {}), ...(sglang ? { sglang } : {}) };
}
