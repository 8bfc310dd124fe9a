/**
 * The capture ring (docs/inspect.md): the last requests of this process, whole, in a bounded,
 * byte-accounted store. Every string a record keeps is counted at two bytes a character (V8's
 * widest string representation: an upper bound whatever the text) plus a fixed overhead per
 * field, and the oldest records are dropped while the total is over the budget. One record is
 * bounded too (TOOLPROOF_CAPTURE_BODY_KB per text, and a share of the ring per record): a 1 MB
 * prompt costs at most its cut, and a stream of a million events at most the record's share.
 *
 * Hazards: a string kept here must not hold a larger one alive. V8 may represent a substring as
 * a slice of its parent (a whole request body, a whole read), so a cut is copied into a string of
 * its own (protocol/own-string.ts). A stream is kept as its reads' Buffers until its attempt
 * ends, then decoded once. Records are plain data: the ring never holds a request, a reply or a
 * socket, so an evicted record is garbage at once.
 */
import { ownString } from '../../protocol/own-string.js';

/** Bytes a kept string is counted at, per character (see the file's comment). */
const BYTES_PER_CHAR = 2;
/** What a kept field, array slot or small object costs besides its characters (an estimate). */
const FIELD_OVERHEAD = 48;
/** A record's fixed fields, counted once. */
const RECORD_OVERHEAD = 1024;

export type Outcome = 'clean' | 'leak_recovered' | 'final_answer' | 'retried' | 'failed' | 'in_flight';

export interface CapturedText {
  text: string;
  /** Characters left out (the text was cut at the capture's per-text cap). */
  cut: number;
}

export interface CapturedAttempt {
  n: number;
  upstream: string;
  replica?: string;
  /** Epoch milliseconds when the attempt was sent. */
  at: number;
  /** From the client's request arriving to this attempt being sent (toolproof's own time before it). */
  queueMs: number;
  /** From sending to the upstream's response headers. */
  ttfbMs?: number;
  /** From sending to the end of the response body (or its failure). */
  totalMs?: number;
  stream: boolean;
  /** The request body exactly as sent (cut). */
  request: CapturedText;
  status?: number;
  /** A non-streamed body, or a stream's events as received (one `data:` payload a line). */
  response: CapturedText;
  /** How many events a stream carried (also those past the cut). */
  events: number;
  error?: { code: string; status: number; message: string };
}

export interface Decision {
  /** Milliseconds since the request arrived. */
  atMs: number;
  /** The attempt it belongs to (1-based; 0: before the first). */
  attempt: number;
  kind: string;
  policy?: string;
  /** Why, in words. */
  reason: string;
  /** The effect's own detail (JSON, cut). */
  detail?: string;
}

export interface CaptureSummary {
  id: string;
  worker: number;
  /** Epoch milliseconds. */
  at: number;
  api: string;
  model: string;
  stream: boolean;
  session: string;
  inFlight: boolean;
  status: number | 'aborted' | null;
  outcome: Outcome;
  /** Every kind that applies (outcome is the first of failed, retried, leak_recovered, final_answer). */
  kinds: Outcome[];
  attempts: number;
  tokens: { cached: number | null; prompt: number | null; completion: number | null };
  durationMs: number | null;
}

export interface CaptureRecord extends CaptureSummary {
  method: string;
  path: string;
  /** The client's request: headers without credentials, the body as received (cut). */
  clientRequest: { headers: Record<string, string>; body: CapturedText };
  upstreamAttempts: CapturedAttempt[];
  decisions: Decision[];
  /** What the client received: the bytes of the response body (a stream's frames) as sent. */
  clientResponse: { status: number | null; body: CapturedText };
  error?: { code: string; status: number; message: string };
  /** The log line's harness summary. */
  harness?: Record<string, unknown>;
}

export interface CaptureLimits {
  /** The ring's budget in bytes; 0: capture off. */
  maxBytes: number;
  /** The most characters one text of a record keeps (a body, a response). */
  textChars: number;
}

/**
 * One record being written. Every text goes through it so that the record's and the ring's
 * byte counts stay exact, and nothing is kept once the record was evicted.
 */
export class RecordWriter {
  bytes = RECORD_OVERHEAD;
  evicted = false;
  /** When the request arrived (performance clock). */
  start = 0;
  /** Pieces of the response the client is receiving (as written), joined when it ends. */
  private clientParts: Array<string | Buffer> = [];
  private clientChars = 0;
  private clientCut = 0;
  /** The running attempt's stream as read (the upstream's own bytes), joined when it ends. */
  private eventParts: Array<string | Buffer> = [];
  private eventChars = 0;
  private eventCut = 0;

  constructor(
    readonly record: CaptureRecord,
    private readonly ring: CaptureRing,
  ) {}

  /** What of the record's share is left, in characters. */
  private room(): number {
    return Math.max(0, Math.floor((this.ring.recordBytes - this.bytes - FIELD_OVERHEAD) / BYTES_PER_CHAR));
  }

  private charge(chars: number): void {
    const n = chars * BYTES_PER_CHAR + FIELD_OVERHEAD;
    this.bytes += n;
    this.ring.charge(this, n);
  }

  /**
   * `s` cut to the per-text cap and the record's room, owned, and counted. `whole`: the length
   * of what `s` was already cut from (a body decoded only in part), for the `cut` it reports.
   */
  text(s: string, whole = s.length): CapturedText {
    if (this.evicted) return { text: '', cut: whole };
    const keep = Math.min(s.length, this.ring.limits.textChars, this.room());
    if (keep === 0) return { text: '', cut: whole };
    // Every caller hands over a string of its own (decoded, serialized); only a cut needs a copy.
    const text = keep < s.length ? ownString(s.slice(0, keep)) : s;
    this.charge(text.length);
    return { text, cut: Math.max(0, whole - keep) };
  }

  /** Bytes as text: only the head that can be kept is decoded (a 32 MB body costs its cut). */
  fromBytes(b: Buffer): CapturedText {
    if (this.evicted) return { text: '', cut: b.length };
    const keep = Math.min(b.length, this.ring.limits.textChars, this.room());
    if (keep === 0) return { text: '', cut: b.length };
    this.charge(keep);
    return new LazyText(this.ring.keep(keep < b.length ? b.subarray(0, keep) : b), b.length - keep);
  }

  /** Small structured values (a decision, header maps): counted by their JSON length. */
  note(chars: number): boolean {
    if (this.evicted || this.room() <= chars) return false;
    this.charge(chars);
    return true;
  }

  /** One event of the running attempt's stream. */
  event(payload: string): void {
    if (this.evicted) return;
    const attempt = this.record.upstreamAttempts.at(-1);
    if (attempt) attempt.events++;
    const keep = Math.min(payload.length, this.ring.limits.textChars - this.eventChars, this.room());
    if (keep <= 0) {
      this.eventCut += payload.length + 1;
      return;
    }
    const part = keep < payload.length ? payload.slice(0, keep) : payload;
    this.eventParts.push(part);
    this.eventChars += part.length + 1;
    this.eventCut += payload.length - keep;
    this.charge(part.length + 1);
  }

  /**
   * One read of the running attempt's stream, as bytes: kept as the Buffer the read already is
   * (no decoding per read; counted at two bytes a byte, what its text will cost), decoded once
   * when the attempt ends. `events`: how many events the read completed.
   */
  read(buf: Buffer, events: number): void {
    if (this.evicted) return;
    const attempt = this.record.upstreamAttempts.at(-1);
    if (attempt) attempt.events += events;
    const keep = Math.min(buf.length, this.ring.limits.textChars - this.eventChars, this.room());
    if (keep <= 0) {
      this.eventCut += buf.length;
      return;
    }
    this.eventParts.push(keep < buf.length ? buf.subarray(0, keep) : buf);
    this.eventChars += keep;
    this.eventCut += buf.length - keep;
    this.charge(keep);
  }

  /** The running attempt's events, joined into its response. */
  endEvents(): void {
    const attempt = this.record.upstreamAttempts.at(-1);
    if (!attempt || this.eventParts.length === 0) return;
    const parts = this.eventParts;
    // Strings: one new string, holding none of the parts. Reads: bytes of the ring's own (none
    // of the reads they came from), decoded when the inspector reads them.
    attempt.response =
      typeof parts[0] === 'string'
        ? { text: parts.join('\n'), cut: this.eventCut }
        : new LazyText(this.ring.keepAll(parts as Buffer[]), this.eventCut);
    this.eventParts = [];
    this.eventChars = 0;
    this.eventCut = 0;
  }

  /**
   * A piece of the response the client receives, as written: a string, or bytes kept as they
   * are (a relayed read; nobody writes into a buffer once it was handed to the socket) and
   * decoded once at the end.
   */
  client(piece: string | Buffer): void {
    if (this.evicted) return;
    const keep = Math.min(piece.length, this.ring.limits.textChars - this.clientChars, this.room());
    if (keep <= 0) {
      this.clientCut += piece.length;
      return;
    }
    const part =
      keep >= piece.length
        ? piece
        : typeof piece === 'string'
          ? piece.slice(0, keep)
          : piece.subarray(0, keep);
    this.clientParts.push(part);
    this.clientChars += part.length;
    this.clientCut += piece.length - keep;
    this.charge(part.length);
  }

  /** The client's response, joined. */
  endClient(): void {
    const parts = this.clientParts;
    // Off V8's heap, strings encoded once: kept as one flat string, a 100 KB answer doubled the
    // garbage collector's time (young-generation copies, promotion); encoded, it costs the
    // encoding and the fresh memory (bench/README.md, issue 28).
    this.record.clientResponse.body =
      parts.length === 0
        ? { text: '', cut: this.clientCut }
        : new LazyText(this.ring.keepAll(parts), this.clientCut);
    this.clientParts = [];
  }
}

/**
 * Bytes a record keeps, decoded only when read (the inspector's API, a test): a Buffer's bytes
 * live outside V8's heap, so a ring of them is neither copied by the young generation's
 * collections nor marked byte by byte by the old one's. Kept as decoded strings, every record
 * was promoted into the old generation and set off major collections: measured at +40% CPU per
 * short tool stream (bench/stream-cpu.ts --capture-ab). A class, not an object literal with a
 * getter (that costs a closure and an accessor pair per text: ~0.7 µs against ~0.05 µs);
 * `toJSON` makes JSON (the API, the cluster's IPC) read it as `{ text, cut }`; nothing caches
 * the decoded text.
 */
export class LazyText implements CapturedText {
  readonly cut: number;
  readonly #bytes: Buffer | readonly Buffer[];

  constructor(bytes: Buffer | readonly Buffer[], cut: number) {
    this.#bytes = bytes;
    this.cut = cut;
  }

  get text(): string {
    const b = this.#bytes;
    return (Buffer.isBuffer(b) ? b : Buffer.concat(b as Buffer[])).toString('utf8');
  }

  toJSON(): { text: string; cut: number } {
    return { text: this.text, cut: this.cut };
  }
}

/** Texts up to this many bytes are cut from a shared slab; longer ones get a buffer of their own. */
const SLAB_BYTES = 64 * 1024;
const SLAB_PIECE = SLAB_BYTES / 4;

export interface CaptureQuery {
  session?: string;
  model?: string;
  outcome?: string;
  limit?: number;
}

/** The process's ring: records in arrival order, the oldest dropped first. */
export class CaptureRing {
  readonly limits: CaptureLimits;
  /** One record's share of the ring: a quarter, so a few huge requests never hold it alone. */
  readonly recordBytes: number;
  private readonly records = new Map<string, RecordWriter>();
  /**
   * Arrival order, oldest at `head`: the eviction queue. Not the Map's own order: a Map that
   * loses its oldest entry at every insert keeps the deleted slots until it rehashes, and a walk
   * from its start steps over all of them (measured: capture cost 4x the CPU of a stream).
   */
  private order: RecordWriter[] = [];
  private head = 0;
  private total = 0;
  private seq = 0;
  /**
   * The slab small texts are cut from. A Buffer of its own per text (allocUnsafeSlow: an
   * ArrayBuffer, its backing store and its external-memory accounting each time) cost ~5 µs per
   * text and set off collections; a view of a slab costs a Buffer object. A slab lives while a
   * kept record points into it: records end about in the order they open, and the ring drops the
   * oldest first, so the slabs alive are about the ring's bytes, plus one slab per record that
   * stays in flight across a slab's fill (slabs are a sixteenth of the ring, at most 64 KB).
   */
  private slab: Buffer = Buffer.alloc(0);
  private slabAt = 0;
  private readonly slabBytes: number;

  constructor(limits: CaptureLimits) {
    this.limits = limits;
    this.recordBytes = Math.max(RECORD_OVERHEAD * 4, Math.floor(limits.maxBytes / 4));
    this.slabBytes = Math.max(4096, Math.min(SLAB_BYTES, Math.floor(limits.maxBytes / 16)));
  }

  /** `n` bytes of the ring's own: never a slice of node's shared pool or of a read. */
  alloc(n: number): Buffer {
    if (n > this.slabBytes / 4 || n > SLAB_PIECE) return Buffer.allocUnsafeSlow(n);
    if (this.slabAt + n > this.slab.length) {
      this.slab = Buffer.allocUnsafeSlow(this.slabBytes);
      this.slabAt = 0;
    }
    const out = this.slab.subarray(this.slabAt, this.slabAt + n);
    this.slabAt += n;
    return out;
  }

  /**
   * Bytes to keep: the very Buffer when it holds at least half of the memory it pins (a read of
   * the upstream's, a body of its own: no copy, and the ring's count of two bytes a byte stays an
   * upper bound of what it pins), else a copy of the ring's own (a slice of node's shared pool,
   * a small view into a large read). Nobody writes into a buffer once it was read, handed to
   * the socket or parsed.
   */
  keep(b: Buffer): Buffer {
    if (b.buffer.byteLength <= b.length * 2) return b;
    const own = this.alloc(b.length);
    b.copy(own, 0);
    return own;
  }

  /**
   * Pieces to keep, in order, without joining them (joined when read): each kept as `keep` says,
   * strings encoded once into bytes of the ring's own, consecutive copied pieces in one piece.
   */
  keepAll(parts: ReadonlyArray<string | Buffer>): Buffer | Buffer[] {
    if (parts.length === 1 && typeof parts[0] !== 'string') return this.keep(parts[0]!);
    const out: Buffer[] = [];
    let i = 0;
    while (i < parts.length) {
      const p = parts[i]!;
      if (typeof p !== 'string' && p.buffer.byteLength <= p.length * 2) {
        out.push(p);
        i++;
        continue;
      }
      // A run of pieces to copy: one copy of the ring's own for the run.
      let j = i;
      let n = 0;
      for (; j < parts.length; j++) {
        const q = parts[j]!;
        if (typeof q === 'string') n += Buffer.byteLength(q);
        else if (q.buffer.byteLength > q.length * 2) n += q.length;
        else break;
      }
      const own = this.alloc(n);
      let at = 0;
      for (; i < j; i++) {
        const q = parts[i]!;
        at += typeof q === 'string' ? own.write(q, at) : q.copy(own, at);
      }
      out.push(own);
    }
    return out.length === 1 ? out[0]! : out;
  }

  /** Bytes the ring holds now (as counted). */
  get bytes(): number {
    return this.total;
  }

  get size(): number {
    return this.records.size;
  }

  /** A new record (in flight); its id is unique in the ring even when a client reuses one. */
  open(record: CaptureRecord): RecordWriter {
    if (this.records.has(record.id)) record.id = `${record.id}~${++this.seq}`;
    const writer = new RecordWriter(record, this);
    this.records.set(record.id, writer);
    this.order.push(writer);
    this.charge(writer, writer.bytes);
    return writer;
  }

  /** Counts `n` more bytes of `writer`'s record, dropping the oldest records while over budget. */
  charge(writer: RecordWriter, n: number): void {
    if (writer.evicted) return;
    this.total += n;
    while (this.total > this.limits.maxBytes && this.head < this.order.length) {
      const w = this.order[this.head]!;
      this.order[this.head++] = undefined as unknown as RecordWriter;
      this.records.delete(w.record.id);
      this.total -= w.bytes;
      w.evicted = true;
    }
    // The queue's dead head is dropped once it is most of the array (amortized O(1) per record).
    if (this.head > 1024 && this.head * 2 > this.order.length) {
      this.order = this.order.slice(this.head);
      this.head = 0;
    }
  }

  get(id: string): CaptureRecord | undefined {
    return this.records.get(id)?.record;
  }

  /** Summaries, newest first, filtered. */
  list(q: CaptureQuery = {}): CaptureSummary[] {
    const out: CaptureSummary[] = [];
    const limit = Math.min(Math.max(q.limit ?? 200, 1), 1000);
    for (let i = this.order.length - 1; i >= this.head && out.length < limit; i--) {
      const r = this.order[i]!.record;
      if (q.session !== undefined && q.session !== '' && r.session !== q.session) continue;
      if (q.model !== undefined && q.model !== '' && r.model !== q.model) continue;
      if (q.outcome !== undefined && q.outcome !== '' && !r.kinds.includes(q.outcome as Outcome)) continue;
      out.push(summaryOf(r));
    }
    return out;
  }

  /** Every record of a session, oldest first. */
  session(key: string): CaptureRecord[] {
    const out: CaptureRecord[] = [];
    for (let i = this.head; i < this.order.length; i++)
      if (this.order[i]!.record.session === key) out.push(this.order[i]!.record);
    return out;
  }
}

export function summaryOf(r: CaptureRecord): CaptureSummary {
  return {
    id: r.id,
    worker: r.worker,
    at: r.at,
    api: r.api,
    model: r.model,
    stream: r.stream,
    session: r.session,
    inFlight: r.inFlight,
    status: r.status,
    outcome: r.outcome,
    kinds: r.kinds,
    attempts: r.attempts,
    tokens: r.tokens,
    durationMs: r.durationMs,
  };
}
