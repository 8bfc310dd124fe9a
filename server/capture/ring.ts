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
 * its own (protocol/own-string.ts). A stream's reads and the client's frames are copied into the
 * ring's arena as they come (Arena: memory of its own, reused round and round) and decoded only
 * when read. Records are plain data: the ring never holds a request, a reply or a socket, so an
 * evicted record is garbage at once.
 */
import { ownString } from '../../protocol/own-string.js';
import type { HeaderList } from './redact.js';

/**
 * Buffer's own UTF-8 writer (node's, beneath `write`): `write(s, offset, 'utf8')` checks its
 * arguments and looks up the encoding on every call, which cost more than the encoding of a
 * 200-byte frame.
 */
const utf8Write =
  (Buffer.prototype as unknown as { utf8Write?: (s: string, o: number, l: number) => number }).utf8Write ??
  function (this: Buffer, s: string, o: number, l: number): number {
    return this.write(s, o, l, 'utf8');
  };

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
  /**
   * The client's request: headers without credentials (HeaderList: read as an object of name
   * and value, JSON included), the body as received (cut).
   */
  clientRequest: { headers: Readonly<Record<string, string>> | HeaderList; body: CapturedText };
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
  /** Where the response the client is receiving went in the arena, as written. */
  private clientSpans: Spans | undefined;
  private clientChars = 0;
  private clientCut = 0;
  /** Where the running attempt's stream went in the arena, as read (the upstream's own bytes). */
  private eventSpans: Spans | undefined;
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
    return this.ring.keep(keep < b.length ? b.subarray(0, keep) : b, b.length - keep);
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
    this.eventSpans ??= new Spans();
    this.ring.append(this.eventSpans, this.eventChars > 0 ? `\n${part}` : part);
    this.eventChars += part.length + 1;
    this.eventCut += payload.length - keep;
    this.charge(part.length + 1);
  }

  /**
   * One read of the running attempt's stream, as bytes: copied into the arena at once (no
   * decoding per read; counted at two bytes a byte, what its text will cost), decoded when read.
   * Kept by reference until the attempt ended, the reads and frames of the streams in flight
   * stayed in the young generation, copied at every scavenge and making them more frequent (+7%
   * on 500-event streams). `events`: how many events the read completed.
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
    this.eventSpans ??= new Spans();
    this.ring.append(this.eventSpans, keep < buf.length ? buf.subarray(0, keep) : buf);
    this.eventChars += keep;
    this.eventCut += buf.length - keep;
    this.charge(keep);
  }

  /** The running attempt's events, as its response. */
  endEvents(): void {
    const attempt = this.record.upstreamAttempts.at(-1);
    const spans = this.eventSpans;
    if (!attempt || spans === undefined) return;
    attempt.response = this.ring.textOf(spans, this.eventCut);
    this.eventSpans = undefined;
    this.eventChars = 0;
    this.eventCut = 0;
  }

  /**
   * A piece of the response the client receives, as written (a string, or bytes), copied into
   * the arena at once: nothing of it stays on V8's heap while the stream goes on.
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
    this.clientSpans ??= new Spans();
    this.ring.append(this.clientSpans, part);
    this.clientChars += part.length;
    this.clientCut += piece.length - keep;
    this.charge(part.length);
  }

  /** The client's response, as received, with its status (its pieces end here). */
  endClient(status = this.record.clientResponse.status): void {
    const spans = this.clientSpans;
    this.clientSpans = undefined;
    this.record.clientResponse = {
      status,
      body: spans === undefined ? { text: '', cut: this.clientCut } : this.ring.textOf(spans, this.clientCut),
    };
  }
}

/**
 * Where a text's pieces went in the arena, in order: (place in the written count, offset,
 * length) a piece, flat; a piece right after the previous one extends it.
 */
export class Spans {
  /** Made with the first piece (an array of three: push() onto [] reserves 17 slots). */
  at: number[] = EMPTY_AT;
  /** Where the last piece ends in the arena, -1: none. */
  end = -1;
}
const EMPTY_AT: number[] = Object.freeze([]) as unknown as number[];

/**
 * Bytes a record keeps, decoded only when read (the inspector's API, a test): a Buffer's bytes
 * live outside V8's heap, so a ring of them is neither copied by the young generation's
 * collections nor marked byte by byte by the old one's, and does not grow the old generation
 * (whose growth sets off major collections). Kept as decoded strings, every record was promoted
 * into the old generation: measured at +40% CPU per short tool stream. A class, not an object
 * literal with a getter (a closure and an accessor pair per text: ~0.7 µs against ~0.05 µs);
 * `toJSON` makes JSON (the API, the cluster's IPC) read it as `{ text, cut }`; nothing caches
 * the decoded text. The bytes are a span of the ring's arena (`arena` set: intact while the
 * arena has not come round over them, see Arena) or a Buffer of their own.
 */
export class LazyText implements CapturedText {
  readonly #buf: Buffer;
  /** The arena's pieces (Spans.at), or one piece of `#buf` (offset, length; no arena). */
  readonly #at: readonly number[];
  readonly #cut: number;
  readonly #arena: Arena | undefined;

  constructor(buf: Buffer, at: readonly number[], cut: number, arena?: Arena) {
    this.#buf = buf;
    this.#at = at;
    this.#cut = cut;
    this.#arena = arena;
  }

  /** False once the arena wrote over the first piece (the oldest): the text then reads as cut. */
  private intact(): boolean {
    return this.#arena === undefined || this.#at.length === 0 || this.#arena.intact(this.#at[0]!);
  }

  private bytes(): number {
    const at = this.#at;
    if (this.#arena === undefined) return at[1]!;
    let n = 0;
    for (let i = 2; i < at.length; i += 3) n += at[i]!;
    return n;
  }

  get text(): string {
    if (!this.intact()) return '';
    const at = this.#at;
    const b = this.#buf;
    if (this.#arena === undefined) return b.toString('utf8', at[0]!, at[0]! + at[1]!);
    if (at.length === 3) return b.toString('utf8', at[1]!, at[1]! + at[2]!);
    const parts: Buffer[] = [];
    for (let i = 0; i < at.length; i += 3) parts.push(b.subarray(at[i + 1]!, at[i + 1]! + at[i + 2]!));
    return Buffer.concat(parts).toString('utf8');
  }

  /** Bytes left out: at the cut, and all of them once overwritten. */
  get cut(): number {
    return this.intact() ? this.#cut : this.#cut + this.bytes();
  }

  toJSON(): { text: string; cut: number } {
    return { text: this.text, cut: this.cut };
  }
}

/**
 * The ring's bytes: one buffer of half the ring's budget (every byte kept is counted at two),
 * written round and round. A record's texts are copied into it when they end (a stream's reads,
 * the client's frames: one copy each, into memory that stays mapped and warm) instead of into
 * new memory of their own: an ArrayBuffer per text cost its allocation, its external-memory
 * accounting (which sets off major collections as it grows) and its first touch, ~100 µs per
 * 100 KB (bench/README.md, issue 28). Allocated at the first text, so a ring that keeps nothing
 * costs nothing. A span is read back only while the arena has not come round over it (`intact`):
 * the ring's accounting drops a record long before in any ordinary traffic, and a record that
 * outlived its bytes all the same (many older streams writing after it) reads as cut.
 */
export class Arena {
  readonly buf: Buffer;
  /** Where the next span starts. */
  private at = 0;
  /** Bytes written since the start, skipped tails included: the clock `intact` reads. */
  private written = 0;

  constructor(readonly size: number) {
    this.buf = Buffer.allocUnsafeSlow(size);
  }

  /** Room for up to `n` bytes at `offset()`; `commit` says how many were used. */
  reserve(n: number): number {
    if (this.at + n > this.size) {
      this.written += this.size - this.at; // the tail is skipped: a span is never split
      this.at = 0;
    }
    return this.at;
  }

  /** `n` bytes were written at the reserved offset; returns their place in the written count. */
  commit(n: number): number {
    const at = this.written;
    this.at += n;
    this.written += n;
    return at;
  }

  intact(at: number): boolean {
    return this.written - at <= this.size;
  }
}

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
  /** The ring's bytes (see Arena), from the first text kept. */
  private arena: Arena | undefined;

  constructor(limits: CaptureLimits) {
    this.limits = limits;
    this.recordBytes = Math.max(RECORD_OVERHEAD * 4, Math.floor(limits.maxBytes / 4));
  }

  /**
   * Bytes to keep: the very Buffer when it holds at least half of the memory it pins (a body of
   * its own: no copy, and the ring's count of two bytes a byte stays an upper bound of what it
   * pins), else a copy in the arena (a slice of node's shared pool, a view into a larger read).
   * Nobody writes into a buffer once it was read, handed to the socket or parsed.
   */
  keep(b: Buffer, cut: number): LazyText {
    if (b.buffer.byteLength <= b.length * 2) return new LazyText(b, [0, b.length], cut);
    const spans = new Spans();
    this.append(spans, b);
    return this.textOf(spans, cut);
  }

  /** Copies a piece (a string encoded) into the arena, after the text's earlier pieces. */
  append(spans: Spans, piece: string | Buffer): void {
    const arena = (this.arena ??= new Arena(
      Math.max(64 * 1024, Math.floor(this.limits.maxBytes / BYTES_PER_CHAR)),
    ));
    const max = typeof piece === 'string' ? piece.length * 3 : piece.length;
    // Never more than a quarter of the arena at once (a record's texts are cut well below).
    if (max > arena.size / 4) {
      piece = typeof piece === 'string' ? Buffer.from(piece) : piece;
      if (piece.length > arena.size / 4) piece = piece.subarray(0, Math.floor(arena.size / 4));
    }
    const off = arena.reserve(typeof piece === 'string' ? max : piece.length);
    let n: number;
    if (typeof piece === 'string') n = utf8Write.call(arena.buf, piece, off, max);
    else {
      arena.buf.set(piece, off);
      n = piece.length;
    }
    const at = arena.commit(n);
    const a = spans.at;
    // Right after the text's previous piece (in the arena and in the written count): one piece.
    if (off === spans.end && a.length > 0 && a[a.length - 3]! + a[a.length - 1]! === at)
      a[a.length - 1]! += n;
    else if (a.length === 0) spans.at = [at, off, n];
    else a.push(at, off, n);
    spans.end = off + n;
  }

  /** A text of the arena's pieces. */
  textOf(spans: Spans, cut: number): LazyText {
    return new LazyText(this.arena!.buf, spans.at, cut, this.arena);
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
