/** Deterministic per-token logprobs, for requests that ask for them. */
import { hashString, splitTokens } from './tokens.js';

export interface LogprobOptions {
  top: number;
  /** llama-server includes the token id; vLLM does not. */
  withIds: boolean;
}

function entry(token: string, rank: number, withIds: boolean) {
  const h = hashString(`${token}#${rank}`);
  const base = {
    token,
    bytes: [...Buffer.from(token, 'utf8')],
    logprob: -(0.05 + rank * 0.7 + (h % 1000) / 10000),
  };
  return withIds ? { id: h % 32000, ...base } : base;
}

export function contentLogprobs(text: string, options: LogprobOptions) {
  return {
    content: splitTokens(text).map((token) => ({
      ...entry(token, 0, options.withIds),
      top_logprobs: Array.from({ length: options.top }, (_, i) =>
        entry(i === 0 ? token : `${token}${i}`, i + 1, options.withIds),
      ),
    })),
  };
}

/**
 * vLLM's `prompt_logprobs` of a non-streamed chat completion (a sampling parameter it takes beside
 * the OpenAI ones): null for the first prompt token, then for each other one a map from token ids
 * (its own, ranked, and the `top` likeliest) to {logprob, rank, decoded_token}. vLLM writes it
 * after `usage` (ChatCompletionResponse's field order, vllm/entrypoints/openai/protocol.py).
 */
export function promptLogprobs(tokens: number, top: number) {
  const out: Array<Record<string, { logprob: number; rank: number; decoded_token: string }> | null> = [null];
  for (let t = 1; t < tokens; t++) {
    const at: Record<string, { logprob: number; rank: number; decoded_token: string }> = {};
    for (let rank = 1; rank <= top + 1; rank++) {
      const id = hashString(`prompt#${t}#${rank}`) % 32000;
      at[String(id)] = { logprob: -(rank * 0.7 + (id % 1000) / 10000), rank, decoded_token: `t${id}` };
    }
    out.push(at);
  }
  return out;
}
