/**
 * The parser contract. A parser recognises ONE family of tool-call text formats (Hermes,
 * Qwen3-Coder XML, Mistral, ...). Parsers are pure: no I/O, no clock, no globals; all stream
 * state lives in the object createStream returns.
 *
 * The registry (registry.ts) holds one explicit name -> parser table; the recovery engine
 * (recover.ts) runs reasoning splitting, the marker scan over the registry, the safety rules
 * (declared tool names, object arguments) and produces RecoveryResult / recovery stream events.
 */
import type { JsonObject } from '../protocol/openai.js';

/** A declared tool, as the request declared it. */
export interface DeclaredTool {
  name: string;
  /** The JSON schema of its parameters (may be absent). Used for XML-ish formats to type raw values. */
  parameters?: JsonObject;
}

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

/** What parse() returns when the text is in its family. */
export interface ParseResult {
  calls: ParsedCall[];
  /** Text that is not part of any call (before, between, after), markers and control tokens removed. */
  content: string;
  /** Reasoning text the format itself carries (gpt-oss analysis channel), if any. */
  reasoning?: string;
  /** True when the text looked like this family but a call envelope could not be parsed. */
  broken?: boolean;
}

/** Events a stream parser emits. Concatenating content events must give ParseResult.content. */
export type StreamEvent =
  | { type: 'content'; text: string }
  | { type: 'reasoning'; text: string }
  | { type: 'call'; call: ParsedCall }
  | { type: 'call-start'; index: number; name: string; id?: string }
  | { type: 'call-args'; index: number; fragment: string }
  | { type: 'call-end'; index: number; call: ParsedCall };

export interface StreamParser {
  push(delta: string): StreamEvent[];
  /** End of output: flush anything held back (as content when it never became a call). */
  finish(): StreamEvent[];
}

export interface ToolTextParser {
  /** Stable, kebab-case, user-facing (config pins parsers by this name). */
  readonly name: string;
  /** Literal strings whose presence makes this family worth trying (cheap indexOf scan). */
  readonly markers: readonly string[];
  /** Lower runs first when several parsers' markers match. */
  readonly priority: number;
  /** The backend parser that would have handled this format, for the operator's log line. */
  readonly backend: { vllm?: string; llamacpp?: string; sglang?: string };
  /** Parse a complete text; null = not mine. */
  parse(text: string, ctx: ParseContext): ParseResult | null;
  createStream(ctx: ParseContext): StreamParser;
}

export type LeakSource = 'content' | 'reasoning' | 'error';
export type LeakOutcome = 'recovered' | 'unrecovered' | 'rejected';

/** One leak found in a response: reported to metrics and to the request's log line. */
export interface LeakRecord {
  format: string;
  source: LeakSource;
  outcome: LeakOutcome;
  /** e.g. 'vllm --tool-call-parser qwen3_coder' */
  backendHint?: string;
  /** Why a call was rejected or left unrecovered (undeclared tool, non-object arguments, ...). */
  reason?: string;
  repairs?: string[];
}
