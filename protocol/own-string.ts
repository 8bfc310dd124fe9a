/**
 * A copy of a string that shares no storage with the string it was cut from. V8 represents a
 * substring of 13 or more characters as a view into its parent, so a short head kept for the
 * life of a stream (a template cut from the first upstream event) would keep the whole event
 * text, and through it the whole read, alive as long as the stream. A JSON round trip gives a
 * fresh flat string with the same characters (any string survives it exactly); it costs a copy,
 * so use it only for what is kept long, once per stream.
 */
export function ownString(s: string): string {
  return s.length < 13 ? s : (JSON.parse(JSON.stringify(s)) as string);
}
