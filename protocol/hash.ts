/**
 * FNV-1a (32-bit): a tiny deterministic string hash for ids and choices that must be derived
 * without randomness (policies are pure; the simulator is scripted). Not cryptographic.
 */
export function fnv1a(text: string, seed = 0x811c9dc5): number {
  let h = seed >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}
