/**
 * OTLP/HTTP protobuf export with a one-pass serializer. The SDK's OTLP exporter is used whole
 * (its HTTP transport, retries, OTEL_EXPORTER_OTLP_* headers, timeout and compression, its
 * response parsing); only the step that turns the SDK's ReadableSpans into ExportTraceServiceRequest
 * bytes is toolproof's: the library's serializer walks every span twice (a size estimate, then
 * the write), converts each id from hex into a new Uint8Array and copies strings one character at
 * a time, which made it about half of a sampled request's tracing CPU (bench/HISTORY.md, tracing).
 * This one writes once into a buffer it keeps, ids with Buffer's hex decoder, strings with
 * Buffer's native UTF-8 encoder, and produces the same bytes as the library's serializer
 * (tests/server/tracing-proto.test.ts compares them on the spans toolproof makes and on edge
 * cases). Loaded with the SDK only (sdk.ts).
 */
import type { HrTime, SpanContext, SpanKind, TraceState } from '@opentelemetry/api';
import { OTLPExporterBase } from '@opentelemetry/otlp-exporter-base';
import {
  convertLegacyHttpOptions,
  createOtlpHttpExportDelegate,
} from '@opentelemetry/otlp-exporter-base/node-http';
import { ProtobufTraceSerializer, TraceExporterMetricsHelper } from '@opentelemetry/otlp-transformer';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { LeanSpan } from './lean.js';

type Value = unknown;

/**
 * Buffer's own UTF-8 writer (what `write(s, offset, 'utf8')` calls after checking its arguments,
 * which costs more than encoding a short attribute), or `write` where a runtime lacks it.
 */
const utf8Write: (this: Buffer, s: string, offset: number) => number =
  (Buffer.prototype as unknown as { utf8Write?: (s: string, offset: number) => number }).utf8Write ??
  function (this: Buffer, s: string, offset: number) {
    return this.write(s, offset, 'utf8');
  };

/** A growable buffer, kept between exports (the bytes are copied out at the end). */
/**
 * `s` written at `pos` of `buf` as a length-delimited string when it is short ASCII (keys, names,
 * most values): its length in one byte, then its characters, copied here (cheaper than a call into
 * C++). Returns the position after it, or -1 when `s` is not short ASCII (the caller writes it the
 * long way, over whatever this wrote). `buf` has room for `s.length + 1` bytes from `pos`.
 */
export function shortAscii(buf: Buffer, pos: number, s: string): number {
  const len = s.length;
  if (len >= 0x80) return -1;
  let at = pos + 1;
  for (let i = 0; i < len; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) return -1;
    buf[at++] = c;
  }
  buf[pos] = len;
  return at;
}

export class Writer {
  buf: Buffer;
  pos = 0;

  constructor(buf: Buffer = Buffer.allocUnsafe(64 * 1024)) {
    this.buf = buf;
  }

  ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  /** A varint of 0..2^32-1 (the callers' lengths, tags, counts). */
  uint32(v: number): void {
    this.ensure(5);
    const buf = this.buf;
    while (v > 0x7f) {
      buf[this.pos++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    buf[this.pos++] = v;
  }

  /** An int64 varint from a JS integer (negative: ten bytes of two's complement, as protobuf). */
  int64(value: number): void {
    if (value >= 0 && value <= 0xffffffff) {
      this.uint32(value);
      return;
    }
    let low: number;
    let high: number;
    const abs = Math.abs(value);
    low = abs >>> 0;
    high = (abs / 0x100000000) >>> 0;
    if (value < 0) {
      low = ~low >>> 0;
      high = ~high >>> 0;
      low = (low + 1) >>> 0;
      if (low === 0) high = (high + 1) >>> 0;
    }
    this.ensure(10);
    const buf = this.buf;
    while (high > 0 || low > 0x7f) {
      buf[this.pos++] = (low & 0x7f) | 0x80;
      low = ((low >>> 7) | (high << 25)) >>> 0;
      high >>>= 7;
    }
    buf[this.pos++] = low & 0x7f;
  }

  tag(field: number, wire: number): void {
    this.uint32((field << 3) | wire);
  }

  /** Opens a length-delimited field: one byte reserved for its length (most are short). */
  begin(): number {
    this.ensure(1);
    return ++this.pos;
  }

  /** Closes it: the length written where reserved, the content moved when it needs more bytes. */
  end(start: number): void {
    const n = this.pos - start;
    if (n < 0x80) {
      this.buf[start - 1] = n;
      return;
    }
    const size = n < 0x4000 ? 2 : n < 0x200000 ? 3 : n < 0x10000000 ? 4 : 5;
    this.ensure(size - 1);
    this.buf.copyWithin(start - 1 + size, start, this.pos);
    const after = this.pos + size - 1;
    this.pos = start - 1;
    this.uint32(n);
    this.pos = after;
  }

  string(s: string): void {
    // UTF-8 takes at most 3 bytes per UTF-16 unit; the length is written after the bytes.
    this.ensure(s.length * 3 + 6);
    const at = shortAscii(this.buf, this.pos, s);
    if (at >= 0) {
      this.pos = at;
      return;
    }
    const start = ++this.pos;
    this.pos += utf8Write.call(this.buf, s, start);
    this.end(start);
  }

  bytes(b: Uint8Array): void {
    this.uint32(b.length);
    this.ensure(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }

  /** A hex id as bytes (what hexToBinary does, into the buffer). */
  hex(h: string): void {
    const n = h.length >> 1;
    this.uint32(n);
    this.ensure(n);
    const buf = this.buf;
    let p = this.pos;
    // Ids are lowercase hex (the SDK's generator, a traceparent checked by the propagator):
    // decoded here, cheaper than a call into Buffer's decoder; anything else goes there.
    for (let i = 0; i < n; i++) {
      const hi = HEX[h.charCodeAt(2 * i) & 0x7f]!;
      const lo = HEX[h.charCodeAt(2 * i + 1) & 0x7f]!;
      if ((hi | lo) > 15 || h.charCodeAt(2 * i) > 0x7f || h.charCodeAt(2 * i + 1) > 0x7f) {
        this.pos += buf.write(h, this.pos, n, 'hex');
        return;
      }
      buf[p++] = (hi << 4) | lo;
    }
    this.pos = p;
  }

  /**
   * An attribute (a KeyValue as field `field` of its message). Most of a request's attributes
   * repeat from one span to the next, key and value (the operation, the provider, the model, the
   * route, the upstream, a status, the same token counts on both spans): the last bytes written
   * for each key are kept with their value, and copied in one go when the value is the same again.
   * A key whose value keeps changing (an id, a duration) is then encoded each time (below).
   */
  attribute(field: number, key: string, value: Value): void {
    let entry = LAST.get(key);
    if (entry !== undefined) {
      const whole = entry.bytes;
      if (whole !== undefined && sameValue(entry.value, value)) {
        const n = whole.length;
        this.ensure(n);
        const buf = this.buf;
        const p = this.pos;
        buf.set(whole, p);
        buf[p] = (field << 3) | 2;
        this.pos = p + n;
        entry.hits++;
        return;
      }
    } else if (LAST.size < LAST_KEYS && !isContentKey(key)) {
      entry = { value: undefined, bytes: undefined, hits: 0, changes: 0 };
      LAST.set(key, entry);
    }
    const start = this.pos;
    this.encodeAttribute(field, key, value);
    // Kept while the key's values repeat far more than they change: one that keeps changing (a
    // request id, a duration) or alternates (two policies' events) stops being kept after a few
    // changes, no copy made per span for it.
    if (
      entry !== undefined &&
      this.pos - start <= LAST_BYTES &&
      (entry.changes < LAST_CHANGES || entry.changes * LAST_RATIO < entry.hits)
    ) {
      entry.changes++;
      entry.bytes = Uint8Array.prototype.slice.call(this.buf, start, this.pos) as Uint8Array;
      entry.value = Array.isArray(value) ? value.slice() : value;
    }
  }

  /**
   * An attribute (a KeyValue as field `field` of its message) in one go when every length fits
   * one byte and the key and a string value are ASCII, as nearly all of toolproof's are: no
   * reserved lengths to patch, one bounds check. Anything else takes the general path, whose
   * bytes are the same.
   */
  encodeAttribute(field: number, key: string, value: Value): void {
    const klen = key.length;
    if (klen < 0x70) {
      let any = -1; // the AnyValue's length, when this path takes the value
      const t = typeof value;
      let n = 0;
      if (t === 'string') {
        n = (value as string).length;
        if (klen + n < 0x78) any = n + 2;
      } else if (t === 'boolean') any = 2;
      else if (t === 'number') {
        n = value as number;
        if (!Number.isInteger(n)) any = 9;
        else if (n >= 0 && n < 0x10000000) any = n < 0x80 ? 2 : n < 0x4000 ? 3 : n < 0x200000 ? 4 : 5;
      }
      if (any >= 0 && klen + any + 4 < 0x80) {
        this.ensure(klen + any + 6);
        const buf = this.buf;
        const start = this.pos;
        let p = start;
        buf[p++] = (field << 3) | 2;
        buf[p++] = klen + any + 4;
        buf[p++] = 0x0a;
        buf[p++] = klen;
        let ascii = true;
        for (let i = 0; i < klen; i++) {
          const c = key.charCodeAt(i);
          if (c >= 0x80) {
            ascii = false;
            break;
          }
          buf[p++] = c;
        }
        if (ascii) {
          buf[p++] = 0x12;
          buf[p++] = any;
          if (t === 'string') {
            const s = value as string;
            buf[p++] = 0x0a;
            buf[p++] = n;
            for (let i = 0; i < n; i++) {
              const c = s.charCodeAt(i);
              if (c >= 0x80) {
                ascii = false;
                break;
              }
              buf[p++] = c;
            }
          } else if (t === 'boolean') {
            buf[p++] = 0x10;
            buf[p++] = value ? 1 : 0;
          } else if (any === 9) {
            buf[p++] = 0x21;
            buf.writeDoubleLE(n, p);
            p += 8;
          } else {
            buf[p++] = 0x18;
            while (n > 0x7f) {
              buf[p++] = (n & 0x7f) | 0x80;
              n >>>= 7;
            }
            buf[p++] = n;
          }
          if (ascii) {
            this.pos = p;
            return;
          }
        }
      }
    }
    this.tag(field, 2);
    const kv = this.begin();
    keyValue(this, key, value);
    this.end(kv);
  }

  fixed32(v: number): void {
    this.ensure(4);
    this.le32(v >>> 0);
  }

  /** HrTime [s, ns] as fixed64 nanoseconds. */
  time(t: HrTime): void {
    this.timeOf(t[0], t[1]);
  }

  /** Epoch milliseconds as fixed64 nanoseconds: the bytes of lean.ts's hrOf(ms) written by time(). */
  timeMs(ms: number): void {
    let s = Math.floor(ms / 1000);
    let ns = Math.round((ms - s * 1000) * 1e6);
    if (ns >= 1e9) {
      s += 1;
      ns -= 1e9;
    }
    this.timeOf(s, ns);
  }

  /** Seconds and nanoseconds as fixed64 nanoseconds (exact: split as the library does, no BigInt). */
  timeOf(seconds: number, nanos: number): void {
    const lower = (seconds & 0xffff) * 1e9;
    const upper = ((seconds / 0x10000) >>> 0) * 1e9;
    const lowWithCarry = (lower >>> 0) + (((upper & 0xffff) * 0x10000) >>> 0) + nanos;
    const high =
      (Math.floor(lower / 0x100000000) +
        ((upper / 0x10000) >>> 0) +
        Math.floor(lowWithCarry / 0x100000000)) >>>
      0;
    this.ensure(8);
    this.le32(lowWithCarry >>> 0);
    this.le32(high);
  }

  /** Four bytes, little-endian (Buffer's writeUInt32LE checks its arguments first). */
  le32(v: number): void {
    const buf = this.buf;
    let p = this.pos;
    buf[p++] = v & 0xff;
    buf[p++] = (v >>> 8) & 0xff;
    buf[p++] = (v >>> 16) & 0xff;
    buf[p++] = v >>> 24;
    this.pos = p;
  }

  double(v: number): void {
    this.ensure(8);
    this.buf.writeDoubleLE(v, this.pos);
    this.pos += 8;
  }
}

/** An attribute's key, its last value and the bytes written for them (Writer.attribute). */
interface LastValue {
  value: Value;
  /** The KeyValue field as written (its first byte, the field's tag, is rewritten for each use). */
  bytes: Uint8Array | undefined;
  hits: number;
  changes: number;
}

/** By key: toolproof's own keys, a few dozen (bounded all the same, as are the bytes kept per key). */
const LAST = new Map<string, LastValue>();
const LAST_KEYS = 256;
const LAST_BYTES = 128;
/** Changes of value a key may have before its bytes are kept only while it repeats LAST_RATIO times as often. */
const LAST_CHANGES = 8;
const LAST_RATIO = 16;

/**
 * Content under the opt-in (`gen_ai.input.messages`, `gen_ai.output.messages`,
 * `gen_ai.system_instructions`, ...) is never kept between spans: no prompt stays in memory
 * after its request, however short.
 */
function isContentKey(key: string): boolean {
  return key.endsWith('.messages') || key.endsWith('_instructions') || key.includes('.content');
}

/** The keys whose last value and bytes are kept between spans (for tests). */
export function keptAttributeKeys(): string[] {
  return [...LAST.keys()].filter((k) => LAST.get(k)?.bytes !== undefined);
}

/** The same attribute value: identical (not an object), or arrays of a few such identical items. */
function sameValue(a: Value, b: Value): boolean {
  if (a === b) return typeof a !== 'object' || a === null;
  if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length || a.length > 8) return false;
  for (let i = 0; i < a.length; i++) {
    const v = a[i];
    if (v !== b[i] || (typeof v === 'object' && v !== null)) return false;
  }
  return true;
}

/** Hex digit values by character code (16: not a lowercase or uppercase hex digit). */
export const HEX = new Uint8Array(128).fill(16);
for (let i = 0; i < 10; i++) HEX[48 + i] = i;
for (let i = 0; i < 6; i++) {
  HEX[97 + i] = 10 + i;
  HEX[65 + i] = 10 + i;
}

export const MIN_INT64 = -(2 ** 63);
export const MAX_INT64 = 2 ** 63;

function anyValue(w: Writer, value: Value): void {
  const t = typeof value;
  if (t === 'string') {
    w.tag(1, 2);
    w.string(value as string);
  } else if (t === 'boolean') {
    w.tag(2, 0);
    w.uint32(value ? 1 : 0);
  } else if (t === 'number') {
    const n = value as number;
    if (Number.isInteger(n) && n >= MIN_INT64 && n < MAX_INT64) {
      w.tag(3, 0);
      w.int64(n);
    } else {
      w.tag(4, 1);
      w.double(n);
    }
  } else if (value instanceof Uint8Array) {
    w.tag(7, 2);
    w.bytes(value);
  } else if (Array.isArray(value)) {
    w.tag(5, 2);
    const array = w.begin();
    for (const item of value) {
      w.tag(1, 2);
      const at = w.begin();
      anyValue(w, item);
      w.end(at);
    }
    w.end(array);
  } else if (t === 'object' && value !== null) {
    w.tag(6, 2);
    const list = w.begin();
    const obj = value as Record<string, Value>;
    for (const k in obj) {
      if (!Object.hasOwn(obj, k)) continue;
      w.tag(1, 2);
      const kv = w.begin();
      keyValue(w, k, obj[k]);
      w.end(kv);
    }
    w.end(list);
  }
}

function keyValue(w: Writer, key: string, value: Value): void {
  w.tag(1, 2);
  w.string(key);
  w.tag(2, 2);
  const at = w.begin();
  anyValue(w, value);
  w.end(at);
}

function attributes(w: Writer, attrs: Record<string, Value>, field: number): void {
  for (const key in attrs) {
    if (!Object.hasOwn(attrs, key)) continue;
    w.attribute(field, key, attrs[key]);
  }
}

/** OTLP's span flags: the trace flags, and whether the parent was remote. */
function spanFlags(traceFlags: number, isRemote: boolean | undefined): number {
  return (traceFlags & 0xff) | 0x100 | (isRemote ? 0x200 : 0);
}

/** A span's first fields (1-6): ids, trace state, parent, name, kind. */
function spanHead(
  w: Writer,
  traceId: string,
  spanId: string,
  traceState: TraceState | undefined,
  parent: SpanContext | undefined,
  name: string,
  kind: SpanKind | undefined,
): void {
  w.tag(1, 2);
  w.hex(traceId);
  w.tag(2, 2);
  w.hex(spanId);
  const state = traceState?.serialize();
  if (state) {
    w.tag(3, 2);
    w.string(state);
  }
  if (parent?.spanId) {
    w.tag(4, 2);
    w.hex(parent.spanId);
  }
  w.tag(5, 2);
  w.string(name);
  const k = kind == null ? 0 : kind + 1;
  if (k !== 0) {
    w.tag(6, 0);
    w.uint32(k);
  }
}

/** A span's last fields (15-16): its status, and its flags. */
function spanTail(
  w: Writer,
  message: string | undefined,
  code: number,
  traceFlags: number,
  parent: SpanContext | undefined,
): void {
  w.tag(15, 2);
  const status = w.begin();
  if (message) {
    w.tag(2, 2);
    w.string(message);
  }
  w.tag(3, 0);
  w.uint32(code);
  w.end(status);
  w.tag(16, 5);
  w.fixed32(spanFlags(traceFlags, parent?.isRemote));
}

/**
 * A LeanSpan straight from its fields (the same bytes as span() through its ReadableSpan getters:
 * the attributes in their order, no links).
 */
export function leanSpan(w: Writer, s: LeanSpan): void {
  spanHead(w, s.traceId, s.spanId, s.traceState, s.parentSpanContext, s.name, s.kind);
  w.tag(7, 1);
  w.timeMs(s.startMs);
  w.tag(8, 1);
  w.timeMs(s.endMs);
  const attrs = s.attrs;
  const n = 2 * s.attributeCount;
  for (let i = 0; i < n; i += 2) w.attribute(9, attrs![i] as string, attrs![i + 1]);
  w.tag(10, 0);
  w.uint32(s.droppedAttributesCount);
  const events = s.leanEvents;
  if (events)
    for (const e of events) {
      w.tag(11, 2);
      const at = w.begin();
      w.tag(1, 1);
      w.timeMs(e.ms);
      w.tag(2, 2);
      w.string(e.name);
      if (e.attributes) attributes(w, e.attributes, 3);
      w.tag(4, 0);
      w.uint32(e.droppedAttributesCount);
      w.end(at);
    }
  w.tag(12, 0);
  w.uint32(s.droppedEventsCount);
  w.tag(14, 0);
  w.uint32(0);
  spanTail(w, s.statusMessage, s.statusCode, s.traceFlags, s.parentSpanContext);
}

/**
 * A span as encodeAtEnd wrote it, what the batch processor holds until the export: its `Span`
 * message (bytes [start, end) of a slab), what the processor reads (spanContext().traceFlags, the
 * resource) and what the export groups by (resource, scope). Not a whole ReadableSpan: only the
 * SDK's batch processor and protobufSpanExporter below ever see one (sdk.ts wires them so); the
 * ids are read back from the bytes when asked. One small object per waiting span, where a
 * LeanSpan with its id strings was about six times the bytes for the garbage collector to copy
 * and promote while the batch fills.
 */
export class EncodedSpan implements Pick<ReadableSpan, 'resource' | 'instrumentationScope'> {
  constructor(
    readonly bytes: Buffer,
    readonly start: number,
    readonly end: number,
    readonly traceFlags: number,
    readonly resource: ReadableSpan['resource'],
    readonly instrumentationScope: ReadableSpan['instrumentationScope'],
    /** The slab written into: told when the span's bytes have been copied into an export. */
    readonly slab: Slab,
  ) {}

  /** Itself: traceFlags is a field, the ids are decoded from the message's first two fields. */
  spanContext(): SpanContext {
    return this as unknown as SpanContext;
  }

  /** Field 1 (trace_id): tag and length, then 16 bytes. */
  get traceId(): string {
    return this.bytes.toString('hex', this.start + 2, this.start + 18);
  }

  /** Field 2 (span_id): after the trace id, tag and length, then 8 bytes. */
  get spanId(): string {
    return this.bytes.toString('hex', this.start + 20, this.start + 28);
  }
}

const SLAB_SIZE = 256 * 1024;

/**
 * Where encodeAtEnd writes: slabs of 256 KB, reused once every span written into one has been
 * copied into an export (protobufSpanExporter tells them). Fresh slabs for every few hundred
 * spans were memory outside the heap that the garbage collector frees only in a full collection
 * (their spans wait for the batch long enough to be promoted), and its growth set off full
 * collections: a traced server ran about eight times as many as one without tracing. A span the
 * processor drops (its queue full) never reaches an export: its slab is then left to the
 * garbage collector, as all were before.
 */
export class Slab {
  readonly writer = new Writer(Buffer.allocUnsafeSlow(SLAB_SIZE));
  /** Spans written into it, and those of them copied into an export since. */
  written = 0;
  copied = 0;

  /** One of its spans was copied into an export: the slab is free once all were, and it is full. */
  release(): void {
    this.copied++;
    if (this !== slab && this.copied === this.written) recycle(this);
  }
}

/** Slabs free for reuse (a few: a burst past them gets fresh ones, left to the collector). */
const freeSlabs: Slab[] = [];
let slab = new Slab();

function recycle(s: Slab): void {
  // A slab whose writer grew past 1 MB for a huge span (content opt-in) was replaced, not kept.
  if (freeSlabs.length < 8 && s.writer.buf.length <= 1024 * 1024) freeSlabs.push(s);
}

/** The slab in use is full (or grew too large): the next one, a free one when there is one. */
function nextSlab(): void {
  const full = slab;
  slab = freeSlabs.pop() ?? new Slab();
  slab.writer.pos = 0;
  slab.written = 0;
  slab.copied = 0;
  if (full.copied === full.written) recycle(full);
}

/**
 * A LeanSpan as it ends, written as its `Span` message into the current slab (the export then
 * copies its bytes): what the export would have written (leanSpan), earlier. Set as the tracer's
 * `encode` by sdk.ts with the protobuf exporter only: the processor gets the EncodedSpan, and the
 * LeanSpan with its attributes and events is let go.
 */
export function encodeAtEnd(s: LeanSpan): ReadableSpan {
  // A span is a few hundred bytes (more under the content opt-in: the writer grows then, and the
  // spans already in the slab keep the old one).
  if (slab.writer.buf.length - slab.writer.pos < 16 * 1024) nextSlab();
  const at = slab;
  const w = at.writer;
  const start = w.pos;
  leanSpan(w, s);
  at.written++;
  const encoded = new EncodedSpan(w.buf, start, w.pos, s.traceFlags, s.resource, s.instrumentationScope, at);
  // One huge span (a long history under the content opt-in) does not leave a huge slab in use.
  if (w.buf.length > 1024 * 1024) nextSlab();
  return encoded as unknown as ReadableSpan;
}

function span(w: Writer, s: ReadableSpan): void {
  if (s instanceof EncodedSpan) {
    const n = s.end - s.start;
    w.ensure(n);
    s.bytes.copy(w.buf, w.pos, s.start, s.end);
    w.pos += n;
    return;
  }
  if (s instanceof LeanSpan) {
    leanSpan(w, s);
    return;
  }
  const ctx = s.spanContext();
  spanHead(w, ctx.traceId, ctx.spanId, ctx.traceState, s.parentSpanContext, s.name, s.kind);
  w.tag(7, 1);
  w.time(s.startTime);
  w.tag(8, 1);
  w.time(s.endTime);
  if (s.attributes) attributes(w, s.attributes, 9);
  w.tag(10, 0);
  w.uint32(s.droppedAttributesCount);
  for (const e of s.events) {
    w.tag(11, 2);
    const at = w.begin();
    w.tag(1, 1);
    w.time(e.time);
    w.tag(2, 2);
    w.string(e.name);
    if (e.attributes) attributes(w, e.attributes, 3);
    w.tag(4, 0);
    w.uint32(e.droppedAttributesCount || 0);
    w.end(at);
  }
  w.tag(12, 0);
  w.uint32(s.droppedEventsCount);
  for (const link of s.links) {
    w.tag(13, 2);
    const at = w.begin();
    const c = link.context;
    w.tag(1, 2);
    w.hex(c.traceId);
    w.tag(2, 2);
    w.hex(c.spanId);
    const state = c.traceState?.serialize();
    if (state) {
      w.tag(3, 2);
      w.string(state);
    }
    if (link.attributes) attributes(w, link.attributes, 4);
    w.tag(5, 0);
    w.uint32(link.droppedAttributesCount || 0);
    w.tag(6, 5);
    w.fixed32(spanFlags(c.traceFlags, c.isRemote));
    w.end(at);
  }
  w.tag(14, 0);
  w.uint32(s.droppedLinksCount);
  spanTail(w, s.status.message, s.status.code, ctx.traceFlags, s.parentSpanContext);
}

const writer = new Writer();

/**
 * ExportTraceServiceRequest: spans grouped by resource, then by instrumentation scope (by
 * identity, in order of first appearance), as the library groups them. A copy of its own.
 */
export function serializeSpans(spans: readonly ReadableSpan[]): Uint8Array {
  const bytes = serializeInto(spans, writer);
  const out = new Uint8Array(bytes.length);
  out.set(bytes);
  if (writer.buf.length > 4 * 1024 * 1024) writer.buf = Buffer.allocUnsafe(64 * 1024);
  return out;
}

/** The same bytes, in `w`'s buffer (valid until `w` is written again). */
function serializeInto(spans: readonly ReadableSpan[], w: Writer): Uint8Array {
  const byResource = new Map<
    ReadableSpan['resource'],
    Map<ReadableSpan['instrumentationScope'], ReadableSpan[]>
  >();
  for (const s of spans) {
    let scopes = byResource.get(s.resource);
    if (!scopes) byResource.set(s.resource, (scopes = new Map()));
    let list = scopes.get(s.instrumentationScope);
    if (!list) scopes.set(s.instrumentationScope, (list = []));
    list.push(s);
  }
  w.pos = 0;
  for (const [resource, scopes] of byResource) {
    w.tag(1, 2);
    const rs = w.begin();
    w.tag(1, 2);
    const res = w.begin();
    if (resource.attributes) attributes(w, resource.attributes, 1);
    w.tag(2, 0);
    w.uint32(0);
    w.end(res);
    for (const list of scopes.values()) {
      w.tag(2, 2);
      const ss = w.begin();
      const scope = list[0]!.instrumentationScope;
      w.tag(1, 2);
      const sc = w.begin();
      w.tag(1, 2);
      w.string(scope.name);
      if (scope.version) {
        w.tag(2, 2);
        w.string(scope.version);
      }
      const extra = scope as { attributes?: Record<string, Value>; droppedAttributesCount?: number };
      if (extra.attributes) attributes(w, extra.attributes, 3);
      if (extra.droppedAttributesCount) {
        w.tag(4, 0);
        w.uint32(extra.droppedAttributesCount);
      }
      w.end(sc);
      for (const s of list) {
        w.tag(2, 2);
        if (s instanceof EncodedSpan) {
          // Its length known: written before the bytes (a span is past 127 bytes, so begin/end
          // would move it to make room for a second length byte).
          const n = s.end - s.start;
          w.uint32(n);
          w.ensure(n);
          s.bytes.copy(w.buf, w.pos, s.start, s.end);
          w.pos += n;
          continue;
        }
        const at = w.begin();
        span(w, s);
        w.end(at);
      }
      if (scope.schemaUrl) {
        w.tag(3, 2);
        w.string(scope.schemaUrl);
      }
      w.end(ss);
    }
    if (resource.schemaUrl) {
      w.tag(3, 2);
      w.string(resource.schemaUrl);
    }
    w.end(rs);
  }
  return w.buf.subarray(0, w.pos);
}

/**
 * The OTLP/HTTP protobuf span exporter: the library's own (as @opentelemetry/exporter-trace-otlp-proto
 * builds it: the same transport, configuration from the OTEL_EXPORTER_OTLP_* variables, content
 * type and self-observability name) with serializeSpans for the request body.
 */
export function protobufSpanExporter(url: string): SpanExporter {
  // Each export is written into a buffer of its own that goes back to `idle` once the export has
  // ended (the transport holds the bytes until then: retries, compression): no copy, and no
  // fresh memory per export (a 300 KB batch in new memory is ~75 page faults, which cost more
  // than encoding it). More than a few exports at once (forced flushes) get buffers of their own.
  const idle: Writer[] = [];
  let current: Writer | undefined;
  const base = new OTLPExporterBase<ReadableSpan[]>(
    createOtlpHttpExportDelegate(
      convertLegacyHttpOptions({ url }, 'TRACES', 'v1/traces', { 'Content-Type': 'application/x-protobuf' }),
      {
        // Called by export() below, synchronously, before anything is sent.
        serializeRequest: (spans: ReadableSpan[]) => serializeInto(spans, current ?? new Writer()),
        deserializeResponse: ProtobufTraceSerializer.deserializeResponse,
      },
      'otlp_http_span_exporter',
      TraceExporterMetricsHelper,
      undefined,
    ),
  );
  return {
    export(spans, done) {
      const w = idle.pop() ?? new Writer();
      current = w;
      try {
        base.export(spans, (result) => {
          if (idle.length < 4 && w.buf.length <= 4 * 1024 * 1024) idle.push(w);
          done(result);
        });
      } finally {
        current = undefined;
        // Their bytes are in the export's buffer now (or the export was refused: the batch
        // processor drops them then): their slabs may be written again.
        for (const s of spans) if (s instanceof EncodedSpan) s.slab.release();
      }
    },
    forceFlush: () => base.forceFlush(),
    shutdown: () => base.shutdown(),
  };
}
