/**
 * `acc + piece` for text accumulated delta by delta over a whole stream (a call's arguments, an
 * answer's content). V8 represents `a + b` as a rope node pointing at both, so text grown one
 * token at a time is a chain of tens of thousands of small strings and nodes: about 11 bytes of
 * heap per character of text (1.1 MB for a 100 KB answer), kept as long as the stream is open.
 * Reading a character of a rope makes V8 flatten it in place, and this reads one each time the
 * text crosses a step that grows with its length (128 characters, then a sixteenth of the
 * length): about one byte per character, with each character copied a few dozen times in all.
 * The result is the same string either way; only its representation changes.
 */
let _reads = 0;

export function appendText(acc: string, piece: string): string {
  const s = acc + piece;
  const n = acc.length;
  const step = n < 2048 ? 128 : (1 << (31 - Math.clz32(n))) >>> 4;
  // The character goes to a module variable (never read) so that no compiler drops the read.
  if (Math.floor(s.length / step) !== Math.floor(n / step)) _reads ^= s.charCodeAt(s.length >> 1);
  return s;
}
