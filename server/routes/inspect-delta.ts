/**
 * Only what changed of one request's answer (docs/inspect.md, "The API": `?after=`). The page
 * reads a request in flight again every second, and its answer repeats the prompt four times
 * (the client's body, the attempt as sent, its curl, the diff's base) and the stream so far
 * twice (read and sent): a long stream behind a large prompt re-sent ~100 KB a second per open
 * tab. Every answer carries a `cursor` naming its long texts (where each is in the answer, its
 * length and a hash of it); an answer asked `after` that cursor sends, of each long text the
 * asker already holds the start of, only the rest, and says in `delta` how many characters of
 * its own copy to keep in front of it (all of them, with nothing after: unchanged). A text that
 * is not the asker's plus more (a hash differs, it got shorter) is sent whole. Stateless: the
 * server keeps nothing per reader; a cursor that no longer fits only costs whole texts.
 */
import { createHash, type Hash } from 'node:crypto';

/** Shorter texts are sent whole, every time: a cursor entry and a hash would cost about as much. */
const MIN_CHARS = 1024;
/** The most texts one cursor names (a record has a few per attempt); the rest go whole. */
const MAX_ENTRIES = 64;
/** A path's keys: field names and array indexes only (a header's name is sent whole). */
const KEY = /^[A-Za-z0-9_]{1,64}$/;
/** One cursor entry: `path:length:hash`. */
const ENTRY = /^([A-Za-z0-9_.]{1,400}):([0-9]{1,9}):([A-Za-z0-9_-]{16})$/;

/** A hash of UTF-16 code units: the same for a text hashed whole or in two pieces cut anywhere. */
const hashOf = (h: Hash): string => h.digest('base64url').slice(0, 16);

interface Held {
  length: number;
  hash: string;
}

/** What an asker holds, by path, from the cursor it sent (malformed entries are left out). */
function heldOf(after: string): Map<string, Held> {
  const held = new Map<string, Held>();
  for (const entry of after.split(',', MAX_ENTRIES)) {
    const m = ENTRY.exec(entry);
    if (m) held.set(m[1]!, { length: Number(m[2]), hash: m[3]! });
  }
  return held;
}

/**
 * `answer` with its long texts named in a cursor and, when `after` is given, each the asker
 * holds the start of replaced by its rest (`delta`: path → characters of the asker's copy to
 * keep). A copy: objects and arrays are made anew down to the texts (the answer's may be the
 * ring's own, read in this process), the texts themselves are not copied.
 */
export function withDelta<T extends object>(
  answer: T,
  after: string | undefined,
): T & { cursor: string; delta?: Record<string, number> } {
  const held = after === undefined ? undefined : heldOf(after);
  const cursor: string[] = [];
  const delta: Record<string, number> = {};
  const text = (v: string, at: string): string => {
    if (v.length < MIN_CHARS || cursor.length >= MAX_ENTRIES) return v;
    const had = held?.get(at);
    // The asker's copy, if it is this text's start: hashed as one piece up to there, then on.
    const h = createHash('sha1');
    let keep = -1;
    if (had !== undefined && had.length <= v.length) {
      h.update(v.slice(0, had.length), 'utf16le');
      if (hashOf(h.copy()) === had.hash) keep = had.length;
      h.update(v.slice(had.length), 'utf16le');
    } else h.update(v, 'utf16le');
    cursor.push(`${at}:${v.length}:${hashOf(h)}`);
    if (keep < 0) return v;
    delta[at] = keep;
    return v.slice(keep);
  };
  // `at`: the value's path; null where no path names it (under a key that is not a plain name).
  const copy = (v: unknown, at: string | null): unknown => {
    if (typeof v === 'string') return at === null || at === '' ? v : text(v, at);
    if (typeof v !== 'object' || v === null) return v;
    // A record's texts read back through their toJSON (LazyText, HeaderText), as a reply would.
    const own = (v as { toJSON?: () => unknown }).toJSON?.() ?? v;
    if (typeof own !== 'object' || own === null) return copy(own, at);
    const named = (k: string) => (at === null || !KEY.test(k) ? null : at === '' ? k : `${at}.${k}`);
    if (Array.isArray(own)) return own.map((x, i) => copy(x, named(String(i))));
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(own)) out[k] = copy(x, named(k));
    return out;
  };
  return Object.assign(copy(answer, '') as T, {
    cursor: cursor.join(','),
    ...(held === undefined ? {} : { delta }),
  });
}
