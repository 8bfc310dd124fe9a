/**
 * A per-replica prefix cache, the way vLLM's automatic prefix caching and llama-server's slot
 * reuse see a prompt: only the longest unchanged prefix is reused. The prompt is approximated by
 * what a chat template renders (tools first, then every message in order), a token by 4
 * characters (countTokens), and the cache by fixed-size blocks chained by hash (vLLM hashes
 * each block with its parent's hash, so a block is reused only when everything before it is
 * the same too). Eviction is LRU over blocks, bounded by a token capacity. Pure apart from its
 * own state: one instance per simulator (= per replica).
 */
import { fnv1a } from '../protocol/hash.js';

export interface PrefixCacheOptions {
  /** Tokens per cache block (vLLM's default block size is 16). */
  blockTokens?: number;
  /** Tokens the cache holds before the least recently used blocks go. */
  capacityTokens?: number;
}

/** Characters per token, the same approximation as countTokens. */
const CHARS_PER_TOKEN = 4;

export class PrefixCache {
  private readonly blockChars: number;
  private readonly capacityBlocks: number;
  /** Chained block hash -> true; Map order is recency (oldest first). */
  private readonly blocks = new Map<string, true>();

  constructor(options: PrefixCacheOptions = {}) {
    const blockTokens = Math.max(1, Math.floor(options.blockTokens ?? 16));
    this.blockChars = blockTokens * CHARS_PER_TOKEN;
    this.capacityBlocks = Math.max(1, Math.floor((options.capacityTokens ?? 2_000_000) / blockTokens));
  }

  /**
   * Looks `prompt` up and stores it: returns the characters of its longest cached prefix (whole
   * blocks only) and marks every block of it as recently used.
   */
  admit(prompt: string): number {
    let parent = '';
    let hitChars = 0;
    let missed = false;
    const full = Math.floor(prompt.length / this.blockChars);
    for (let i = 0; i < full; i++) {
      const block = prompt.slice(i * this.blockChars, (i + 1) * this.blockChars);
      // Two 32-bit hashes (block alone, block with its parent) make accidental collisions negligible.
      const key = `${fnv1a(parent + block).toString(36)}.${fnv1a(block).toString(36)}.${i}`;
      if (!missed && this.blocks.has(key)) {
        hitChars += this.blockChars;
        this.blocks.delete(key); // re-inserted below: most recent
      } else {
        missed = true;
      }
      this.blocks.set(key, true);
      parent = key;
    }
    while (this.blocks.size > this.capacityBlocks) {
      const oldest = this.blocks.keys().next().value;
      if (oldest === undefined) break;
      this.blocks.delete(oldest);
    }
    return hitChars;
  }

  clear(): void {
    this.blocks.clear();
  }
}

/**
 * What a chat template would render, as text: the tools (in the system prompt, first) and then
 * each message. Byte-level, like the token ids a template yields: any change to an earlier
 * message or to the tools changes everything after it.
 */
export function renderPrompt(tools: unknown, messages: unknown): string {
  let out = Array.isArray(tools) && tools.length > 0 ? `${JSON.stringify(tools)}\n` : '';
  if (Array.isArray(messages)) for (const m of messages) out += `${JSON.stringify(m)}\n`;
  return out;
}

/** Prompt tokens of a rendered prompt, and how many of them the cache served. */
export function cachedTokens(
  cache: PrefixCache | undefined,
  prompt: string,
): { prompt: number; cached: number } {
  const promptTokens = Math.max(1, Math.ceil(prompt.length / CHARS_PER_TOKEN));
  if (!cache) return { prompt: promptTokens, cached: 0 };
  const hit = Math.floor(cache.admit(prompt) / CHARS_PER_TOKEN);
  // Both backends evaluate at least the last prompt token again (it yields the first logits).
  return { prompt: promptTokens, cached: Math.min(hit, promptTokens - 1) };
}
