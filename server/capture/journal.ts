/**
 * The capture's journal: what a request's hooks tell the ring (recorder.ts), appended as ops to
 * flat arrays and applied later, in order, many requests' at once (issue 28). Inline, each hook
 * ran cold: with 32 streams in flight the recorder's code and the arena's write head were
 * evicted from the CPU's caches between two calls, and the same calls cost 3-7x what they cost
 * in a warm loop. Applied in a batch, the code and the arena's head stay warm from one op to the
 * next.
 *
 * An op is an opcode and its arguments in two flat arrays (references, numbers): no object per
 * op. Bounded whatever the load: applied at the end of the event loop's turn (setImmediate),
 * and at once when the journal holds OPS_MAX ops or BYTES_MAX bytes of the texts it references
 * (held alive until applied). The ring's readers apply it first (CaptureRing.settleIds, its
 * size and bytes), and so does a refused request's end (its frames are in the journal): no reader
 * sees an op still held, and the ops are applied in the order the hooks ran. A record's open
 * (beginCapture) runs at once, ahead of the ops held: a record's texts and cuts are its own
 * (its room is its own share), so they are those of inline hooks; only an eviction, the oldest
 * record's, can come a few ops sooner or later. Applied before each open as well (exact order),
 * the journal measured no gain over inline hooks (glass11, bench/HISTORY.md); applied at the end
 * of the loop's turn, capture's calls cost less (an agent turn's most).
 */

/** The ops held before they are applied at once (a flush of this many costs ~0.1-0.3 ms). */
export const OPS_MAX = 512;
/** Bytes of referenced texts (bodies, reads, frames) held before they are applied at once. */
export const BYTES_MAX = 1024 * 1024;
/** Arguments an op takes at most, of each kind. */
const REFS_PER_OP = 6;
const NUMS_PER_OP = 4;

export const journal = {
  op: new Uint8Array(OPS_MAX),
  refs: new Array<unknown>(OPS_MAX * REFS_PER_OP).fill(undefined),
  nums: new Float64Array(OPS_MAX * NUMS_PER_OP),
  ops: 0,
  nRefs: 0,
  nNums: 0,
  bytes: 0,
  scheduled: false,
};

/** Applies the ops held, in order (recorder.ts registers it): each op reads its arguments from the cursors. */
let applier: ((count: number) => void) | undefined;

export function setApplier(f: (count: number) => void): void {
  applier = f;
}

/** A new op; its arguments follow (pushRef, pushNum). Applies the journal first when it is full. */
export function beginOp(code: number, bytes: number): void {
  const j = journal;
  if (j.ops >= OPS_MAX || j.bytes + bytes > BYTES_MAX) flushJournal();
  j.op[j.ops++] = code;
  j.bytes += bytes;
  if (!j.scheduled) {
    j.scheduled = true;
    setImmediate(flushScheduled);
  }
}

function flushScheduled(): void {
  journal.scheduled = false;
  flushJournal();
}

/** Applies every op held, in order; nothing held: returns at once. */
export function flushJournal(): void {
  const j = journal;
  const n = j.ops;
  if (n === 0) return;
  const refs = j.nRefs;
  // Reset first: an op applied may open no new one, but a reader inside one (the session's
  // later records) must find the journal empty rather than apply it twice.
  j.ops = 0;
  j.nRefs = 0;
  j.nNums = 0;
  j.bytes = 0;
  try {
    applier?.(n);
  } finally {
    // Nothing held alive past its op: the bodies, reads and frames are the stream's garbage.
    j.refs.fill(undefined, 0, refs);
  }
}
