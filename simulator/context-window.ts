/**
 * The backend's own refusal of a prompt longer than its window (option `enforceWindow`): vLLM's
 * 400 from serving `_validate_input` ("This model's maximum context length is N tokens. However,
 * your request has P input tokens. ..."), llama-server's 400 exceed_context_size_error ("request
 * (P tokens) exceeds the available context size (N tokens), try increasing it", with
 * `n_prompt_tokens` and `n_ctx` beside the message: server-context.cpp send_error,
 * server_task_result_error::to_json); the wordings of
 * tests/fixtures/agents/context-overflow-bodies.json. Prompt tokens are the prefix cache's
 * approximation (prefix-cache.ts: the rendered prompt), 4 ASCII characters a token and every other
 * UTF-16 unit one: a CJK character is about a token in the tokenizers of the models served
 * (Qwen, GLM, DeepSeek), 3 bytes of UTF-8, so such a prompt is over the window at a third of the
 * bytes of an English one.
 */
import type { SimError } from './personality.js';
import { renderPrompt } from './prefix-cache.js';
import type { SimulatorOptions } from './types.js';

const CHARS_PER_TOKEN = 4;

/** The window the backend reports: vLLM's max_model_len, llama-server's n_ctx. */
export function windowOf(options: SimulatorOptions): number {
  return options.personality === 'vllm' ? (options.maxModelLen ?? 32768) : (options.nCtx ?? 4096);
}

/** The backend's refusal of `body`'s prompt when it does not fit, else null (or when not enforced). */
export function windowError(body: Record<string, unknown>, options: SimulatorOptions): SimError | null {
  if (options.enforceWindow !== true) return null;
  const window = windowOf(options);
  const prompt = promptTokens(body, options);
  const budget = body.max_completion_tokens ?? body.max_tokens;
  if (
    options.personality === 'vllm' &&
    options.enforceOutputBudget === true &&
    typeof budget === 'number' &&
    budget > 0 &&
    prompt + budget > window
  ) {
    // vllm/renderers/params.py: the prompt tokenized no further than one token past what the
    // budget leaves, so the count is a bound ("at least").
    const counted = Math.min(prompt, Math.max(window - budget + 1, 0));
    return {
      status: 400,
      type: 'BadRequestError',
      param: 'input_tokens',
      message: `This model's maximum context length is ${window} tokens. However, you requested ${budget} output tokens and your prompt contains at least ${counted} input tokens, for a total of at least ${counted + budget} tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=${counted})`,
    };
  }
  // llama-server refuses a prompt that fills the window (a slot needs one cell to decode into).
  if (options.personality === 'vllm' ? prompt <= window : prompt < window) return null;
  if (options.personality === 'vllm')
    return {
      status: 400,
      type: 'BadRequestError',
      message: `This model's maximum context length is ${window} tokens. However, your request has ${prompt} input tokens. Please reduce the length of the input messages.`,
    };
  return {
    status: 400,
    type: 'exceed_context_size_error',
    message: `request (${prompt} tokens) exceeds the available context size (${window} tokens), try increasing it`,
    counts: { n_prompt_tokens: prompt, n_ctx: window },
  };
}

/**
 * The prompt's tokens as the window check counts them: the rendered prompt at CHARS_PER_TOKEN,
 * and with `imageTokens` set, each image part that many tokens instead of its URL's characters
 * (a multimodal backend encodes the picture, whatever the length of its base64).
 */
function promptTokens(body: Record<string, unknown>, options: SimulatorOptions): number {
  const per = options.imageTokens;
  if (per === undefined || !Array.isArray(body.messages))
    return tokensOf(renderPrompt(body.tools, body.messages));
  let images = 0;
  const messages = (body.messages as unknown[]).map((m) => {
    if (typeof m !== 'object' || m === null || !Array.isArray((m as { content?: unknown }).content)) return m;
    const content = ((m as { content: unknown[] }).content as unknown[]).map((p) => {
      if (typeof p !== 'object' || p === null || (p as { type?: unknown }).type !== 'image_url') return p;
      images++;
      return { type: 'image_url' };
    });
    return { ...(m as object), content };
  });
  return tokensOf(renderPrompt(body.tools, messages)) + images * per;
}

function tokensOf(text: string): number {
  let other = 0;
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) >= 128) other++;
  return Math.ceil((text.length - other) / CHARS_PER_TOKEN) + other;
}
