/**
 * Capture as an append-only log (issue 28's structure, a first cut): every touch point of a
 * request appends one compact entry (the record's slot, a kind, a few numbers, the bytes) to one
 * buffer written round and round, and the records are assembled when read. The write head is
 * the one place every request writes (hot whichever stream ran last), where the ring's records
 * were objects of their own, each cold at every touch point (31 other streams ran between); the
 * per-request state the request path needs (the slot, its counts) is on the request's own
 * handle (LogWriter), a young object that dies with the request.
 *
 * The bound is the buffer's size by construction: eviction is the head coming round. Entries are
 * written in order, so a record whose first entry (OPEN) is intact has every later entry intact;
 * one whose OPEN was written over is gone, its later entries (a long stream still writing)
 * skipped by the reader and no longer written by its writer. A text never reads as another
 * record's bytes: an assembled text checks that its bytes are still there when read.
 *
 * Layout: entries start on 4-byte boundaries; an entry is 4 int32 words (its length in bytes,
 * its kind, its slot, the length of its bytes), then its kind's words, then its bytes. A lap's
 * entries end at `prevEnd` (the tail they did not fit is skipped). Per 4 KB block, the offset of
 * the first entry that started in it and the lap it was written in: where a reader starts.
 */

/** Buffer's own UTF-8 writer (see ring.ts). */
const utf8Write =
  (Buffer.prototype as unknown as { utf8Write?: (s: string, o: number, l: number) => number }).utf8Write ??
  function (this: Buffer, s: string, o: number, l: number): number {
    return this.write(s, o, l, 'utf8');
  };

/** Entry kinds. */
export const K = {
  OPEN: 1,
  HEADERS: 2,
  BODY: 3,
  ATTEMPT: 4,
  OPENED: 5,
  READ: 6,
  ATTEMPT_END: 7,
  ATTEMPT_BODY: 8,
  EFFECT: 9,
  DECISION: 10,
  CLIENT: 11,
  FINISH: 12,
  ERROR: 13,
} as const;

const HEAD_WORDS = 4;
const HEAD_BYTES = HEAD_WORDS * 4;
const BLOCK_SHIFT = 12;
/** How far ahead of the head the buffer is touched, a byte a page (ring.ts Arena.warm). */
const WARM_AHEAD = 32 * 1024;
const PAGE_BYTES = 4096;
/** Shared objects (an effect's frozen copy, a harness summary's) the log refers to by index, at most. */
const OBJECTS_MAX = 4096;

export class CaptureLog {
  readonly buf: Buffer;
  readonly i32: Int32Array;
  readonly size: number;
  /** The next entry's offset, and how many times the head came round. */
  at = 0;
  lap = 0;
  /** Where the previous lap's entries end. */
  prevEnd = 0;
  private warmTo = 0;
  sink = 0;
  private readonly blockFirst: Int32Array;
  private readonly blockLap: Int32Array;
  /** Slots given (a record's number). */
  slots = 0;
  /** The entry being written (begin .. commit): its offset. */
  cur = 0;
  private curWords = 0;
  /** Shared objects by index (effects' and harness summaries' frozen copies: recorder.ts). */
  readonly objects: object[] = [];
  private readonly objectIndex = new Map<object, number>();

  constructor(bytes: number) {
    this.size = Math.max(64 * 1024, bytes & ~(PAGE_BYTES - 1));
    this.buf = Buffer.allocUnsafeSlow(this.size);
    this.i32 = new Int32Array(this.buf.buffer, this.buf.byteOffset, this.size >> 2);
    const blocks = this.size >> BLOCK_SHIFT;
    this.blockFirst = new Int32Array(blocks);
    this.blockLap = new Int32Array(blocks).fill(-1);
  }

  /**
   * Starts an entry of `kind` for `slot` with `words` numbers and up to `maxBytes` bytes;
   * returns the index of its first number in i32 (the bytes go at bytesAt()). -1: it can never
   * fit (a quarter of the log at most).
   */
  begin(kind: number, slot: number, words: number, maxBytes: number): number {
    const need = HEAD_BYTES + words * 4 + maxBytes + 3;
    if (need > this.size >> 2) return -1;
    let at = this.at;
    if (at + need > this.size) {
      this.prevEnd = at;
      this.lap++;
      at = this.at = 0;
      this.warmTo = 0;
    }
    if (at + need > this.warmTo) this.warm(at + need);
    const b = at >>> BLOCK_SHIFT;
    if (this.blockLap[b] !== this.lap) {
      this.blockLap[b] = this.lap;
      this.blockFirst[b] = at;
    }
    const w = at >> 2;
    const i32 = this.i32;
    i32[w + 1] = kind;
    i32[w + 2] = slot;
    this.cur = at;
    this.curWords = words;
    return w + HEAD_WORDS;
  }

  /** Where the entry's bytes go. */
  bytesAt(): number {
    return this.cur + HEAD_BYTES + this.curWords * 4;
  }

  /** The entry begun holds `n` bytes: written. */
  commit(n: number): void {
    const at = this.cur;
    const len = (HEAD_BYTES + this.curWords * 4 + n + 3) & ~3;
    const w = at >> 2;
    this.i32[w] = len;
    this.i32[w + 3] = n;
    this.at = at + len;
  }

  /** Writes `s` at `off` (room for 3 bytes a character reserved); returns the bytes written. */
  str(s: string, off: number): number {
    return s.length === 0 ? 0 : utf8Write.call(this.buf, s, off, s.length * 3);
  }

  /** The index of a shared object (a frozen copy), -1: none left (the caller keeps it inline). */
  objectOf(o: object): number {
    const hit = this.objectIndex.get(o);
    if (hit !== undefined) return hit;
    if (this.objects.length >= OBJECTS_MAX) return -1;
    this.objects.push(o);
    this.objectIndex.set(o, this.objects.length - 1);
    return this.objects.length - 1;
  }

  /** Whether what was written at `off` in lap `lap` is still there. */
  intact(lap: number, off: number): boolean {
    if (lap === this.lap) return off < this.at;
    // The previous lap's entries from the head on, but for the head's block (scan starts after it).
    return lap === this.lap - 1 && off >= this.at && off >>> BLOCK_SHIFT !== this.at >>> BLOCK_SHIFT;
  }

  private warm(upTo: number): void {
    const buf = this.buf;
    const from = Math.max(this.warmTo, this.at);
    const to = Math.min(this.size, Math.max(upTo, from) + WARM_AHEAD);
    let s = 0;
    for (let i = from; i < to; i += PAGE_BYTES) s += buf[i]!;
    this.sink = s;
    this.warmTo = to;
  }

  /**
   * Every intact entry, oldest first: `visit(off, kind, slot, words, bytesOff, bytesLen, lap)`
   * (off: the entry's byte offset; words: the index of its first number in i32). Entries in the
   * head's block from the previous lap are skipped (the block's first entry is the new lap's):
   * their records read as gone, under 4 KB early. Bounded by the log's size.
   */
  scan(
    visit: (
      off: number,
      kind: number,
      slot: number,
      words: number,
      bytesOff: number,
      bytesLen: number,
      lap: number,
    ) => void,
  ): void {
    const i32 = this.i32;
    const walk = (from: number, to: number, lap: number) => {
      let off = from;
      while (off < to) {
        const w = off >> 2;
        const len = i32[w]!;
        if (len <= 0) break;
        const n = i32[w + 3]!;
        visit(off, i32[w + 1]!, i32[w + 2]!, w + HEAD_WORDS, off + len - ((n + 3) & ~3) - 0, n, lap);
        off += len;
      }
    };
    if (this.lap > 0) {
      const blocks = this.blockLap.length;
      const headBlock = this.at >>> BLOCK_SHIFT;
      for (let b = headBlock + 1; b < blocks; b++) {
        if (this.blockLap[b] !== this.lap - 1) continue;
        const first = this.blockFirst[b]!;
        if (first < this.prevEnd) walk(first, this.prevEnd, this.lap - 1);
        break;
      }
    }
    walk(0, this.at, this.lap);
  }
}

/**
 * One request's handle on the log: what its touch points need between them (its slot, where
 * its OPEN and its body are, its texts' counts). The request's own object, young.
 */
export class LogWriter {
  get isLog(): true {
    return true;
  }

  readonly log: CaptureLog;
  readonly slot: number;
  /** When the request arrived (performance clock). */
  start: number;
  /** Where its OPEN entry is (set once written: logOpen). */
  openLap: number;
  openOff: number;
  /** Raw bytes the record wrote, against its share (a quarter of the log). */
  bytes = 0;
  readonly textMax: number;
  eventChars = 0;
  eventCut = 0;
  events = 0;
  clientChars = 0;
  clientCut = 0;
  bodyLap = 0;
  bodyOff = 0;
  bodyLen = -1;
  bodyCut = 0;
  /** The running attempt's epoch ms sent (for its total), -1: none. */
  attemptAt = -1;
  attemptErr = false;
  attempts = 0;
  inFlight = true;

  constructor(log: CaptureLog, textMax: number, start: number) {
    this.log = log;
    this.slot = log.slots++;
    this.start = start;
    this.openLap = log.lap;
    this.openOff = log.at;
    this.textMax = textMax;
  }

  /** Whether its OPEN is still in the log (else nothing more is written). */
  live(): boolean {
    return this.openLap === this.log.lap || this.log.intact(this.openLap, this.openOff);
  }

  /** Bytes of its share left. */
  room(): number {
    return Math.max(0, (this.log.size >> 2) - 256 - this.bytes);
  }

  /** An entry of `kind` with no bytes; returns the index of its words. */
  entry(kind: number, words: number): number {
    return this.log.begin(kind, this.slot, words, 0);
  }

  /** One entry with `bytes` (cut at `keep`), its numbers set by the caller before commit. */
  bytesEntry(kind: number, words: number, b: Buffer, keep: number): number {
    const log = this.log;
    const w = log.begin(kind, this.slot, words, keep);
    if (w < 0) return -1;
    if (keep > 0) log.buf.set(keep < b.length ? b.subarray(0, keep) : b, log.bytesAt());
    this.bytes += keep;
    return w;
  }

  /** A frame the client received (bytes or a string), as written. */
  client(piece: string | Buffer): void {
    if (!this.live()) return;
    // A string is reserved at 3 bytes a character.
    const room = typeof piece === 'string' ? Math.floor(this.room() / 3) : this.room();
    const keep = Math.min(piece.length, this.textMax - this.clientChars, room);
    if (keep <= 0) {
      this.clientCut += piece.length;
      return;
    }
    const log = this.log;
    if (typeof piece === 'string') {
      const part = keep < piece.length ? piece.slice(0, keep) : piece;
      if (log.begin(K.CLIENT, this.slot, 0, part.length * 3) < 0) return;
      const n = log.str(part, log.bytesAt());
      log.commit(n);
      this.bytes += n;
    } else {
      if (log.begin(K.CLIENT, this.slot, 0, keep) < 0) return;
      log.buf.set(keep < piece.length ? piece.subarray(0, keep) : piece, log.bytesAt());
      log.commit(keep);
      this.bytes += keep;
    }
    this.clientChars += keep;
    this.clientCut += piece.length - keep;
  }

  /** One read of the running attempt's stream, and the events it completed. */
  read(buf: Buffer, events: number): void {
    this.events += events;
    if (!this.live()) return;
    const keep = Math.min(buf.length, this.textMax - this.eventChars, this.room());
    if (keep <= 0) {
      this.eventCut += buf.length;
      return;
    }
    const log = this.log;
    const w = log.begin(K.READ, this.slot, 0, keep);
    if (w < 0) return;
    log.buf.set(keep < buf.length ? buf.subarray(0, keep) : buf, log.bytesAt());
    log.commit(keep);
    this.bytes += keep;
    this.eventChars += keep;
    this.eventCut += buf.length - keep;
  }
}
