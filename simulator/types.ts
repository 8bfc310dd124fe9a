/**
 * Public types of the built-in backend simulator. The simulator is product code (used by
 * `npm start` without an upstream) and a test double; it never imports toolproof's server code.
 */
import type { ChatMessage, ToolDef } from '../protocol/openai.js';
import type { PrefixCacheOptions } from './prefix-cache.js';

export type Personality = 'vllm' | 'llama-server';

export const LEAK_FORMATS = [
  'hermes',
  'qwen3-coder',
  'llama3-json',
  'mistral',
  'bare-json',
  'pythonic',
  'deepseek',
  'glm',
  'kimi-k2',
  'gpt-oss',
] as const;
export type LeakFormat = (typeof LEAK_FORMATS)[number];

export interface ScriptedCall {
  name: string;
  /** An object is serialised compactly; a string is sent verbatim (the model's own whitespace, or broken JSON). */
  arguments?: Record<string, unknown> | string;
}

export interface LeakSpec {
  format: LeakFormat;
  calls: ScriptedCall[];
  before?: string;
  after?: string;
}

export interface ScriptedError {
  status: number;
  message: string;
  type?: string;
  /** Fail after the stream started (status 200, error event), like a parser failure mid-generation. */
  midStream?: boolean;
}

/** Timing and failure behaviours; they apply to whichever output the action produces. */
export interface Behaviour {
  delayMs?: number;
  chunkDelayMs?: number;
  /** Stop sending after N SSE events but keep the socket open. */
  stallAfterChunks?: number;
  /** Destroy the socket after N SSE events. */
  dieAfterChunks?: number;
  /** Cut the output after N characters (content first, then arguments) with finish_reason "length". */
  truncateAt?: number;
  /** Reasoning text: `reasoning_content` by default, or `<think>` text in content with thinkAsText. */
  think?: string;
  thinkAsText?: boolean;
  /**
   * What the model does instead when tool_choice "required" is in force (guided decoding).
   * A model that would have answered in prose, claiming it ran a tool, actually calls it.
   */
  whenRequired?: TurnAction;
}

export type TurnAction = Behaviour &
  (
    | { say: string }
    | { call: ScriptedCall[] }
    | { leak: LeakSpec }
    | { raw: string }
    /** With midStream, `raw` is streamed before the error event. */
    | { error: ScriptedError; raw?: string }
    | { think: string }
  );

export interface TurnContext {
  /** Number of assistant messages in the request. */
  turn: number;
  tools: ToolDef[];
  lastUserText: string;
  /** True when the last message is a tool result. */
  afterToolResult: boolean;
  /** The most recent tool result text, if any. */
  lastToolResult: string;
  /** The request's messages (a script that follows a multi-step task reads its progress here). */
  messages: readonly ChatMessage[];
}

export type ScenarioFn = (ctx: TurnContext) => TurnAction;

/** Inline scenario: one action per turn, the last one repeating. */
export interface ScenarioScript {
  name?: string;
  turns: TurnAction[];
}

export type ScenarioSpec = string | ScenarioScript | TurnAction[] | ScenarioFn;

/** llama-server chat template families whose Jinja rules the simulator reproduces. */
export type LlamaTemplate = 'chatml' | 'qwen3-coder' | 'llama3' | 'mistral';

export interface SimulatorOptions {
  personality: Personality;
  host?: string;
  /** 0 (default) picks a free port. */
  port?: number;
  scenario?: ScenarioSpec;
  /** Reported `model`; llama-server reports it whatever the request asks for. */
  modelName?: string;
  /** Answer tool_choice "required" with the personality's real rejection (400). */
  rejectRequired?: boolean;
  /** Treat "required" like "auto" (the model may answer in prose). */
  ignoreRequired?: boolean;
  /**
   * Reject a call not followed by its result and a tool message whose id matches no call (400).
   * Invalid-JSON history arguments are rejected whatever this says, as both backends do:
   * llama-server 500 "Failed to parse tool call arguments as JSON: …", vLLM 400 (json.loads error).
   */
  strictHistory?: boolean;
  /** Mistral templates: tool-call ids must be 9 alphanumerics (llama-server's real 400). */
  nineCharIds?: boolean;
  /**
   * vLLM with the Mistral tokenizer (mistral_common's request validator): a function name outside
   * `^[a-zA-Z0-9_-]{1,64}$`, in the tools or in an assistant message's calls, is refused with a
   * 400 "Function name was <name> but must be a-z, A-Z, 0-9, or contain underscores and dashes,
   * with a maximum length of 64." (mistral_common/protocol/instruct/validator.py).
   */
  mistralToolNames?: boolean;
  /**
   * vLLM with the Mistral tokenizer on a mistral_common before user turns after tool results were
   * allowed: after a `tool` message only `assistant` or `tool` may follow, else a 400 "Unexpected
   * role '<role>' after role 'tool'" (mistral_common's message-structure check).
   */
  mistralRoleOrder?: boolean;
  /** llama-server only: the chat template family (its Jinja exceptions surface as 400). */
  template?: LlamaTemplate;
  /** `--api-key`: llama-server takes Bearer or X-Api-Key on all but /health and /v1/models; vLLM takes Bearer on /v1/*. */
  apiKey?: string;
  /** llama-server only: `--metrics` (otherwise /metrics is 501). Default true. */
  metrics?: boolean;
  /** vLLM only: 'nested' (current, `{"error":{…}}`) or 'legacy' (`{"object":"error",…}`). */
  errorShape?: 'nested' | 'legacy';
  /** vLLM only: answer 404 "The model `x` does not exist." when the request names another model (vLLM does). Default false. */
  checkModel?: boolean;
  /** vLLM only: the reasoning field, `reasoning_content` (≤0.10, default) or `reasoning` (current vLLM). */
  reasoningField?: 'reasoning_content' | 'reasoning';
  /**
   * Reproduce vLLM's response_format bug (vllm-project/vllm#39929, #16313, open since April 2025):
   * with tools and a json_schema / json_object response_format, the output is the format's JSON
   * and no tool call is returned, whatever the script says. Default false.
   */
  formatSuppressesTools?: boolean;
  /** vLLM only: reported max_model_len. */
  maxModelLen?: number;
  /**
   * Whether the model takes images. llama-server: started with --mmproj (its /props says
   * `modalities.vision`); without it an image part is refused with llama-server's 500 "image
   * input is not supported". vLLM: a text-only model refuses an image part with its 400
   * "<model> is not a multimodal model". Default: llama-server false, vLLM true.
   */
  vision?: boolean;
  /**
   * llama-server only: whether the model takes audio (an --mmproj projector with an audio
   * encoder; its /props says `modalities.audio`). Without it an `input_audio` part is refused with
   * llama-server's 500 "audio input is not supported". Default false.
   */
  audio?: boolean;
  /**
   * Hosts whose image URLs the backend cannot fetch (an expired signed URL answers 403): a request
   * carrying one is refused with the backend's own error (image-fetch.ts). Default none.
   */
  unreachableImageHosts?: string[];
  /**
   * vLLM only: answer such an image as vLLM did before its fetch errors became a 422 (issues
   * #21254, #47163): the exception uncaught, the ASGI stack's bare 500 "Internal Server Error"
   * (text/plain). Default false.
   */
  bareImageFetchError?: boolean;
  /**
   * vLLM only: `--limit-mm-per-prompt '{"image": N}'`: a request with more than N images is refused
   * with vLLM's 400 "At most N image(s) may be provided in one prompt." Absent: no limit.
   */
  imageLimit?: number;
  /**
   * vLLM only: false for a chat template that renders no image of a `tool` message (Gemma 4's
   * before its tool template, vllm-project/vllm#41452): a request with an image in a tool message
   * is refused with vLLM's 500 "Failed to apply prompt replacement for mm_items['image'][N]", N
   * that image's index among the request's images. Default true.
   */
  toolMessageImages?: boolean;
  /** llama-server only: the context size its /props reports (`n_ctx`). Default 4096. */
  nCtx?: number;
  /**
   * Refuse a prompt longer than the window (vLLM `maxModelLen`, llama-server `nCtx`) with the
   * backend's own 400 (context-window.ts), as both real backends do. Off by default: the
   * simulator's token count is an approximation, and most tests are not about the window.
   */
  enforceWindow?: boolean;
  /**
   * vLLM only, with `enforceWindow`: refuse a request whose `max_tokens` (`max_completion_tokens`)
   * and prompt together pass the window, as current vLLM does (vllm/renderers/params.py: "...
   * you requested C output tokens and your prompt contains at least P input tokens ...", param
   * `input_tokens`). Off by default: tests that send a budget are not about it.
   */
  enforceOutputBudget?: boolean;
  /**
   * With `enforceWindow`: what each image part costs, in tokens, instead of its URL's characters
   * (llama-server's mtmd and vLLM encode the picture: Gemma 3 256 tokens, Qwen2.5-VL ~1,200 for a
   * 1280x720 screenshot). Default: the URL counted as text.
   */
  imageTokens?: number;
  /**
   * vLLM only: the structured-output backend named `xgrammar` (xgrammar.ts): a schema it must
   * enforce with features xgrammar cannot compile is refused with vLLM's 400. Default: `auto`
   * (such a schema goes to guidance; nothing is refused).
   */
  guidedBackend?: 'auto' | 'xgrammar';
  /** Embedding vector length. */
  embeddingDims?: number;
  /**
   * The replica's prefix cache (prefix-cache.ts): on by default, as both backends reuse the
   * longest unchanged prompt prefix; `false` prefills every prompt from zero.
   */
  prefixCache?: PrefixCacheOptions | false;
  /**
   * vLLM only: `--enable-prompt-tokens-details` (usage.prompt_tokens_details.cached_tokens;
   * otherwise vLLM sends `prompt_tokens_details: null`). Default false.
   */
  promptTokensDetails?: boolean;
  /**
   * A slot model (slots.ts): N requests decode at once, the rest wait in a FIFO; prefill and
   * per-token times. llama-server reports `count` as `/props` total_slots. Absent: no limit.
   */
  slots?: import('./slots.js').SlotOptions;
}

export interface RecordedRequest {
  index: number;
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  rawBody: string;
  /** Parsed JSON body, or undefined when the body was empty or not JSON. */
  body: unknown;
  receivedAt: number;
  /** Chat requests: prompt tokens (the simulator's approximation) and how many the prefix cache served. */
  promptTokens?: number;
  cachedTokens?: number;
}

export interface RecordedAbort {
  /** Index of the request in `requests`. */
  requestIndex: number;
  path: string;
  /** True when response headers had already been sent (the client left mid-stream). */
  midStream: boolean;
  /** SSE events written before the client left. */
  chunksSent: number;
  at: number;
}

export interface Simulator {
  /** Base URL including `/v1`. */
  url: string;
  /** Origin without `/v1`. */
  origin: string;
  port: number;
  personality: Personality;
  requests: RecordedRequest[];
  aborts: RecordedAbort[];
  /** Clears `requests` and `aborts`. */
  reset(): void;
  /** Replaces the default scenario (requests with `x-sim-scenario` still use theirs). Throws on an unknown name. */
  setScenario(spec: ScenarioSpec): void;
  /** Stops listening and destroys open connections, stalled streams included. */
  close(): Promise<void>;
}
