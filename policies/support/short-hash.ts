/**
 * A tiny deterministic string hash for ids policies must derive without randomness
 * (policies are pure: same input, same output). Not cryptographic: only spread and
 * stability matter; collisions are checked by the callers.
 */

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** Two independent 32-bit FNV-1a lanes, so `length` up to ~10 base62 chars stays well spread. */
function fnv1a(text: string, seed: number): number {
  let h = seed >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** `length` base62 characters derived from `text`. */
export function base62Hash(text: string, length: number): string {
  let out = '';
  for (let round = 0; out.length < length; round++) {
    // 62^5 < 2^32: five digits per 32-bit lane, two lanes per round.
    for (const seed of [0x811c9dc5 ^ round, 0x9e3779b9 ^ Math.imul(round + 1, 0x85ebca6b)]) {
      let h = fnv1a(text, seed);
      for (let i = 0; i < 5 && out.length < length; i++) {
        out += ALPHABET[h % 62];
        h = Math.floor(h / 62);
      }
    }
  }
  return out;
}
