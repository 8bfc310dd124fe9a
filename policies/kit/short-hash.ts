/**
 * A tiny deterministic string hash for ids policies must derive without randomness
 * (policies are pure: same input, same output). Not cryptographic: only spread and
 * stability matter; collisions are checked by the callers.
 */

import { fnv1a } from '../../protocol/hash.js';

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** `length` base62 characters derived from `text` (two independent FNV-1a lanes per round). */
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
