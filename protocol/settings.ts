/**
 * Per-model settings: the section of the YAML config where parsers and policies are switched.
 * Validated once at start-up by server/config.ts (one precise message per bad key), then frozen.
 * Every default is named here, once.
 */

export type OrphanToolResultMode = 'as-user' | 'as-assistant' | 'drop';
export type ToolCallContentMode = 'keep' | 'null' | 'empty';
/**
 * System messages after the first message: 'merge' folds those before the first assistant turn
 * into the leading system message and sends later ones as user turns in place (what templates
 * that accept a system message only first can render); 'keep' sends them as they are.
 */
export type SystemMessagesMode = 'merge' | 'keep';

export interface HistoryRepairSettings {
  enabled: boolean;
  /** Content of a synthesized tool result for a call the client never answered. */
  missingResultContent: string;
  /** What to do with a tool message whose tool_call_id matches no call: keep its text as a user / assistant note, or drop it (counted). */
  orphanResults: OrphanToolResultMode;
  /** Mistral-family templates: map every tool-call id to 9 alphanumerics (deterministic). */
  nineCharIds: boolean;
  /** Insert an assistant message between a tool message and a following user message. */
  bridgeToolToUser: boolean;
  /** content on assistant messages that carry tool_calls. */
  toolCallContent: ToolCallContentMode;
  /**
   * Merge consecutive user (or assistant without tool calls) messages for alternating-role
   * templates, and put a fixed user message before a first turn that is the assistant's.
   */
  mergeSameRole: boolean;
  /** Where system messages that are not first go (see SystemMessagesMode). */
  systemMessages: SystemMessagesMode;
}

export interface ModelSettings {
  /** Parser families to try for leak recovery, by registry name; 'all' tries every family. */
  parsers: readonly string[] | 'all';
  /** 'auto': recover leaks only when the request declares tools; 'always': also without; 'off'. */
  recovery: 'auto' | 'always' | 'off';
  /**
   * The chat template opens <think> in the prompt (Qwen3 thinking, DeepSeek-R1): output is
   * reasoning until a bare </think>. Off by default: only a leading <think> opens reasoning.
   * 'maybe': it may (a template switch the request sets, a model seen closing reasoning it
   * never opened): each output is held from its start until a close ends within maxHeldBytes
   * (before it: reasoning) or the end / the cap (all content). 'auto': at start-up, from
   * llama-server's /props template (templateOpensReasoning); false when it cannot tell.
   */
  startsInReasoning: boolean | 'maybe' | 'auto';
  /** Forced tool use: add final_answer and send tool_choice "required" when the client said auto/absent. */
  forceToolUse: boolean;
  /** The synthetic tool's name (a non-colliding variant is chosen if the client declares it). */
  finalAnswerTool: string;
  /** How long a learned "this upstream rejects required" is remembered. */
  fallbackTtlSeconds: number;
  historyRepair: HistoryRepairSettings;
  /** Corrective retries after an invalid call (undeclared tool, schema failure, unparsable leak). 0 = off. */
  maxRetries: number;
  /** Validate recovered and structured call arguments against the declared JSON schema. */
  validateArguments: boolean;
  /**
   * Leak recovery holds text that may still become a call (an output starting with `{`, an
   * envelope whose end tag has not come). Past this many characters (UTF-16 code units: bytes
   * for ASCII) the held text is released as content, byte for byte, with a leak record
   * (outcome 'unrecovered', reason 'too-long'). Bounds memory and time to first byte.
   */
  maxHeldBytes: number;
  /**
   * Hosted tools the backend cannot run (Responses web_search, file_search, code_interpreter...;
   * Anthropic's server tools): 'drop' leaves them out of the upstream request and says so (the
   * x-toolproof-dropped-tools header, the log line, toolproof_dropped_tools_total); 'reject'
   * answers 400 naming the tool.
   */
  hostedTools: 'drop' | 'reject';
  /**
   * Ask the chat template to keep past reasoning (chat_template_kwargs `preserve_thinking: true`
   * for Qwen3.6-style templates, `clear_thinking: false` for GLM-4.7 and later; templates that
   * know neither ignore both). Without it such templates drop the reasoning of earlier turns, so
   * the prompt's history changes after every tool turn and the backend prefills it again
   * (docs/prefix.md). A key the client sets itself wins. Off by default; 'auto' asks
   * llama-server's /props at start-up whether the template has either switch (server/template-probe.ts).
   */
  preserveThinking: boolean | 'auto';
  /**
   * Documents (Messages `document`, Responses `input_file`, chat `file` parts) become their text
   * (PDFs extracted by the proxy, plain text as it is) or a one-line note when they cannot be read
   * (policies/documents/). On by default: no backend toolproof fronts takes them as they are.
   */
  documents: boolean;
  /**
   * Whether the model can read images. false: every image becomes a one-line note (policies/images/).
   * 'auto' (default): asked of the backend at start-up (llama-server's /props `modalities.vision`);
   * a backend that does not say (vLLM) counts as able to see, and its images pass unchanged.
   */
  vision: boolean | 'auto';
  /**
   * Whether the model takes audio (chat and Responses `input_audio` parts). false: every audio part
   * becomes a one-line note (policies/audio/). 'auto' (default): asked of the backend at start-up
   * (llama-server's /props `modalities.audio`); where it does not say, audio passes until the
   * backend refuses it, then goes as notes for fallbackTtlSeconds from the last request that used it.
   */
  audio: boolean | 'auto';
  /**
   * Never configured: which of `vision` and `audio` were `auto` and took the backend's word at
   * start-up (server/capability-probe.ts: llama-server's /props). A backend's word is not the
   * operator's: a /props that says `vision: true` while the request is refused (no projector
   * loaded after all, a gateway's /props for another model) is learnt over, as `auto` is
   * (policies/images/, policies/audio/); a configured `true` is not.
   */
  fromBackend?: readonly ('vision' | 'audio')[];
  /**
   * Never configured: which server the backend is, learnt at start-up with the capabilities
   * (server/capability-probe.ts); a leak's backendHint names that server's fix, every server's
   * when unknown (parsers' RecoveryOptions.backend).
   */
  backend?: UpstreamKind;
  /**
   * Cut a tool result longer than this many tokens (3 characters each) to its head and tail, with
   * a marker saying how much was left out (policies/tool-result-cap/). 0 (default): off.
   */
  maxToolResultTokens: number;
  /**
   * The model's context window in tokens, shown in the model lists (docs/api.md). 0 (default):
   * asked of the backend at start-up (vLLM /v1/models `max_model_len`, llama-server /props `n_ctx`).
   */
  contextWindow: number;
}

/** The servers toolproof tells apart (ModelSettings.backend). */
export type UpstreamKind = 'llama-server' | 'vllm' | 'sglang';

/** 1 MiB: far above any real tool call, far below what a runaway stream can reach. */
export const DEFAULT_MAX_HELD_BYTES = 1024 * 1024;

const DEFAULT_MISSING_RESULT_CONTENT =
  '{"error":"not_executed","message":"This tool call was not executed: the client sent no result for it."}';

export const DEFAULT_MODEL_SETTINGS: ModelSettings = Object.freeze({
  parsers: 'all',
  recovery: 'auto',
  startsInReasoning: false,
  forceToolUse: true,
  finalAnswerTool: 'final_answer',
  fallbackTtlSeconds: 3600,
  historyRepair: Object.freeze({
    enabled: true,
    missingResultContent: DEFAULT_MISSING_RESULT_CONTENT,
    orphanResults: 'as-user',
    nineCharIds: false,
    bridgeToolToUser: false,
    toolCallContent: 'keep',
    mergeSameRole: false,
    systemMessages: 'merge',
  }),
  maxRetries: 1,
  validateArguments: true,
  maxHeldBytes: DEFAULT_MAX_HELD_BYTES,
  hostedTools: 'drop',
  preserveThinking: false,
  documents: true,
  vision: 'auto',
  audio: 'auto',
  maxToolResultTokens: 0,
  contextWindow: 0,
}) as ModelSettings;

/**
 * `settings` with what the backend said at start-up (server/capability-probe.ts), frozen; the
 * `vision` and `audio` that changed (were `auto`) are the backend's word: `fromBackend` names them.
 */
export function resolvedFromBackend(
  settings: ModelSettings,
  facts: Pick<ModelSettings, 'vision' | 'audio' | 'contextWindow' | 'backend'>,
): ModelSettings {
  const fromBackend = (['vision', 'audio'] as const).filter((k) => facts[k] !== settings[k]);
  return Object.freeze({
    ...settings,
    ...facts,
    ...(fromBackend.length > 0 ? { fromBackend: Object.freeze(fromBackend) } : {}),
  });
}
