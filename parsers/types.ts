/**
 * Types shared by the engine, the kit and the formats. A format recognises ONE family of
 * tool-call text (Hermes, Qwen3-Coder XML, Mistral, ...) and is pure: no I/O, no clock, no
 * globals. The registry (registry.ts) holds the name -> family table; the recovery engine
 * (engine/engine.ts, public API in recover.ts) runs reasoning splitting, the marker scan, the
 * safety rules (declared tool names, object arguments) and produces results and stream events.
 */
import type { DeclaredTool } from '../protocol/tools.js';

export type { DeclaredTool } from '../protocol/tools.js';

export interface ParseContext {
  /** Declared tools by name. Empty map: no tools declared. */
  tools: ReadonlyMap<string, DeclaredTool>;
}

/** One call a parser found. */
export interface ParsedCall {
  name: string;
  /** Decoded arguments. Must be a plain object to be accepted by the safety rules. */
  arguments: unknown;
  /** A call id the format carried (Mistral [CALL_ID], Kimi's functions.NAME:0), if any. */
  id?: string;
  /** Repairs applied to get here, e.g. 'trailing-comma', 'python-literals', 'missing-brace'. */
  repairs?: string[];
}

/**
 * The kind of backend a leak's hint is for: its own fix named ('llama-server' a chat format,
 * 'vllm' and 'sglang' a --tool-call-parser); 'unknown' names every backend's.
 */
export type BackendKind = 'llama-server' | 'vllm' | 'sglang' | 'unknown';

/** The backend parsers that would have handled a format, for the operator's log line. */
export interface BackendNames {
  vllm?: string;
  llamacpp?: string;
  sglang?: string;
}

export type LeakSource = 'content' | 'reasoning' | 'error';
export type LeakOutcome = 'recovered' | 'unrecovered' | 'rejected';

/** One leak found in a response: reported to metrics and to the request's log line. */
export interface LeakRecord {
  format: string;
  source: LeakSource;
  outcome: LeakOutcome;
  /**
   * What would make the backend parse it itself, e.g. 'vllm --tool-call-parser qwen3_coder'
   * (RecoveryOptions.backend picks whose; see backendHint in engine/engine.ts).
   */
  backendHint?: string;
  /** Why a call was rejected or left unrecovered (undeclared tool, non-object arguments, ...). */
  reason?: string;
  repairs?: string[];
}
