/**
 * The probe's data model: what one response was classified as, the 2x2 cells, the
 * conformance findings and the report that `--json` prints. Plain data only, so a report can
 * be rendered, serialised and compared in tests without the network.
 */

export type Question = 'memorizable' | 'unmemorizable';
export type ChoiceMode = 'auto' | 'required';

export const QUESTIONS: readonly Question[] = ['memorizable', 'unmemorizable'];
export const CHOICE_MODES: readonly ChoiceMode[] = ['auto', 'required'];

/** The backend parsers that handle a format natively (from the parser registry). */
export interface BackendParsers {
  vllm?: string;
  llamacpp?: string;
  sglang?: string;
}

/** What answered: read from GET /models (vLLM says owned_by "vllm", llama-server "llamacpp"). */
export type BackendKind = 'vllm' | 'llama-server' | 'unknown';

export interface BackendInfo {
  kind: BackendKind;
  ownedBy?: string;
  /** toolproof answered (its x-toolproof-attempts response header): the findings are toolproof's, over that backend. */
  viaToolproof: boolean;
}

/** A leak the parser engine recognised in content or reasoning. */
export interface LeakFinding {
  /** The parser family's registry name, e.g. 'qwen3-coder', 'hermes'. */
  format: string;
  /** The backend parser that would have handled it, e.g. 'vllm --tool-call-parser qwen3_coder'. */
  backendHint?: string;
  /** The backend parser names for this format, when the registry knows them. */
  backends?: BackendParsers;
  /** Whether toolproof's recovery turned it into at least one valid call. */
  recovered: boolean;
  /** Tool names of the recovered calls. */
  names: string[];
}

/** How one response was classified. */
export type Classification =
  | { kind: 'tool_call'; names: string[] }
  | ({ kind: 'leaked' } & LeakFinding)
  | {
      kind: 'prose';
      /** The text claims a tool ran ("I computed it with Python") although none was called. */
      claimsExecution: boolean;
      /** The text carries tool-call markers toolproof's parsers did not recognise. */
      looksLikeCall: boolean;
      excerpt: string;
    }
  | { kind: 'error'; status: number | null; message: string };

export type ClassificationKind = Classification['kind'];

export interface CellCounts {
  tool: number;
  leak: number;
  prose: number;
  error: number;
}

export interface Cell {
  question: Question;
  toolChoice: ChoiceMode;
  counts: CellCounts;
  /** One entry per run, in run order. */
  results: Classification[];
}

export type CheckId =
  | 'required-accepted'
  | 'named-tool-choice'
  | 'parallel-calls'
  | 'history-control'
  | 'unanswered-call'
  | 'malformed-arguments'
  | 'non-nine-char-id'
  | 'user-after-tool';

/**
 * ok: the backend behaves as OpenAI does; problem: it does not and a setting (or advice) covers it;
 * note: it differs in a way nothing needs configuring for;
 * inconclusive: the check could not isolate the behaviour (e.g. the clean control failed too);
 * error: the request failed for a reason unrelated to the behaviour under test.
 */
export type CheckStatus = 'ok' | 'problem' | 'note' | 'inconclusive' | 'error';

/** A toolproof per-model setting a finding calls for, as a dotted path into ModelSettings. */
export interface SettingChange {
  path: string;
  value: boolean | string | number;
}

export interface CheckResult {
  id: CheckId;
  title: string;
  status: CheckStatus;
  /** What was observed, one short sentence. */
  detail: string;
  /** The setting that handles a problem, when one does. */
  setting?: SettingChange;
  /** What toolproof does about it or what to do, when no setting applies. */
  advice?: string;
}

export type VerdictLevel = 'ok' | 'warn' | 'fail';

export interface Verdict {
  level: VerdictLevel;
  text: string;
}

export interface LeakFormatSummary {
  format: string;
  backendHint?: string;
  backends?: BackendParsers;
  count: number;
  recovered: number;
}

export interface ProbeReport {
  version: 1;
  baseUrl: string;
  model: string;
  backend: BackendInfo;
  runs: number;
  durationMs: number;
  cells: Cell[];
  leakFormats: LeakFormatSummary[];
  checks: CheckResult[];
  verdicts: Verdict[];
  /** Settings the findings call for; what `--write-config` writes under the model. */
  settings: SettingChange[];
}
