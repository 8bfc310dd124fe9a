/** Public types of the recovery engine (see recover.ts and README.md). */
import type { BackendKind, DeclaredTool, LeakRecord, LeakSource } from './types.js';

export interface RecoveryOptions {
  tools: ReadonlyMap<string, DeclaredTool>;
  /** Registry names to try; 'all' (default) tries every family. Unknown names throw. */
  parsers?: readonly string[] | 'all';
  /** Call ids for recovered calls whose format carries none. Called once per recovered call, in order. */
  newId: () => string;
  /**
   * The chat template opened <think> in the prompt (Qwen3, DeepSeek-R1 style): output is
   * reasoning until </think>. Default false: only a leading <think> opens reasoning.
   * 'maybe': the prompt may have opened it; the output is held from its start until a close
   * ends within maxHeldBytes (the text before it is reasoning) or the end / the cap (content).
   */
  startsInReasoning?: boolean | 'maybe';
  /**
   * Cap on text held for a possible call (code units; default 1 MiB): past it the held text is
   * released as content with an 'unrecovered' / 'too-long' leak record.
   */
  maxHeldBytes?: number;
  /**
   * The backend in use, whose fix a leak record's backendHint names ('unknown': every backend's
   * that has one). Left out: vLLM's first (the probe CLI's reading, which says the others itself).
   */
  backend?: BackendKind;
}

export interface RecoveredCall {
  id: string;
  name: string;
  /** Canonical JSON object string (JSON.stringify of the decoded object). */
  arguments: string;
  format: string;
  source: LeakSource;
  repairs: string[];
}

export interface RecoveryResult {
  content: string | null;
  reasoning: string | null;
  calls: RecoveredCall[];
  leaks: LeakRecord[];
}

export type RecoveryEvent =
  | { type: 'content'; text: string }
  | { type: 'reasoning'; text: string }
  | { type: 'call-start'; index: number; id: string; name: string }
  | { type: 'call-args'; index: number; fragment: string }
  | { type: 'call-end'; index: number };

/** How the output ended, as the upstream said (its finish reason). */
export interface OutputEnd {
  /**
   * The token limit cut the output (finish reason `length`): an envelope left open at the end is
   * a call the limit cut off, not one the model finished, so it stays content. Without it an
   * unclosed last envelope is read leniently (a model that stopped without its closer).
   */
  cut?: boolean;
}

export interface RecoveryStream {
  push(d: { content?: string; reasoning?: string }): RecoveryEvent[];
  finish(end?: OutputEnd): RecoveryEvent[];
  leaks(): LeakRecord[];
}
