/**
 * The output reserve `toolproof launch` gives an agent (its max_tokens, and for the agents that
 * compact by it, what they keep free of the window). On a large window, a quarter of it (at most
 * 32k) or the limit toolproof states. On a small one that share and the agent's own prompt (its
 * system prompt and tool definitions, sent before any file) can fill the window together: Kilo
 * 7.7.7's ~12.6k tokens and a 4,096 reserve are the whole of 16k, so it compacted before every turn
 * that carried a file and never read one. So the reserve is at most half of what the agent's
 * prompt leaves, never under what a tool call needs, and a window the prompt leaves too little of
 * is said to be too small.
 */
import { defaultMaxOutput } from './models.js';

/** What one tool call (a small file written, a command with its arguments) needs to be written. */
export const MIN_RESERVE = 1024;

export interface Reserve {
  /** The output limit the agent asks for and keeps free. */
  tokens: number;
  /** Why, as words for the launcher's line (after "output N"). */
  why: string;
  /** Set when the window leaves the agent no room to work: the launcher's warning. */
  tooSmall?: string;
}

const k = (n: number) => `${(n / 1000).toFixed(1).replace(/\.0$/, '')}k`;

/**
 * The reserve for an agent whose own first request is `prompt` tokens (undefined: not measured)
 * on a model with `window` tokens, toolproof stating `stated` as its output limit.
 */
export function chooseReserve(
  agent: { name: string; promptTokens?: number },
  window: number | undefined,
  stated: number | undefined,
): Reserve {
  const base = stated ?? defaultMaxOutput(window);
  const from =
    stated !== undefined
      ? "toolproof's stated output limit"
      : window
        ? 'a quarter of the window, 1k to 32k'
        : 'no window known';
  if (!window) return { tokens: base, why: from };
  const prompt = agent.promptTokens;
  if (prompt === undefined)
    return { tokens: base, why: `${from}; ${agent.name}'s own prompt size is not measured` };
  const room = window - prompt;
  if (room < 2 * MIN_RESERVE) {
    const tokens = Math.max(1, Math.min(base, MIN_RESERVE, room > 0 ? room : MIN_RESERVE));
    return {
      tokens,
      why: 'the window is too small for it: below',
      tooSmall:
        `${agent.name}'s own prompt (~${k(prompt)} tokens) ${room > 0 ? `leaves ${room} tokens of` : 'is over'} this ${window}-token window: ` +
        `too small for it to call a tool or read a file; give it a model with a window of at least ${prompt + 4 * MIN_RESERVE}`,
    };
  }
  const half = Math.floor(room / 2);
  if (base <= half) return { tokens: base, why: from };
  return {
    tokens: half,
    why: `half of what ${agent.name}'s own prompt (~${k(prompt)} tokens) leaves of the window, so a file fits before it compacts (${from}: ${base})`,
  };
}
