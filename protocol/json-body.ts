/**
 * JSON.parse of a request body, without one big string for a big body.
 *
 * `JSON.parse(body.toString())` on a 200 KB chat history costs more in the kernel than in the
 * parser: V8 puts every string of more than 128 KB in its own freshly mapped pages (large object
 * space), so each such request pays for mapping, faulting in and unmapping ~50 pages (about as
 * much CPU as the parse itself, measured on a 200 KB history). A big body is the long message
 * array of a conversation, so it is cut between two messages into pieces that each stay a
 * regular heap string, and the pieces are parsed one by one and put back together.
 *
 * The result is exactly `JSON.parse(body.toString('utf8'))`: the same value, or, for a body that
 * is not valid JSON, the same exception (any doubt falls back to the plain parse, which then
 * throws its own message). Why the pieces give the same value:
 * - cuts are only made at the comma of `},{"role"` (or `}, {"role"`), whose bytes around the cut
 *   are ASCII, so decoding piece by piece gives the same characters as decoding the whole body;
 * - the body with everything between the first and the last cut replaced by one sentinel string
 *   must parse, with the sentinel a direct element of a top-level array: so the first cut is an
 *   element separator of that array, and the last cut is one too (the text after it is the same);
 * - every piece in between must parse as `[piece]`: a non-empty list of whole values, so
 *   replacing the sentinel by the pieces, commas between, is still valid JSON whose array holds
 *   those values in place of the sentinel;
 * - the sentinel holds U+0000, which JSON can only spell `\u0000`: a body without those six
 *   bytes cannot contain the sentinel itself, so the one found is ours.
 */

/** Bodies below this are decoded and parsed whole: their string stays under V8's 128 KB. */
const SPLIT_FROM = 64 * 1024;
/**
 * Bytes per piece: at most ~64 K characters, under 128 KB even as a two-byte string (one
 * non-Latin-1 character makes V8 store the whole string with two bytes per character).
 */
const PIECE_BYTES = 48 * 1024;
const SEPARATORS = [Buffer.from('},{"role"'), Buffer.from('}, {"role"')];
const NUL_ESCAPE = Buffer.from('\\u0000');
const SENTINEL = '\u0000toolproof-split\u0000';
const SENTINEL_JSON = ',"\\u0000toolproof-split\\u0000"';

/** `JSON.parse(body.toString('utf8'))`, in pieces when the body is big (see above). */
export function parseJsonBody(body: Buffer): unknown {
  if (body.length >= SPLIT_FROM) {
    const value = parseInPieces(body);
    if (value !== undefined) return value;
  }
  return JSON.parse(body.toString('utf8'));
}

/** The parsed body, or undefined when it cannot be cut (the caller parses it whole). */
export function parseInPieces(body: Buffer): unknown {
  let sep: Buffer | undefined;
  let first = -1;
  for (const s of SEPARATORS) {
    first = body.indexOf(s);
    if (first >= 0) {
      sep = s;
      break;
    }
  }
  if (sep === undefined || body.includes(NUL_ESCAPE)) return undefined;
  // The commas of the first and the last separator: all between goes in pieces.
  first += 1;
  const last = body.lastIndexOf(sep) + 1;
  if (last - first < PIECE_BYTES) return undefined;
  try {
    const root: unknown = JSON.parse(
      `${body.toString('utf8', 0, first)}${SENTINEL_JSON}${body.toString('utf8', last)}`,
    );
    const holder = sentinelHolder(root);
    if (holder === undefined) return undefined;
    const middle: unknown[][] = [];
    for (let from = first; from < last; ) {
      const to = nextCut(body, sep, from, last);
      middle.push(parseBetween(body, from, to));
      from = to;
    }
    const { object, key, array, index } = holder;
    object[key] = array.slice(0, index).concat(...middle, array.slice(index + 1));
    return object;
  } catch {
    return undefined;
  }
}

/**
 * JSON.parse of `[` + the bytes strictly between the commas at `from` and `to` + `]`. The two
 * commas are turned into the brackets for the decode and put back at once (synchronously,
 * whatever happens), so the decoded string is the piece itself: gluing brackets on with `+`
 * would make V8 copy every piece a second time to flatten it.
 */
function parseBetween(body: Buffer, from: number, to: number): unknown[] {
  body[from] = 0x5b; // [
  body[to] = 0x5d; // ]
  let text: string;
  try {
    text = body.toString('utf8', from, to + 1);
  } finally {
    body[from] = 0x2c; // ,
    body[to] = 0x2c;
  }
  return JSON.parse(text) as unknown[];
}

/** The comma ending the piece that starts after `from`: the last separator within PIECE_BYTES. */
function nextCut(body: Buffer, sep: Buffer, from: number, last: number): number {
  if (last - from <= PIECE_BYTES) return last;
  let at = body.lastIndexOf(sep, from + PIECE_BYTES);
  // One message longer than a piece: it gets a piece of its own (a big string, still correct).
  if (at + 1 <= from) at = body.indexOf(sep, from + 1);
  return Math.min(at + 1, last);
}

interface Holder {
  object: Record<string, unknown>;
  key: string;
  array: unknown[];
  index: number;
}

/** The top-level array that holds the sentinel as a direct element. */
function sentinelHolder(root: unknown): Holder | undefined {
  if (root === null || typeof root !== 'object' || Array.isArray(root)) return undefined;
  const object = root as Record<string, unknown>;
  for (const key of Object.keys(object)) {
    const array = object[key];
    if (key === '__proto__' || !Array.isArray(array)) continue;
    const index = array.indexOf(SENTINEL);
    if (index >= 0) return { object, key, array, index };
  }
  return undefined;
}
