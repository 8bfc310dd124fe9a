/**
 * A copy of a string that shares no storage with the string it was cut from. V8 represents a
 * substring of 13 or more characters as a view into its parent, so a short head kept for the
 * life of a stream (a template cut from the first upstream event) would keep the whole event
 * text, and through it the whole read, alive as long as the stream. Prefixing a character makes
 * a rope; slicing the rope makes V8 copy it into one new string and cut from that, so the result
 * holds one character more than it shows and nothing of the original parent. The characters are
 * the same either way (one copy, once per stream: only for what is kept long).
 */
export function ownString(s: string): string {
  return s.length < 13 ? s : ` ${s}`.slice(1);
}
