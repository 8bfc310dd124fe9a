/**
 * The capture ring (docs/inspect.md): the last requests of this process, whole, in a bounded,
 * byte-accounted store. Every string a record keeps is counted at two bytes a character (V8's
 * widest string representation: an upper bound whatever the text) plus a fixed overhead per
 * field, and while the total is over the budget the oldest record of the key holding the most is
 * dropped (the oldest of all while one key holds everything). One record is
 * bounded too (TOOLPROOF_CAPTURE_BODY_KB per text, and a share of the ring per record): a 1 MB
 * prompt costs at most its cut, and a stream of a million events at most the record's share.
 *
 * Hazards: a string kept here must not hold a larger one alive. V8 may represent a substring as
 * a slice of its parent (a whole request body, a whole read), so a cut is copied into a string of
 * its own (protocol/own-string.ts). A stream's reads and the client's frames are copied into the
 * ring's arena as they come (Arena: memory of its own, reused round and round) and decoded only
 * when read (a request's still in flight too, as far as it went: RecordWriter.soFar). Records
 * are plain data: the ring never holds a request, a reply or a socket, so an evicted record is
 * garbage at once.
 */
import { ownString } from '../../protocol/own-string.js';
import { BusiestFirst, type HeapPlace } from '../busiest-first.js';
import { flushJournal } from './journal.js';

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

const EMPTY_BUF = Buffer.alloc(0);

/** Bytes a kept string is counted at, per character (see the file's comment). */
const BYTES_PER_CHAR = 2;
/** What a kept field, array slot or small object costs besides its characters (an estimate). */
const FIELD_OVERHEAD = 48;
/** Evicted records kept for reuse, at most (CaptureRing.open). */
const SPARE_RECORDS = 64;
/**
 * Records counted at more than this are not reused: measured on an agent's turn (87 KB bodies,
 * records of ~400 KB counted), reuse read +4-8 KB promoted and 3-4x the major collections per
 * request in two runs out of two (not understood yet; bench/HISTORY.md, capture-cpu7), where the
 * short streams it is for gain (+1 KB promoted per request less).
 */
const SPARE_MAX_BYTES = 64 * 1024;
/** A record's fixed fields, counted once. */
const RECORD_OVERHEAD = 1024;

export type Outcome =
  | 'clean'
  | 'degraded'
  | 'leak_recovered'
  | 'final_answer'
  | 'retried'
  | 'failed'
  | 'in_flight';

export interface CapturedText {
  text: string;
  /** Characters left out (the text was cut at the capture's per-text cap). */
  cut: number;
  /**
   * True: what a request in flight has read or sent so far (RecordWriter.soFar), read while the
   * stream goes on; absent on every text of a request that ended.
   */
  partial?: true;
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
  /**
   * A stream's: from sending to its first bytes (vLLM and llama-server send their headers before
   * the prompt is read: the prefill shows here, not in the TTFB).
   */
  firstChunkMs?: number;
  /** From sending to the end of the response body (or its failure). */
  totalMs?: number;
  stream: boolean;
  /** The request body exactly as sent (cut). */
  request: CapturedText;
  /**
   * The headers as sent, in their order, credentials `[redacted]` (the backend's key, which
   * upstream.ts adds last); absent when the record had no room for them.
   */
  headers?: Readonly<Record<string, string>> | HeaderText;
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
  /** The name of the client key the request came with (none when no key is configured). */
  key?: string;
  /**
   * A flat key's token (config-keys.ts flatKeyToken): which of the keys sharing the name it was.
   * Read by the inspector's routes, never in their answers.
   */
  keyToken?: string;
  inFlight: boolean;
  status: number | 'aborted' | null;
  outcome: Outcome;
  /** Every kind that applies (outcome is the first of failed, retried, leak_recovered, final_answer, degraded). */
  kinds: Outcome[];
  attempts: number;
  tokens: { cached: number | null; prompt: number | null; completion: number | null };
  durationMs: number | null;
}

export interface CaptureRecord extends CaptureSummary {
  method: string;
  path: string;
  /**
   * The client's request: headers without credentials (HeaderText: read as an object of name
   * and value, JSON included), the body as received (cut).
   */
  clientRequest: { headers: Readonly<Record<string, string>> | HeaderText; body: CapturedText };
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

/** What a record starts with (ring.open); every other field is written as the request goes. */
export interface RecordInit {
  id: string;
  worker?: number;
  /** Epoch milliseconds; now when absent. */
  at?: number;
  api: string;
  model: string;
  stream: boolean;
  session: string;
  method: string;
  path: string;
  key?: string;
  keyToken?: string;
}

/**
 * An upstream attempt as written (read as CapturedAttempt, JSON included): one object. A
 * record's first attempt is reused with the record (RecordWriter.reset): every field is set in
 * `reset`, the one place that lists them.
 */
export class Attempt implements CapturedAttempt {
  n!: number;
  upstream!: string;
  stream!: boolean;
  replica!: string | undefined;
  status!: number | undefined;
  error!: CapturedAttempt['error'];
  events!: number;
  /**
   * Its two texts (the body as sent, the response), each as the object given (`sObj`, `pObj`)
   * or, a text of one piece in the ring's arena (nearly always), folded into numbers of its own
   * (lap, offset, length >= 0, cut): no object per text for the collector to promote.
   */
  private arena!: Arena | undefined;
  private sObj!: CapturedText;
  private sLap!: number;
  private sOff!: number;
  private sLen!: number;
  private sCut!: number;
  /**
   * The bytes the body as sent begins with that are the client's body as kept (`hLen` > 0: at
   * `hLap`, `hOff` in the arena, before the attempt's own piece): see RecordWriter.attemptOf.
   */
  private hLap!: number;
  private hOff!: number;
  private hLen!: number;
  /** The headers as sent (HeaderText's bytes in `arena`); `xLen` -1: none kept. */
  private xLap!: number;
  private xOff!: number;
  private xLen!: number;
  private pObj!: CapturedText;
  private pLap!: number;
  private pOff!: number;
  private pLen!: number;
  private pCut!: number;
  /** Epoch seconds and milliseconds (small integers: no number object of their own). */
  private atS!: number;
  private atMsPart!: number;
  /** Tenths of milliseconds (small integers), -1: not yet. */
  private q10!: number;
  private t10!: number;
  private f10!: number;
  private o10!: number;

  constructor(
    n: number,
    upstream: string,
    at: number,
    queueMs: number,
    stream: boolean,
    request: CapturedText,
  ) {
    this.reset(n, upstream, at, queueMs, stream, request);
  }

  /** Every field, as a new attempt's (the constructor's, and a reused one's). */
  reset(
    n: number,
    upstream: string,
    at: number,
    queueMs: number,
    stream: boolean,
    request: CapturedText,
  ): this {
    this.n = n;
    this.upstream = upstream;
    this.stream = stream;
    this.replica = undefined;
    this.status = undefined;
    this.error = undefined;
    this.events = 0;
    this.arena = undefined;
    this.sObj = NO_TEXT;
    this.sLap = 0;
    this.sOff = 0;
    this.sLen = -1;
    this.sCut = 0;
    this.hLap = 0;
    this.hOff = 0;
    this.hLen = 0;
    this.xLap = 0;
    this.xOff = 0;
    this.xLen = -1;
    this.pObj = NO_TEXT;
    this.pLap = 0;
    this.pOff = 0;
    this.pLen = -1;
    this.pCut = 0;
    this.atS = Math.floor(at / 1000);
    this.atMsPart = (at - this.atS * 1000) | 0;
    this.q10 = tenths(queueMs);
    this.t10 = -1;
    this.f10 = -1;
    this.o10 = -1;
    if (foldInto(request, undefined)) {
      this.arena = SCRATCH.arena;
      this.sLap = SCRATCH.lap;
      this.sOff = SCRATCH.off;
      this.sLen = SCRATCH.len;
      this.sCut = SCRATCH.cut;
    } else this.sObj = request;
    return this;
  }

  /**
   * The body as sent begins with `len` bytes of the client's body as kept in `arena` (at `lap`,
   * `off`), before what reset was given (the rest, copied), or is those bytes alone (given none).
   */
  shareHead(arena: Arena, lap: number, off: number, len: number): void {
    if (this.sLen < 0 && this.sObj === NO_TEXT) {
      this.arena = arena;
      this.sLap = lap;
      this.sOff = off;
      this.sLen = len;
      this.sCut = 0;
    } else if (this.sLen >= 0 && this.arena === arena) {
      this.hLap = lap;
      this.hOff = off;
      this.hLen = len;
    }
  }

  /** Its headers as sent, written at `lap`, `off` of `arena` (RecordWriter.attemptHeaders). */
  keepHeaders(arena: Arena, lap: number, off: number, len: number): void {
    this.arena ??= arena;
    if (this.arena !== arena) return;
    this.xLap = lap;
    this.xOff = off;
    this.xLen = len;
  }

  get headers(): HeaderText | undefined {
    return this.xLen < 0
      ? undefined
      : (unfold(this.arena!, this.xLap, this.xOff, this.xLen, 0, HeaderText) as HeaderText);
  }

  /** Waiting to be reused (RecordWriter.release): what holds memory or a request's words dropped. */
  release(): this {
    this.upstream = '';
    this.replica = undefined;
    this.error = undefined;
    this.arena = undefined;
    this.sObj = NO_TEXT;
    this.sLen = -1;
    this.pObj = NO_TEXT;
    this.pLen = -1;
    this.xLen = -1;
    return this;
  }

  /** Whether both texts are bytes of the arena (or none): see RecordWriter.inArena. */
  inArena(): boolean {
    return (this.sLen >= 0 || this.sObj === NO_TEXT) && (this.pLen >= 0 || this.pObj === NO_TEXT);
  }

  /** A non-streamed body, or a stream's events as received (one `data:` payload a line). */
  get response(): CapturedText {
    return this.pLen < 0 ? this.pObj : unfold(this.arena!, this.pLap, this.pOff, this.pLen, this.pCut);
  }

  set response(t: CapturedText) {
    if (foldInto(t, this.arena)) {
      this.arena = SCRATCH.arena;
      this.pLap = SCRATCH.lap;
      this.pOff = SCRATCH.off;
      this.pLen = SCRATCH.len;
      this.pCut = SCRATCH.cut;
      this.pObj = NO_TEXT;
    } else {
      this.pObj = t;
      this.pLen = -1;
    }
  }

  get at(): number {
    return this.atS * 1000 + this.atMsPart;
  }

  get queueMs(): number {
    return this.q10 / 10;
  }

  set queueMs(ms: number) {
    this.q10 = tenths(ms);
  }

  get ttfbMs(): number | undefined {
    return this.t10 < 0 ? undefined : this.t10 / 10;
  }

  set ttfbMs(ms: number | undefined) {
    this.t10 = ms === undefined ? -1 : tenths(ms);
  }

  get firstChunkMs(): number | undefined {
    return this.f10 < 0 ? undefined : this.f10 / 10;
  }

  set firstChunkMs(ms: number | undefined) {
    this.f10 = ms === undefined ? -1 : tenths(ms);
  }

  get totalMs(): number | undefined {
    return this.o10 < 0 ? undefined : this.o10 / 10;
  }

  set totalMs(ms: number | undefined) {
    this.o10 = ms === undefined ? -1 : tenths(ms);
  }

  /** The request body exactly as sent (cut). */
  get request(): CapturedText {
    if (this.sLen < 0) return this.sObj;
    if (this.hLen === 0) return unfold(this.arena!, this.sLap, this.sOff, this.sLen, this.sCut);
    // The head is the older piece: while it is intact, so is the rest (LazyText reads it first).
    const pieces = [this.hLap, this.hOff, this.hLen, this.sLap, this.sOff, this.sLen];
    return new LazyText(this.arena!.buf, this.hLap, this.hOff, this.hLen, pieces, this.sCut, this.arena);
  }

  toJSON(): CapturedAttempt {
    return {
      n: this.n,
      upstream: this.upstream,
      replica: this.replica,
      at: this.at,
      queueMs: this.queueMs,
      ttfbMs: this.ttfbMs,
      firstChunkMs: this.firstChunkMs,
      totalMs: this.totalMs,
      stream: this.stream,
      request: this.request,
      headers: this.headers,
      status: this.status,
      response: this.response,
      events: this.events,
      error: this.error,
    };
  }
}

/** Milliseconds as whole tenths (what the record shows: one decimal). */
function tenths(ms: number): number {
  return Math.round(ms * 10);
}

/** The fewest bytes an attempt's body shares with the client's for it to be kept as shared (attemptOf). */
const SHARED_HEAD_MIN = 512;
/** Bytes compared at a time (one memcmp each) before the block that differs is halved. */
const COMPARE_BLOCK = 16 * 1024;

/**
 * How many bytes `b` begins with that are `a`'s `len` bytes at `off`: compared a block at a time
 * (memcmp), the block that differs halved down to 64 bytes, those read one by one. Linear: each
 * byte up to the difference is read about once, in ~15 calls for an agent's 90 KB.
 */
export function commonPrefix(a: Buffer, off: number, len: number, b: Buffer): number {
  const n = Math.min(len, b.length);
  let lo = 0;
  let hi = Math.min(n, COMPARE_BLOCK);
  while (lo < n && a.compare(b, lo, hi, off + lo, off + hi) === 0) {
    lo = hi;
    hi = Math.min(n, hi + COMPARE_BLOCK);
  }
  // A difference lies in [lo, hi) (or lo is n).
  while (hi - lo > 64) {
    const mid = (lo + hi) >>> 1;
    if (a.compare(b, lo, mid, off + lo, off + mid) === 0) lo = mid;
    else hi = mid;
  }
  while (lo < hi && a[off + lo] === b[lo]) lo++;
  return lo;
}

/** Where the last text foldInto accepted is (read at once by its caller: no object per fold). */
const SCRATCH: Folded = { arena: undefined, lap: 0, off: 0, len: 0, cut: 0 };

/**
 * Whether `t` is a text of one piece in an arena (`arena`, when the owner already holds one of
 * its texts in it): then its place is in SCRATCH, for the owner's own fields.
 */
function foldInto(t: CapturedText, arena: Arena | undefined): boolean {
  if (!LazyText.foldable(t)) return false;
  LazyText.fold(t, SCRATCH);
  const ok = arena === undefined || SCRATCH.arena === arena;
  SCRATCH.arena = ok ? SCRATCH.arena : undefined;
  return ok;
}

/** A folded text, read (the object it was, made again). */
function unfold(arena: Arena, lap: number, off: number, len: number, cut: number, As = LazyText): LazyText {
  return new As(arena.buf, lap, off, len, undefined, cut, arena);
}

type EffectReader = (atMs: number, attempt: number, effect: Record<string, unknown>) => Decision;
let effectReader: EffectReader = (atMs, attempt, effect) => ({
  atMs,
  attempt,
  kind: String(effect.kind),
  reason: String(effect.kind),
});
/** How a decision kept as an effect's fields reads (recorder.ts: the ring knows no policy's words). */
export function readEffectsWith(read: EffectReader): void {
  effectReader = read;
}

/**
 * `opening`: the label of the opening messages when the record was deferred as a run's first
 * request (deferSession(opening)), else undefined (the session is read from the client's body).
 */
type SessionReader = (record: RecordWriter, opening: string | undefined) => string;
let sessionReader: SessionReader = () => '';
/**
 * How a session deferred to the first read is worked out (recorder.ts: the ring knows no affinity
 * key). The reader may defer it again (deferSession): what it returns is then the label for now.
 */
export function readSessionWith(read: SessionReader): void {
  sessionReader = read;
}

type HarnessReader = (
  shared: Readonly<Record<string, unknown>>,
  n0: number,
  n1: number,
  n2: number,
  n3: number,
) => Record<string, unknown>;
let harnessReader: HarnessReader = (shared) => ({ ...shared });
/** How a harness summary kept as a shared copy and four numbers reads (recorder.ts). */
export function readHarnessWith(read: HarnessReader): void {
  harnessReader = read;
}

const NO_TEXT: CapturedText = Object.freeze({ text: '', cut: 0 });
const NO_ATTEMPTS: CapturedAttempt[] = Object.freeze([]) as unknown as CapturedAttempt[];
const IN_FLIGHT_KINDS: Outcome[] = Object.freeze(['in_flight']) as unknown as Outcome[];
const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

/**
 * One record, and its writer: every text goes through it so that the record's and the ring's
 * byte counts stay exact, and nothing is kept once the record was evicted. One object holds what
 * a request's record is made of (its fixed fields, its client request's headers and body, its
 * end), read through accessors as the CaptureRecord it stands for (JSON included): the records
 * a ring keeps outlive the young generation, and the garbage collector's cost of promoting them
 * goes by the object (measured: 57 heap objects a short stream's record, ~two thirds of
 * capture's CPU, before records were one object with few others beside it). Times are kept as
 * small integers (epoch seconds and milliseconds, tenths of milliseconds): a fractional or
 * epoch number in a field is a heap object of its own.
 */
export class RecordWriter implements CaptureRecord {
  // Every field is set in `reset`, the one place that lists them: a record evicted once it ended
  // is reused for a later request (CaptureRing.open), so that the records a ring keeps are not
  // new objects the collector copies and promotes with every request.
  bytes!: number;
  evicted!: boolean;
  /** Its place in the ring's arrival order, counted from the ring's first record (CaptureRing.after). */
  arrival!: number;
  /** Its key's share of the ring (CaptureRing.open), whose bytes it counts in. */
  share!: KeyShare | undefined;
  /** Its index in the ring's order (CaptureRing.compact keeps it). */
  slot!: number;
  /**
   * When the request arrived (performance clock); undefined once it ended (a fractional number
   * is an object of its own, not kept for the record's life).
   */
  start!: number | undefined;
  /** Its id as it came (`id` reads it as the ring settled it: a reused id's earlier record takes a suffix). */
  ident!: string;
  worker!: number;
  api!: string;
  model!: string;
  stream!: boolean;
  /**
   * The session's label, or, `sessionLater`, to be worked out when read (see session): 1 from the
   * client's body, 2 from the reply to a run's first request (`sess` the opening's label); 3: the
   * label of a run's first request, worked out (opensRun).
   */
  private sess!: string;
  private sessionLater!: 0 | 1 | 2 | 3;
  key!: string | undefined;
  keyToken!: string | undefined;
  method!: string;
  path!: string;
  inFlight!: boolean;
  status!: number | 'aborted' | null;
  outcome!: Outcome;
  kinds!: Outcome[];
  attempts!: number;
  error!: CaptureRecord['error'];
  /** The attempt running now (the last one), undefined before the first. */
  current!: Attempt | undefined;
  /** What the client received: its status (and the bytes of its body, responseBody). */
  responseStatus!: number | null;
  /**
   * The record's three texts (the client's headers and body, the response it received), each
   * as the object given (`*Obj`) or, a text of one piece in the ring's arena (nearly always),
   * folded into numbers of the record's own (lap, offset, length >= 0, cut), as Attempt's.
   */
  private hObj!: CaptureRecord['clientRequest']['headers'];
  private hLap!: number;
  private hOff!: number;
  private hLen!: number;
  private bObj!: CapturedText;
  private bLap!: number;
  private bOff!: number;
  private bLen!: number;
  private bCut!: number;
  private rObj!: CapturedText;
  private rLap!: number;
  private rOff!: number;
  private rLen!: number;
  private rCut!: number;
  private atS!: number;
  private atMsPart!: number;
  /** Tenths of milliseconds, -1: in flight. */
  private d10!: number;
  private tCached!: number | null;
  private tPrompt!: number | null;
  private tCompletion!: number | null;
  /**
   * The harness summary: the object given (`hsOwn`), or a shared frozen copy (`hsShared`, see
   * shareHarness) with this request's own numbers (`hs0`-`hs3`, -1: undefined).
   */
  private hsOwn!: Record<string, unknown> | undefined;
  private hsShared!: Readonly<Record<string, unknown>> | undefined;
  private hs0!: number;
  private hs1!: number;
  private hs2!: number;
  private hs3!: number;
  /** Attempts after the first (a retry, a fallback), undefined: at most one. */
  private more!: Attempt[] | undefined;
  /** The first attempt of the request this record was before (reset), to be reused. */
  private spare!: Attempt | undefined;
  /** The decisions, flat (see decisions). */
  private decs!: unknown[] | undefined;
  /** Where the response the client is receiving went in the arena, as written. */
  private clientSpans!: Spans | undefined;
  private clientChars!: number;
  private clientCut!: number;
  /** Where the running attempt's stream went in the arena, as read (the upstream's own bytes). */
  private eventSpans!: Spans | undefined;
  private eventChars!: number;
  private eventCut!: number;
  readonly ring: CaptureRing;

  constructor(init: RecordInit, ring: CaptureRing) {
    this.ring = ring;
    this.reset(init);
  }

  /** Every field, as a new record's (the constructor's, and a reused record's: CaptureRing.open). */
  reset(init: RecordInit): this {
    // The first attempt of the request this record was (release keeps it, its texts dropped).
    this.spare = (this.more !== undefined ? this.more[0] : this.current) ?? this.spare;
    this.bytes = RECORD_OVERHEAD;
    this.evicted = false;
    this.arrival = -1;
    this.share = undefined;
    this.slot = -1;
    this.start = undefined;
    this.ident = init.id;
    this.worker = init.worker ?? 0;
    this.api = init.api;
    this.model = init.model;
    this.stream = init.stream;
    this.sess = init.session;
    this.sessionLater = 0;
    this.key = init.key;
    this.keyToken = init.keyToken;
    this.method = init.method;
    this.path = init.path;
    this.inFlight = true;
    this.status = null;
    this.outcome = 'in_flight';
    this.kinds = IN_FLIGHT_KINDS;
    this.attempts = 0;
    this.error = undefined;
    this.current = undefined;
    this.responseStatus = null;
    this.hObj = NO_HEADERS;
    this.hLap = 0;
    this.hOff = 0;
    this.hLen = -1;
    this.bObj = NO_TEXT;
    this.bLap = 0;
    this.bOff = 0;
    this.bLen = -1;
    this.bCut = 0;
    this.rObj = NO_TEXT;
    this.rLap = 0;
    this.rOff = 0;
    this.rLen = -1;
    this.rCut = 0;
    const at = init.at ?? Date.now();
    this.atS = Math.floor(at / 1000);
    this.atMsPart = (at - this.atS * 1000) | 0;
    this.d10 = -1;
    this.tCached = null;
    this.tPrompt = null;
    this.tCompletion = null;
    this.hsOwn = undefined;
    this.hsShared = undefined;
    this.hs0 = -1;
    this.hs1 = -1;
    this.hs2 = -1;
    this.hs3 = -1;
    this.more = undefined;
    this.decs = undefined;
    this.clientSpans = undefined;
    this.clientChars = 0;
    this.clientCut = 0;
    this.eventSpans = undefined;
    this.eventChars = 0;
    this.eventCut = 0;
    return this;
  }

  /**
   * Whether all the record's texts are bytes of the arena (the server's records: the client's
   * bytes, the body as sent, the reads and frames), one attempt: then it is reused once evicted.
   * A record holding texts of its own on the heap (a body without bytes, kept as a string; the
   * tests' rings) is left to the collector: its texts are promoted with it either way, and
   * reusing its object only changes how many old-generation collections a run sets off, which
   * moves the bounds probe's heap measure (capture-bounds.test.ts) by the start-up bytecode V8
   * flushes at them or not, not by anything the ring holds (heap snapshots: the same objects).
   */
  inArena(): boolean {
    return (
      this.more === undefined &&
      (this.hLen >= 0 || this.hObj === NO_HEADERS) &&
      (this.bLen >= 0 || this.bObj === NO_TEXT) &&
      (this.rLen >= 0 || this.rObj === NO_TEXT) &&
      (this.current === undefined || this.current.inArena())
    );
  }

  /**
   * An evicted record waiting to be reused: nothing it held is kept (no text, no decision, no
   * summary: the ring's bound counts only the records it holds), its first attempt's object
   * aside for the next request's (reset).
   */
  release(): this {
    const first = this.more !== undefined ? this.more[0] : this.current;
    // Only the fields that hold memory or a request's words: the next request's reset sets every
    // field anew (a whole reset here as well wrote the evicted record, the coldest, twice).
    this.ident = '';
    this.model = '';
    this.sess = '';
    this.sessionLater = 0;
    this.key = undefined;
    this.keyToken = undefined;
    this.path = '';
    this.error = undefined;
    this.current = undefined;
    this.more = undefined;
    this.decs = undefined;
    this.hsOwn = undefined;
    this.hsShared = undefined;
    this.hObj = NO_HEADERS;
    this.hLen = -1;
    this.bObj = NO_TEXT;
    this.bLen = -1;
    this.rObj = NO_TEXT;
    this.rLen = -1;
    this.clientSpans = undefined;
    this.eventSpans = undefined;
    this.evicted = true;
    this.share = undefined;
    this.spare = first?.release();
    return this;
  }

  /**
   * A new attempt (the running one from now on): the first one of the request this record was
   * before when there is one (its object reused, every field set anew).
   */
  newAttempt(
    n: number,
    upstream: string,
    at: number,
    queueMs: number,
    stream: boolean,
    request: CapturedText,
  ): Attempt {
    const spare = this.spare;
    this.spare = undefined;
    const a =
      spare !== undefined
        ? spare.reset(n, upstream, at, queueMs, stream, request)
        : new Attempt(n, upstream, at, queueMs, stream, request);
    this.attempt(a);
    return a;
  }

  /**
   * A new attempt whose body as sent is `body`, kept as newAttempt keeps it, except for the bytes
   * it begins with that are the client's body as kept: those are read from there and only the
   * rest is copied. A request policy's rewrite mostly appends (forced tool use: final_answer
   * after the client's tools, then `tool_choice`; a body no policy rewrote is the client's own
   * bytes), so an agent's turn keeps its ~90 KB prompt once, not twice: the ring holds about
   * twice as many of them, and the attempt's copy costs its few hundred new bytes.
   */
  attemptOf(
    n: number,
    upstream: string,
    at: number,
    queueMs: number,
    stream: boolean,
    body: Buffer,
  ): Attempt {
    const head = this.sharedHead(body);
    if (head === 0) return this.newAttempt(n, upstream, at, queueMs, stream, this.fromBytes(body));
    const rest = head < body.length ? this.fromBytes(body.subarray(head)) : NO_TEXT;
    const a = this.newAttempt(n, upstream, at, queueMs, stream, rest);
    a.shareHead(this.ring.arenaNow!, this.bLap, this.bOff, head);
    return a;
  }

  /**
   * How many bytes `body` begins with that the client's body as kept has too: 0 unless that body
   * is whole in the arena and intact, the head at least SHARED_HEAD_MIN and the rest fits whole.
   */
  private sharedHead(body: Buffer): number {
    const arena = this.ring.arenaNow;
    if (this.evicted || arena === undefined || this.bLen < SHARED_HEAD_MIN || this.bCut !== 0) return 0;
    if (body.length > this.ring.limits.textChars || !arena.intact(this.bLap, this.bOff)) return 0;
    const head = commonPrefix(arena.buf, this.bOff, this.bLen, body);
    return head >= SHARED_HEAD_MIN && body.length - head <= this.room() ? head : 0;
  }

  /**
   * Its id in the ring: the ring settles a reused id (the earlier record takes a suffix) when it
   * is read, not per request (CaptureRing.settleIds), and so when this is.
   */
  get id(): string {
    this.ring.settleIds();
    return this.ident;
  }

  set id(id: string) {
    this.ident = id;
  }

  /** The log line's harness summary (see shareHarness). */
  get harness(): Record<string, unknown> | undefined {
    const shared = this.hsShared;
    if (shared === undefined) return this.hsOwn;
    return harnessReader(shared, this.hs0, this.hs1, this.hs2, this.hs3);
  }

  set harness(h: Record<string, unknown> | undefined) {
    this.hsOwn = h;
    this.hsShared = undefined;
  }

  /**
   * The harness summary as a shared frozen copy (the same few over and over: recorder.ts) and
   * this request's own numbers in it (small non-negative integers, -1: undefined), read back by
   * the reader recorder.ts registers (readHarnessWith): no object of the record's own.
   */
  shareHarness(
    shared: Readonly<Record<string, unknown>>,
    n0: number,
    n1: number,
    n2: number,
    n3: number,
  ): void {
    this.hsOwn = undefined;
    this.hsShared = shared;
    this.hs0 = n0;
    this.hs1 = n1;
    this.hs2 = n2;
    this.hs3 = n3;
  }

  /**
   * The session it belongs to (the affinity key, readable). One the client's body gives (the
   * hash of its opening messages: up to 16 K characters hashed, tens of µs an agent's turn, and
   * the run's mark) is worked out from the body the record keeps when first read (deferSession),
   * then kept; a run's first request's, once it ended (its reply marks the run).
   */
  get session(): string {
    const later = this.sessionLater;
    if (later === 0 || later === 3) return this.sess;
    this.sessionLater = 0;
    const label = sessionReader(this, later === 2 ? this.sess : undefined);
    if (this.sessionLater === 0 || this.sessionLater === 3) this.sess = label;
    return label;
  }

  /** Whether it is a run's first request, as its session was read (deferSession, firstOfRun). */
  get opensRun(): boolean {
    return this.sessionLater >= 2;
  }

  /** Its session, about to be returned by the reader, is a run's first request's, worked out. */
  openedRun(): void {
    this.sessionLater = 3;
  }

  set session(s: string) {
    this.sess = s;
    this.sessionLater = 0;
  }

  /**
   * The session is worked out when asked (sessionReader): from the client's body, kept whole in
   * the record; or, `opening` given (its label), from the reply to a run's first request, once
   * the request ended (docs/inspect.md: runs that open alike).
   */
  deferSession(opening?: string): void {
    if (opening === undefined) this.sessionLater = 1;
    else {
      this.sess = opening;
      this.sessionLater = 2;
    }
  }

  /** Up to `max` records that arrived after this one (still in the ring), oldest first. */
  later(max: number): RecordWriter[] {
    return this.ring.after(this, max);
  }

  /** The shared copy the harness summary is kept as (shareHarness), if it is. */
  get sharedHarness(): Readonly<Record<string, unknown>> | undefined {
    return this.hsShared;
  }

  /** The end's token counts (no object: the tokens setter's argument is one). */
  setTokens(cached: number | null, prompt: number | null, completion: number | null): void {
    this.tCached = cached;
    this.tPrompt = prompt;
    this.tCompletion = completion;
  }

  /** The record (this object: the writer is the record). */
  get record(): this {
    return this;
  }

  get at(): number {
    return this.atS * 1000 + this.atMsPart;
  }

  get durationMs(): number | null {
    return this.d10 < 0 ? null : this.d10 / 10;
  }

  set durationMs(ms: number | null) {
    this.d10 = ms === null ? -1 : tenths(ms);
  }

  get tokens(): CaptureSummary['tokens'] {
    return { cached: this.tCached, prompt: this.tPrompt, completion: this.tCompletion };
  }

  set tokens(t: CaptureSummary['tokens']) {
    this.tCached = t.cached;
    this.tPrompt = t.prompt;
    this.tCompletion = t.completion;
  }

  /** The client's request headers, without credentials. */
  get headers(): CaptureRecord['clientRequest']['headers'] {
    return this.hLen < 0
      ? this.hObj
      : (unfold(this.ring.arenaNow!, this.hLap, this.hOff, this.hLen, 0, HeaderText) as HeaderText);
  }

  set headers(h: CaptureRecord['clientRequest']['headers']) {
    if (h instanceof HeaderText && foldInto(h, this.ring.arenaNow) && SCRATCH.cut === 0) {
      this.hLap = SCRATCH.lap;
      this.hOff = SCRATCH.off;
      this.hLen = SCRATCH.len;
      this.hObj = NO_HEADERS;
    } else {
      this.hObj = h;
      this.hLen = -1;
    }
  }

  /** The client's request body as received (cut). */
  get body(): CapturedText {
    return this.bLen < 0
      ? this.bObj
      : unfold(this.ring.arenaNow!, this.bLap, this.bOff, this.bLen, this.bCut);
  }

  set body(t: CapturedText) {
    if (foldInto(t, this.ring.arenaNow)) {
      this.bLap = SCRATCH.lap;
      this.bOff = SCRATCH.off;
      this.bLen = SCRATCH.len;
      this.bCut = SCRATCH.cut;
      this.bObj = NO_TEXT;
    } else {
      this.bObj = t;
      this.bLen = -1;
    }
  }

  /** The bytes of the response body the client received (a stream's frames) as sent. */
  get responseBody(): CapturedText {
    return this.rLen < 0
      ? this.rObj
      : unfold(this.ring.arenaNow!, this.rLap, this.rOff, this.rLen, this.rCut);
  }

  set responseBody(t: CapturedText) {
    if (foldInto(t, this.ring.arenaNow)) {
      this.rLap = SCRATCH.lap;
      this.rOff = SCRATCH.off;
      this.rLen = SCRATCH.len;
      this.rCut = SCRATCH.cut;
      this.rObj = NO_TEXT;
    } else {
      this.rObj = t;
      this.rLen = -1;
    }
  }

  get clientRequest(): CaptureRecord['clientRequest'] {
    return { headers: this.headers, body: this.body };
  }

  get clientResponse(): CaptureRecord['clientResponse'] {
    return { status: this.responseStatus, body: this.responseBody };
  }

  get upstreamAttempts(): CapturedAttempt[] {
    if (this.more !== undefined) return this.more;
    return this.current === undefined ? NO_ATTEMPTS : [this.current];
  }

  /** A new attempt (the running one from now on). */
  attempt(a: Attempt): void {
    if (this.current !== undefined) (this.more ??= [this.current]).push(a);
    this.current = a;
  }

  /**
   * The decisions, in order. Kept flat in one array: a decision of the server's own as itself;
   * a policy's effect with a few short primitive fields (nearly every request's: the forced tool
   * choice, the final answer, its schema outcome) as [-(time in tenths) - 1, attempt, the
   * effect's shared frozen copy], or as its fields, [-(time in tenths) - 1, attempt, fields,
   * detail fields, name, value...], read back as an EffectDecision (recorder.ts).
   */
  get decisions(): Decision[] {
    const d = this.decs;
    if (d === undefined) return [];
    const out: Decision[] = [];
    for (let i = 0; i < d.length; ) {
      const head = d[i] as Decision | number;
      if (typeof head !== 'number') {
        out.push(head);
        i++;
        continue;
      }
      // A shared copy of a small effect (recorder.ts sharedEffect): three slots.
      const third = d[i + 2];
      if (typeof third === 'object' && third !== null) {
        out.push(effectReader((-head - 1) / 10, d[i + 1] as number, third as Record<string, unknown>));
        i += 3;
        continue;
      }
      const fields = third as number;
      const details = d[i + 3] as number;
      const effect: Record<string, unknown> = {};
      let k = i + 4;
      for (let f = 0; f < fields; f++, k += 2) effect[d[k] as string] = d[k + 1];
      if (details >= 0) {
        const detail: Record<string, unknown> = {};
        for (let f = 0; f < details; f++, k += 2) detail[d[k] as string] = d[k + 1];
        effect.detail = detail;
      }
      out.push(effectReader((-head - 1) / 10, d[i + 1] as number, effect));
      i = k;
    }
    return out;
  }

  /** A decision of the server's own. */
  decision(d: Decision): void {
    if (this.decs === undefined) this.decs = [d];
    else this.decs.push(d);
  }

  /** The flat decisions, for an effect's fields to be appended (see decisions). */
  flatDecisions(): unknown[] {
    return (this.decs ??= []);
  }

  /**
   * The record ended: its decisions kept in an array of their size (a list grown by pushes has
   * room for ~20 slots where a request's few effects fill 6: ~170 bytes a record would keep).
   */
  settle(): void {
    const d = this.decs;
    if (d !== undefined) this.decs = d.slice();
  }

  toJSON(): CaptureRecord {
    return {
      id: this.id,
      worker: this.worker,
      at: this.at,
      api: this.api,
      model: this.model,
      stream: this.stream,
      session: this.session,
      ...(this.key === undefined ? {} : { key: this.key }),
      ...(this.keyToken === undefined ? {} : { keyToken: this.keyToken }),
      inFlight: this.inFlight,
      status: this.status,
      outcome: this.outcome,
      kinds: this.kinds,
      attempts: this.attempts,
      tokens: this.tokens,
      durationMs: this.durationMs,
      method: this.method,
      path: this.path,
      clientRequest: this.clientRequest,
      upstreamAttempts: this.upstreamAttempts,
      decisions: this.decisions,
      clientResponse: this.clientResponse,
      error: this.error,
      harness: this.harness,
    };
  }

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

  /**
   * Headers as one text (redact.ts redactedHeaderText) kept as bytes in the arena: the record
   * then holds no string of them (each a heap object the collector would promote). Undefined
   * when the record has no room for them.
   */
  encodedHeaders(s: string): HeaderText | undefined {
    if (this.evicted || s.length > this.room() || s.length > this.ring.limits.textChars) return undefined;
    this.charge(s.length);
    const spans = new Spans();
    this.ring.append(spans, s);
    return this.ring.textOf<HeaderText>(spans, 0, HeaderText);
  }

  /**
   * The client's headers, redacted (redact.ts redactedHeaderPairs: names and values in turn),
   * kept as encodedHeaders keeps their text, written into the arena as they are (no string of
   * them built, no object for them); `chars`, the JSON's length, counted as `note` counts it. A
   * record out of room for them keeps none.
   */
  headerPairs(pairs: readonly string[], chars: number): void {
    if (!this.note(chars)) return;
    let len = 0;
    for (let i = 0; i < pairs.length; i++) len += pairs[i]!.length + 1;
    if (this.evicted || len > this.room() || len > this.ring.limits.textChars) return;
    this.charge(len);
    if (this.ring.appendPairs(pairs)) {
      this.hLap = SCRATCH.lap;
      this.hOff = SCRATCH.off;
      this.hLen = SCRATCH.len;
      this.hObj = NO_HEADERS;
      return;
    }
    // More than a quarter of the arena at most (a tiny ring): as one text, cut to that quarter.
    let text = '';
    for (let i = 0; i < pairs.length; i++) text += `${pairs[i]}\u0000`;
    const spans = new Spans();
    this.ring.append(spans, text);
    this.headers = this.ring.textOf<HeaderText>(spans, 0, HeaderText);
  }

  /**
   * The running attempt's headers as sent (redact.ts's pairs, `chars` their JSON's length),
   * kept as the client's are (headerPairs); none when the record is out of room.
   */
  attemptHeaders(pairs: readonly string[], chars: number): void {
    const a = this.current;
    if (a === undefined || !this.note(chars)) return;
    if (this.ring.appendPairs(pairs)) a.keepHeaders(SCRATCH.arena!, SCRATCH.lap, SCRATCH.off, SCRATCH.len);
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
    const attempt = this.current;
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
    const attempt = this.current;
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
    const attempt = this.current;
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

  /**
   * What the request in flight has read and sent so far: the running attempt's stream (the
   * upstream's bytes as read, or its events) and the client's frames, each decoded now from the
   * bytes its spans hold up to now, marked `partial` (undefined: nothing of it being written, or
   * it ended and is the record's own text). Cut at the same per-text cap and the record's share
   * as the finished text (the bytes past them are in `cut`), so one read costs at most the cap
   * however long the stream; a trailing character whose bytes are not all read yet is left for
   * the next read rather than decoded as a replacement. Only the inspector's read of one request
   * calls this: the request's path writes its spans as before, nothing more per read or frame.
   */
  soFar(): { events: CapturedText | undefined; client: CapturedText | undefined } {
    return {
      events: this.inFlight ? this.textSoFar(this.eventSpans, this.eventCut) : undefined,
      client: this.inFlight ? this.textSoFar(this.clientSpans, this.clientCut) : undefined,
    };
  }

  private textSoFar(spans: Spans | undefined, cut: number): CapturedText | undefined {
    if (spans === undefined) return cut === 0 ? undefined : { text: '', cut, partial: true };
    const arena = this.ring.arenaNow!;
    // A copy: the spans go on growing with the stream (`more` pushed, `len` extended).
    const now = new Spans();
    now.lap = spans.lap;
    now.off = spans.off;
    now.len = spans.len;
    if (spans.more === undefined) now.len = wholeChars(arena.buf, spans.off, spans.len);
    else {
      const more = spans.more.slice();
      const last = more.length - 1;
      more[last] = wholeChars(arena.buf, more[last - 1]!, more[last]!);
      now.more = more;
    }
    const t = this.ring.textOf(now, cut);
    return { text: t.text, cut: t.cut, partial: true };
  }

  /** The client's response, as received, with its status (its pieces end here). */
  endClient(status = this.responseStatus): void {
    const spans = this.clientSpans;
    this.clientSpans = undefined;
    this.responseStatus = status;
    this.responseBody =
      spans === undefined
        ? this.clientCut === 0
          ? NO_TEXT
          : { text: '', cut: this.clientCut }
        : this.ring.textOf(spans, this.clientCut);
  }
}

/**
 * How many of the `len` bytes at `off` are whole UTF-8 characters: a read may end inside one
 * (its other bytes come with the next read). At most three bytes looked at.
 */
function wholeChars(buf: Buffer, off: number, len: number): number {
  for (let i = 1; i <= 3 && i <= len; i++) {
    const b = buf[off + len - i]!;
    if (b < 0x80) return len; // ASCII: whatever came before it is whole
    if (b >= 0xc0) {
      // The lead byte of the last character: whole when all its bytes are there.
      const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : 2;
      return need <= i ? len : len - i;
    }
  }
  return len;
}

/**
 * Where a text's pieces went in the arena, in order. The first piece inline (its lap of the
 * arena, offset and length: small integers), the others, if any, in `more` (lap, offset,
 * length a piece, flat); a piece right after the previous one extends it.
 */
export class Spans {
  lap = 0;
  off = 0;
  len = -1;
  more: number[] | undefined = undefined;
  /** Where the last piece ends in the arena, -1: none. */
  end = -1;
}

/** Where a folded text is (LazyText.fold): an owner's own fields, no object per text. */
interface Folded {
  arena: Arena | undefined;
  lap: number;
  off: number;
  len: number;
  cut: number;
}

/**
 * Bytes a record keeps, decoded only when read (the inspector's API, a test): a Buffer's bytes
 * live outside V8's heap, so a ring of them is neither copied by the young generation's
 * collections nor marked byte by byte by the old one's, and does not grow the old generation
 * (whose growth sets off major collections). Kept as decoded strings, every record was promoted
 * into the old generation: measured at +40% CPU per short tool stream. A class, not an object
 * literal with a getter (a closure and an accessor pair per text: ~0.7 µs against ~0.05 µs);
 * `toJSON` makes JSON (the API, the cluster's IPC) read it as `{ text, cut }`; nothing caches
 * the decoded text. The bytes are a span of the ring's arena (`arena` set: intact while the
 * arena has not come round over them, see Arena) or a Buffer of their own; one piece (nearly
 * every text) is held in the object's own fields, no array beside it.
 */
export class LazyText implements CapturedText {
  readonly #buf: Buffer;
  readonly #lap: number;
  readonly #off: number;
  readonly #len: number;
  /** Every piece (lap, offset, length, flat) when there are several. */
  readonly #more: readonly number[] | undefined;
  readonly #cut: number;
  readonly #arena: Arena | undefined;

  constructor(
    buf: Buffer,
    lap: number,
    off: number,
    len: number,
    more: readonly number[] | undefined,
    cut: number,
    arena?: Arena,
  ) {
    this.#buf = buf;
    this.#lap = lap;
    this.#off = off;
    this.#len = len;
    this.#more = more;
    this.#cut = cut;
    this.#arena = arena;
  }

  /**
   * Whether `t` is a text of one piece in an arena (nearly every text a record keeps): then an
   * owner may keep it as its four numbers (Folded) rather than as this object.
   */
  static foldable(t: CapturedText): t is LazyText {
    return t instanceof LazyText && t.#arena !== undefined && t.#more === undefined;
  }

  /** A foldable text's place: its arena, lap, offset, length and cut, into `into`. */
  static fold(t: LazyText, into: Folded): void {
    into.arena = t.#arena;
    into.lap = t.#lap;
    into.off = t.#off;
    into.len = t.#len;
    into.cut = t.#cut;
  }

  /** False once the arena wrote over the first piece (the oldest): the text then reads as cut. */
  private intact(): boolean {
    return this.#arena === undefined || this.#arena.intact(this.#lap, this.#off);
  }

  private bytes(): number {
    const at = this.#more;
    if (at === undefined) return this.#len;
    let n = 0;
    for (let i = 2; i < at.length; i += 3) n += at[i]!;
    return n;
  }

  get text(): string {
    if (!this.intact()) return '';
    const b = this.#buf;
    const at = this.#more;
    if (at === undefined) return b.toString('utf8', this.#off, this.#off + this.#len);
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
 * A request's headers kept as one text in the arena (name and value in turn, each ended by a
 * NUL, which HTTP allows in neither), read as the object of name and value in the request's
 * order (JSON included).
 */
export class HeaderText extends LazyText {
  object(): Record<string, string> {
    const out: Record<string, string> = {};
    const f = this.text.split('\u0000');
    for (let i = 0; i + 1 < f.length; i += 2) out[f[i]!] = f[i + 1]!;
    return out;
  }

  override toJSON(): Record<string, string> & { text: string; cut: number } {
    return this.object() as Record<string, string> & { text: string; cut: number };
  }
}

/** How far ahead of its write head the arena is touched (Arena.warm), and at what stride. */
const WARM_AHEAD = 32 * 1024;
const PAGE_BYTES = 4096;

/**
 * The ring's bytes: one buffer of half the ring's budget (every byte kept is counted at two),
 * written round and round. A record's texts are copied into it when they end (a stream's reads,
 * the client's frames: one copy each, into memory that stays mapped and warm) instead of into
 * new memory of their own: an ArrayBuffer per text cost its allocation, its external-memory
 * accounting (which sets off major collections as it grows) and its first touch, ~100 µs per
 * 100 KB (bench/README.md, issue 28). Allocated at the first text, so a ring that keeps nothing
 * costs nothing. A span is read back only while the arena has not come round over it (`intact`):
 * the ring's accounting drops a record long before in any ordinary traffic, and a record that
 * outlived its bytes all the same (many older streams writing after it) reads as cut. A place in
 * it is its lap (how many times the arena came round before) and offset: two small integers.
 */
export class Arena {
  readonly buf: Buffer;
  /** Where the next span starts. */
  private at = 0;
  /** How many times the writing came round to the start. */
  lap = 0;

  constructor(readonly size: number) {
    this.buf = Buffer.allocUnsafeSlow(size);
  }

  /** Room for up to `n` bytes at the returned offset; `commit` says how many were used. */
  reserve(n: number): number {
    if (this.at + n > this.size) {
      this.lap++; // the tail is skipped: a span is never split
      this.at = 0;
      this.warmTo = 0;
    }
    if (this.at + n > this.warmTo) this.warm(this.at + n);
    return this.at;
  }

  /** `n` bytes were written at the reserved offset. */
  commit(n: number): void {
    this.at += n;
  }

  /** Where the memory ahead of the write head was last read up to (warm). */
  private warmTo = 0;
  /** What the reads summed (kept, so that they are not optimized away). */
  sink = 0;

  /**
   * The arena's next WARM_AHEAD bytes touched, a byte a memory page, before they are written:
   * the head is the arena's coldest memory (written a lap ago), and the copies into it (a
   * short stream's ~5 KB) were a third of capture's profile in a server, a third of that into
   * a 1 MB ring's arena. The stall is the pages' (each first touched again after a lap: on a VM
   * whose idle pages are reclaimed, a round trip each), not the lines': touched here in one pass
   * it costs less than in the copies (~1 µs a short stream, per-call timers), and where pages
   * are cheap this is 1.5 reads a request (bench/HISTORY.md, capfixed).
   */
  private warm(upTo: number): void {
    const buf = this.buf;
    const from = Math.max(this.warmTo, this.at);
    const to = Math.min(this.size, Math.max(upTo, from) + WARM_AHEAD);
    let s = 0;
    for (let i = from; i < to; i += PAGE_BYTES) s += buf[i]!;
    this.sink = s;
    this.warmTo = to;
  }

  /** Whether the bytes written at `off` in lap `lap` are still there. */
  intact(lap: number, off: number): boolean {
    return (this.lap - lap) * this.size + this.at - off <= this.size;
  }
}

export interface CaptureQuery {
  session?: string;
  model?: string;
  outcome?: string;
  limit?: number;
  /** Only the requests that arrived before this time (epoch ms): the list's next page. */
  before?: number;
  /** Only the requests made with this key name (a named key's own view in the inspector). */
  owner?: string;
}

/** One page of the list: its requests, newest first, and how many matching ones are older. */
export interface CapturePage {
  requests: CaptureSummary[];
  older: number;
  /** For an owner's list: its records dropped to make room for other keys' (CaptureRing.droppedForOthers). */
  droppedForOthers?: { records: number; newest: number };
}

/**
 * One key's records in the ring (its name; '' for requests without one): their bytes, and the
 * records from `head` on, oldest first. A key's records leave only as its oldest (evict), so
 * those are exactly its records in the ring; a slot passed is emptied at once (a record evicted
 * is reused by a later request, or garbage that nothing here may hold).
 */
interface KeyShare extends HeapPlace {
  readonly name: string;
  bytes: number;
  records: Array<RecordWriter | undefined>;
  head: number;
}

/**
 * The process's ring: records in arrival order; a full ring drops the oldest record of the key
 * holding the most bytes (the oldest of all while one key holds everything).
 */
export class CaptureRing {
  readonly limits: CaptureLimits;
  /** One record's share of the ring: a quarter, so a few huge requests never hold it alone. */
  readonly recordBytes: number;
  /**
   * The records by id, built when the ring is read (index), not as requests come: a Map of
   * thousands of ids, written at every request (the new id) and every eviction (the oldest's),
   * missed the CPU's caches at each (~2 µs a short stream in the server: bench/HISTORY.md,
   * capfixed). Weak: an entry of a record evicted since holds nothing of it.
   */
  private readonly records = new Map<string, WeakRef<RecordWriter>>();
  /** The arrival up to which `records` was built. */
  private indexed = 0;
  /**
   * Arrival order, oldest at `head`: the eviction queue. Not the Map's own order: a Map that
   * loses its oldest entry at every insert keeps the deleted slots until it rehashes, and a walk
   * from its start steps over all of them (measured: capture cost 4x the CPU of a stream).
   */
  private order: RecordWriter[] = [];
  private head = 0;
  /** Records ever opened (the next one's arrival). */
  private arrived = 0;
  private total = 0;
  private seq = 0;
  /** The ring's bytes (see Arena), from the first text kept. */
  private arena: Arena | undefined;
  /** Records evicted once they ended, to be reused (open). */
  private readonly spare: RecordWriter[] = [];
  /**
   * Per key name (configured names only: a bounded map), how many of its records were dropped to
   * make room for another key's request, and the newest of them's arrival (docs/inspect.md, Keys).
   */
  readonly droppedForOthers = new Map<string, { records: number; newest: number }>();
  /**
   * Each key's share, and the keys by their bytes, the most first: a full ring gives up the
   * oldest record of the key holding the most (as the Responses store and the refusal memory
   * do), so one key's loop of requests pushes out its own records, not every other key's (the
   * oldest of all went first: a quiet key's whole history was gone in seconds). Records of one
   * key leave in arrival order as before.
   */
  private readonly shares = new Map<string, KeyShare>();
  private readonly busiest = new BusiestFirst<KeyShare>((k) => k.bytes);
  /** Records in the ring (the order's holes, records evicted out of arrival order, left out). */
  private live = 0;

  /**
   * Whether the recorder's hooks go through the journal (journal.ts) rather than write at once:
   * the server's ring (app.ts); a ring made on its own (tests, benches) is written at once.
   */
  readonly batched: boolean;

  constructor(limits: CaptureLimits, batched = false) {
    this.limits = limits;
    this.batched = batched;
    this.recordBytes = Math.max(RECORD_OVERHEAD * 4, Math.floor(limits.maxBytes / 4));
  }

  /**
   * Bytes to keep, copied into the arena (one copy, into memory that stays mapped), large ones
   * too. A body's own Buffer kept by reference (the client's, the attempt's as sent: 87 KB each
   * on an agent's turn) was no copy, but memory outside the heap that V8 counts as it grows and
   * frees only at a major collection once the record is evicted: its growth set off major
   * collections (an agent turn: 4-7 per 1,000 requests against 1 with capture off; copied: 1).
   */
  keep(b: Buffer, cut: number): LazyText {
    const spans = new Spans();
    this.append(spans, b);
    return this.textOf(spans, cut);
  }

  /** The ring's arena, made at the first text kept. */
  private arenaOf(): Arena {
    return (this.arena ??= new Arena(Math.max(64 * 1024, Math.floor(this.limits.maxBytes / BYTES_PER_CHAR))));
  }

  /** Copies a piece (a string encoded) into the arena, after the text's earlier pieces. */
  append(spans: Spans, piece: string | Buffer): void {
    const arena = this.arenaOf();
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
    arena.commit(n);
    const lap = arena.lap;
    // Right after the text's previous piece (same lap, next offset): one piece.
    if (spans.len < 0) {
      spans.lap = lap;
      spans.off = off;
      spans.len = n;
    } else if (
      off === spans.end &&
      (spans.more === undefined ? spans.lap : spans.more[spans.more.length - 3]) === lap
    ) {
      if (spans.more === undefined) spans.len += n;
      else spans.more[spans.more.length - 1]! += n;
    } else {
      spans.more ??= [spans.lap, spans.off, spans.len];
      spans.more.push(lap, off, n);
    }
    spans.end = off + n;
  }

  /**
   * Strings written one after the other into the arena, each ended by a NUL (a header's name
   * and value, redact.ts), as one piece: its place in SCRATCH. ASCII (nearly every header) is
   * written a character a byte here, the rest by the UTF-8 writer. False, nothing written, when
   * they could take more than a quarter of the arena (append's bound).
   */
  appendPairs(pairs: readonly string[]): boolean {
    const arena = this.arenaOf();
    let max = 0;
    for (let i = 0; i < pairs.length; i++) max += pairs[i]!.length * 3 + 1;
    if (max > arena.size / 4) return false;
    const off = arena.reserve(max);
    const buf = arena.buf;
    let at = off;
    for (let i = 0; i < pairs.length; i++) {
      const s = pairs[i]!;
      const n = s.length;
      let k = 0;
      for (; k < n; k++) {
        const c = s.charCodeAt(k);
        if (c >= 0x80) break;
        buf[at++] = c;
      }
      if (k < n) at += utf8Write.call(buf, k === 0 ? s : s.slice(k), at, (n - k) * 3);
      buf[at++] = 0;
    }
    arena.commit(at - off);
    SCRATCH.arena = arena;
    SCRATCH.lap = arena.lap;
    SCRATCH.off = off;
    SCRATCH.len = at - off;
    SCRATCH.cut = 0;
    return true;
  }

  /** A text of the arena's pieces. */
  textOf<T extends LazyText = LazyText>(spans: Spans, cut: number, As: typeof LazyText = LazyText): T {
    if (spans.len < 0) return new As(EMPTY_BUF, 0, 0, 0, undefined, cut) as T;
    return new As(this.arena!.buf, spans.lap, spans.off, spans.len, spans.more, cut, this.arena) as T;
  }

  /** The ring's arena, once a text was kept. */
  get arenaNow(): Arena | undefined {
    return this.arena;
  }

  /** Bytes the ring holds now (as counted). */
  get bytes(): number {
    flushJournal();
    return this.total;
  }

  get size(): number {
    flushJournal();
    return this.live;
  }

  /**
   * A new record (in flight); its id is unique in the ring even when a client reuses one (a
   * retry sent with the same x-request-id, another key's id): the id the client got back finds
   * this newest request, and the earlier one keeps it with a suffix (`~N`: no client id has one),
   * given when the ring is next read (settleIds: no map of ids written per request). The new
   * record took the suffix before: the id a client just got back showed its earlier
   * request, and one key's id could hide another key's request from it (ownRecord).
   */
  open(init: RecordInit): RecordWriter {
    const spare = this.spare.pop();
    const writer = spare !== undefined ? spare.reset(init) : new RecordWriter(init, this);
    writer.arrival = this.arrived++;
    writer.slot = this.order.length;
    this.order.push(writer);
    this.live++;
    const name = writer.key ?? '';
    let share = this.shares.get(name);
    if (share === undefined) {
      share = { name, bytes: 0, records: [], head: 0, at: -1 };
      this.shares.set(name, share);
      this.busiest.insert(share);
    }
    share.records.push(writer);
    writer.share = share;
    this.charge(writer, writer.bytes);
    return writer;
  }

  /**
   * Counts `n` more bytes of `writer`'s record, dropping the oldest record of the key holding the
   * most while over budget.
   */
  charge(writer: RecordWriter, n: number): void {
    if (writer.evicted) return;
    this.total += n;
    const own = writer.share!;
    own.bytes += n;
    this.busiest.grew(own);
    while (this.total > this.limits.maxBytes && this.live > 0) {
      const share = this.busiest.top()!;
      this.evict(share.records[share.head]!, writer);
    }
    // The order's holes are dropped once they are most of it (amortized O(1) per record).
    if (this.order.length - this.live > this.live + 1024) this.compact();
  }

  /** The order without its holes, each record's slot kept. */
  private compact(): void {
    const order: RecordWriter[] = [];
    for (let i = this.head; i < this.order.length; i++) {
      const w = this.order[i];
      if (w === undefined) continue;
      w.slot = order.length;
      order.push(w);
    }
    this.order = order;
    this.head = 0;
  }

  /** Takes `w`, the oldest record of its key, out of the ring, to make room for `writer`'s record. */
  private evict(w: RecordWriter, writer: RecordWriter): void {
    this.order[w.slot] = undefined as unknown as RecordWriter;
    while (this.head < this.order.length && this.order[this.head] === undefined) this.head++;
    this.live--;
    this.total -= w.bytes;
    const share = w.share!;
    share.bytes -= w.bytes;
    share.records[share.head++] = undefined;
    if (share.head === share.records.length) {
      this.shares.delete(share.name);
      this.busiest.remove(share);
    } else {
      this.busiest.shrank(share);
      // Its list is cut once most of it is behind it (amortized O(1) per record).
      if (share.head > 64 && share.head * 2 > share.records.length) {
        share.records = share.records.slice(share.head);
        share.head = 0;
      }
    }
    w.evicted = true;
    if (w.key !== undefined && w.key !== writer.key) {
      let d = this.droppedForOthers.get(w.key);
      if (d === undefined) this.droppedForOthers.set(w.key, (d = { records: 0, newest: 0 }));
      d.records++;
      d.newest = Math.max(d.newest, w.at);
    }
    // An ended record nothing writes to any more is reused for a later request (its object
    // and its first attempt's: old memory, not new objects promoted with every request). One
    // in flight is left to its request, which still holds it; one with texts of its own on the
    // heap (see RecordWriter.inArena) to the collector.
    if (!w.inFlight && w.bytes <= SPARE_MAX_BYTES && this.spare.length < SPARE_RECORDS && w.inArena())
      this.spare.push(w.release());
  }

  /**
   * The records that arrived since the ring was last read, by id (see `records`): a reused id's
   * earlier record takes its suffix now, in arrival order, as it did when the later one opened.
   * Every read runs this first, so no answer shows a record before its id was settled.
   */
  settleIds(): void {
    // The ops the journal holds first (journal.ts): no reader sees a record short of them.
    flushJournal();
    if (this.indexed === this.arrived) return;
    const records = this.records;
    // The records that arrived since: the order's tail back to the last one indexed before.
    let from = this.order.length;
    while (from > this.head) {
      const w = this.order[from - 1];
      if (w !== undefined && w.arrival < this.indexed) break;
      from--;
    }
    for (let i = from; i < this.order.length; i++) {
      const w = this.order[i];
      if (w === undefined) continue;
      const earlier = this.byId(w.ident);
      if (earlier !== undefined && earlier !== w && earlier.arrival < w.arrival) {
        earlier.ident = `${earlier.ident}~${++this.seq}`;
        records.set(earlier.ident, new WeakRef(earlier));
      }
      records.set(w.ident, new WeakRef(w));
    }
    this.indexed = this.arrived;
    // The entries of records gone since (evicted, or reused under another id): dropped once they
    // are most of the map (amortized O(1) per record).
    if (records.size > 2 * this.size + 64)
      for (const id of records.keys()) if (this.byId(id) === undefined) records.delete(id);
  }

  /** The record of `id` in the ring, as indexed. */
  private byId(id: string): RecordWriter | undefined {
    const w = this.records.get(id)?.deref();
    return w !== undefined && !w.evicted && w.ident === id ? w : undefined;
  }

  get(id: string): CaptureRecord | undefined {
    this.settleIds();
    return this.byId(id);
  }

  /**
   * The newest record of `owner` sent with the id `id`: the record of that id, or, when that is
   * another key's (a reused id), an earlier one of the owner's (`id~N`, see open). The walk runs
   * only then: when no record has the id, none has a suffixed one (the newest goes last).
   */
  ownRecord(id: string, owner: string): CaptureRecord | undefined {
    this.settleIds();
    const r = this.byId(id);
    if (r === undefined || r.key === owner) return r;
    const prefix = `${id}~`;
    for (let i = this.order.length - 1; i >= this.head; i--) {
      const w = this.order[i];
      if (w !== undefined && w.key === owner && w.id.startsWith(prefix)) return w;
    }
    return undefined;
  }

  /** Summaries, newest first, filtered. */
  list(q: CaptureQuery = {}): CaptureSummary[] {
    return this.page(q).requests;
  }

  /**
   * Up to `limit` summaries, newest first, filtered, older than `before`, and the count of the
   * matching ones left older. A page never ends inside a millisecond: the records that arrived
   * in the same one as its last are all on it, so the next page (`before` its last's time)
   * misses none. Newest by `at` (when the request arrived), not by when its record was opened:
   * a record is opened once its body is read, so concurrent requests open out of their arrival
   * order (and the wall clock is read again each second), and a page cut in the ring's order
   * left a later-opened older record past the next page's `before`: it was never listed. The
   * ring is in order but for such neighbours, so the sort is a pass when nothing moved.
   */
  page(q: CaptureQuery = {}): CapturePage {
    this.settleIds();
    const hits: CaptureRecord[] = [];
    let inOrder = true;
    let prevAt = Number.POSITIVE_INFINITY;
    for (let i = this.order.length - 1; i >= this.head; i--) {
      const r = this.order[i]?.record;
      if (r === undefined) continue;
      const at = r.at;
      if (q.before !== undefined && at >= q.before) continue;
      if (q.owner !== undefined && r.key !== q.owner) continue;
      if (q.model !== undefined && q.model !== '' && r.model !== q.model) continue;
      if (q.outcome !== undefined && q.outcome !== '' && !r.kinds.includes(q.outcome as Outcome)) continue;
      if (q.session !== undefined && q.session !== '' && r.session !== q.session) continue;
      hits.push(r);
      if (at > prevAt) inOrder = false;
      prevAt = at;
    }
    // Stable: records of one millisecond stay newest opened first.
    if (!inOrder) hits.sort((a, b) => b.at - a.at);
    let end = Math.min(Math.max(q.limit ?? 200, 1), hits.length);
    while (end < hits.length && hits[end]!.at === hits[end - 1]!.at) end++;
    const requests: CaptureSummary[] = [];
    for (let i = 0; i < end; i++) requests.push(summaryOf(hits[i]!));
    return { requests, older: hits.length - end };
  }

  /** Up to `max` records that arrived after `r`, oldest first (none when `r` left the ring). */
  after(r: RecordWriter, max: number): RecordWriter[] {
    // Found by its slot, not by a walk of the order: every failed first request of a full
    // ring asks this once when the inspector first reads it (a walk made that quadratic).
    const i = r.slot;
    if (i < this.head || i >= this.order.length || this.order[i] !== r) return [];
    const out: RecordWriter[] = [];
    for (let j = i + 1; j < this.order.length && out.length < max; j++) {
      const w = this.order[j];
      if (w !== undefined) out.push(w);
    }
    return out;
  }

  /** Every record of a session, oldest first. */
  session(key: string, owner?: string): CaptureRecord[] {
    this.settleIds();
    const out: CaptureRecord[] = [];
    for (let i = this.head; i < this.order.length; i++) {
      const r = this.order[i]?.record;
      if (r === undefined) continue;
      if (r.session === key && (owner === undefined || r.key === owner)) out.push(r);
    }
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
    ...(r.key === undefined ? {} : { key: r.key }),
    inFlight: r.inFlight,
    status: r.status,
    outcome: r.outcome,
    kinds: r.kinds,
    attempts: r.attempts,
    tokens: r.tokens,
    durationMs: r.durationMs,
  };
}
