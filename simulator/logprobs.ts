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
