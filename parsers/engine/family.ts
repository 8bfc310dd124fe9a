/**
 * How a format family plugs into the engine. A family only says how to read ONE envelope
 * starting at a marker (`match`) or, for strict whole-output formats, how to read the whole
 * text (`matchWhole`). The engine (scanner.ts) owns marker search, partial-marker hold-back,
 * streaming, whitespace, safety rules and leak records, so every family gets a correct
 * streaming parser for free.
 *
 * Contract for `match` (this is what makes streaming equal non-streaming for any split):
 * - Prefix-stable: a non-'need-more' answer given on text T must be the same answer on every
 *   extension of T. Return 'need-more' whenever more text could change the answer and
 *   `final` is false. With `final` true, always decide.
 * - null = "not mine" (the marker is then ordinary text, or another family's).
 * - Pure and linear in the envelope length.
 */
import type { BackendNames, ParseContext, ParsedCall } from '../types.js';
import type { NameFrame } from './name-starts.js';

export interface EnvelopeMatch {
  /** Index just after the envelope (its end marker, or text.length when it ran to the end). */
  end: number;
  /** Calls read from the envelope (any number; all-or-nothing under the safety rules). */
  calls: ParsedCall[];
  /** Set when the envelope was recognised but its body could not be read: raw text stays. */
  error?: string;
  /** The envelope was closed by the end of output, not by its end marker. */
  truncated?: boolean;
  /**
   * With `truncated`: the output ends inside the envelope's own end marker (a proper prefix of
   * it, `<|tool_calls_section_end|`, `</tool_ca`), so everything before it was written whole.
   */
  closeCut?: boolean;
  /** Text the envelope contributes as content (e.g. harmony's final channel). */
  content?: string;
  /** Text the envelope contributes as reasoning (e.g. harmony's analysis channel). */
  reasoning?: string;
  /** Pure control tokens (no call): removed even when no call is recovered. */
  control?: boolean;
  /** Overrides the family's backend hint for this envelope (e.g. DeepSeek V3.1 vs V3). */
  backendHint?: string;
}

export type MatchResult = EnvelopeMatch | 'need-more' | null;

export interface MatchInput {
  /**
   * The buffered output from some point before the marker: `text[start - 1]` is the output's
   * own character before the marker (the scanner keeps one across trims), and `start === 0`
   * only at the start of the output. Nothing further back is guaranteed.
   */
  text: string;
  /** Index of the marker. */
  start: number;
  /** Which of the family's markers is at `start`. */
  marker: string;
  /** No more text will come. */
  final: boolean;
  ctx: ParseContext;
  /**
   * text.indexOf(literal, from), memoised by the scanner across calls so that many markers
   * without their end marker do not rescan the rest of the text each time (hostile inputs).
   * Prefer it over indexOf for end-marker searches.
   */
  find(literal: string, from: number): number;
  /**
   * Where the JSON object or array opened at `from` ends (the index after it): -1 when the text
   * ends first, -2 when it nests deeper than MAX_NESTING (never a call). scanJsonValue's end,
   * shared by the scanner across the markers of one text (kit/json-ends.ts), so a thousand
   * markers whose values never close cost one walk, not one each. Prefer it where a family
   * needs only the end of a value that opens with '{' or '['.
   */
  jsonEnd(from: number): number;
}

/**
 * A reasoning section a family's chat template opens, in the output or already in the prompt
 * (think-split.ts reads every enabled family's, plus the built-in `<think>` pair).
 */
export interface ReasoningMarkers {
  /** Opens the section when it leads the output; absent when only the prompt opens it. */
  open?: string;
  /**
   * Ends the section. With startsInReasoning it ends the reasoning the prompt opened; without,
   * a bare one (no open before it) still says the output began in reasoning (bare-think.ts).
   */
  close: string;
  /**
   * With startsInReasoning: one of these first in the output (after whitespace) says the model
   * skipped the reasoning the prompt opened (e.g. Kimi K3 answering with its response section).
   */
  skippedBy?: readonly string[];
}

export interface FamilySpec {
  name: string;
  /** Start markers (literal strings) for envelope families. */
  markers: readonly string[];
  /** Reasoning sections this family's templates open (see ReasoningMarkers). */
  reasoning?: readonly ReasoningMarkers[];
  /** Lower runs first when several families own the marker at a position. */
  priority: number;
  /** The backend parser that would have handled this format, for the operator's log line. */
  backend: BackendNames;
  match?(input: MatchInput): MatchResult;
  /**
   * Strict whole-output formats (bare JSON, pythonic lists): the text must START with one of
   * these (after whitespace) for the engine to hold it to the end and call matchWhole.
   */
  wholeStarts?: readonly string[];
  /**
   * Starts that depend on the request: a declared tool's name between fixed texts
   * (`before + name + after`, for every non-empty declared name). Never spelled out per name: the
   * engine matches them against the request's sorted names (name-starts.ts), so their cost does
   * not grow with tools x name length x choices. Keep them specific: every output starting with
   * one is held to the end (up to maxHeld).
   */
  wholeNameStarts?: readonly NameFrame[];
  /**
   * A whole-output reader of last resort (improvised): offered a held output only after the
   * other whole families and the marker scan found no call in it.
   */
  lastResort?: boolean;
  /**
   * Also hold (for matchWhole) an output that opens with an XML-ish tag that is no family's
   * marker: `<toolcall>`, `<response>`, `<get_weather …>`, any name (the structured reader's).
   */
  wholeStartsTag?: boolean;
  /** Reads the complete content (untrimmed). null = not a call in this family. */
  matchWhole?(text: string, ctx: ParseContext): EnvelopeMatch | null;
}

/** A registered family: what the registry, the scan plan and the leak records read. */
export interface FamilyParser {
  /** Stable, kebab-case, user-facing (config pins parsers by this name). */
  readonly name: string;
  readonly markers: readonly string[];
  readonly priority: number;
  readonly backend: BackendNames;
  readonly spec: FamilySpec;
}
