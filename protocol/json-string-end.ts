/**
 * The end of a JSON string in a request body's bytes, for the one-pass scans that skip strings
 * without decoding them (json-keys.ts counts keys, lossless-json.ts finds numbers): one
 * `indexOf` per quote, so a megabyte of base64 is one call. Pure.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * The index of the quote closing the string whose opening quote is at `open` (a quote after an
 * odd run of backslashes is escaped); `bytes.length` when the string is never closed.
 */
export function stringEnd(bytes: Buffer, open: number): number {
  let at = bytes.indexOf(QUOTE, open + 1);
  while (at !== -1) {
    let slashes = 0;
    for (let k = at - 1; k > open && bytes[k] === BACKSLASH; k--) slashes++;
    if (slashes % 2 === 0) return at;
    at = bytes.indexOf(QUOTE, at + 1);
  }
  return bytes.length;
}
