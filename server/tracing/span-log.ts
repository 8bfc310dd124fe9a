/**
 * The process's log of ended spans: what the SDK's BatchSpanProcessor held as span objects, kept
 * as compact records appended to one byte buffer. A request keeps only what must exist while it
 * runs (its ids, start times and a few numbers: sdk.ts's ServerSpan); as each of its spans ends,
 * its facts are written once, one after the other, at the log's write head (the end of the last
 * record written, so always the same few warm cache lines): ids and names as their bytes, times as
 * float64, attribute keys as the index of a key seen before. Nothing of it is an object the garbage
 * collector copies or promotes while the span waits for its batch.
 *
 * At export the batch's records are read back in order into LeanSpans (lean.ts: the SDK's limits
 * applied as its Span applies them) and handed to the exporter, protobuf or JSON: the span objects
 * and their encoding are made in one loop over the batch, warm code, where they were made one
 * request at a time among 32 interleaved streams (each touch cold: 3-4x the CPU of the same calls
 * in a loop, bench/HISTORY.md).
 *
 * The batch processor's behaviour is kept (OTEL_BSP_* read as its shim reads them): at most
 * `maxQueueSize` spans wait (a span past it is dropped), a batch of `maxExportBatchSize` is
 * exported as soon as it is there, else `scheduledDelayMillis` after the first span waits, one
 * export at a time, each given up after `exportTimeoutMillis`; forceFlush exports all in batches,
 * shutdown flushes, then stops the exporter, and drops every later span. Loaded with the SDK only.
 */
import type { AttributeValue, TraceState } from '@opentelemetry/api';
import { ExportResultCode, getNumberFromEnv, TraceState as W3CTraceState } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { ownString } from '../../protocol/own-string.js';
import { type LeanSpan, type LeanTracer, leanSpanOf } from './lean.js';
import {
  EncodedSpan,
  HEX,
  leanSpan,
  MAX_INT64,
  MIN_INT64,
  type Slab,
  shortAscii,
  Writer,
} from './otlp-proto.js';
import type { EventValue } from './types.js';

/** Buffer's own UTF-8 writer (what `write(s, offset, 'utf8')` calls after checking its arguments). */
const utf8Write: (this: Buffer, s: string, offset: number) => number =
  (Buffer.prototype as unknown as { utf8Write?: (s: string, offset: number) => number }).utf8Write ??
  function (this: Buffer, s: string, offset: number) {
    return this.write(s, offset, 'utf8');
  };

/** A float64's bytes, through one shared array (no DataView, no argument checks). */
const F64 = new Float64Array(1);
const F64_BYTES = new Uint8Array(F64.buffer);

// Items of a record, each a tag byte (then its fields).
const END = 0;
const ATTRIBUTE = 1;
const EVENT = 2;
const EVENT_END = 3;
const STATUS = 4;
// Value types of an attribute.
const STRING = 1;
const NUMBER = 2;
const TRUE = 3;
const FALSE = 4;
const STRINGS = 5;
const OTHER = 6;
/** A string of the log's dictionary: its index follows. */
const STRING_REF = 7;
/** The dictionary's bounds: values (a few dozen repeat: names, models, routes, agents), and their length. */
const VALUE_ROOM = 4096;
const VALUE_LONGEST = 256;
const VALUE_CHARS = 128 * 1024;
/** The most key-and-value pairs whose bytes are kept (SpanLog.pairBytes). */
const PAIR_ROOM = 4096;
// A key: its index + 2 in KEYS; 1: the key's text follows (past KEY_ROOM keys).
const KEY_TEXT = 1;
const KEY_ROOM = 1024;

/** Attribute keys seen, by index (code's constants: a few dozen; bounded all the same). */
const KEYS: string[] = [];
const KEY_INDEX = new Map<string, number>();
/** A key's index (-1: past KEY_ROOM keys, or longer than 256: written as its text). */
export function keyOf(key: string): number {
  let k = KEY_INDEX.get(key);
  if (k === undefined) {
    if (KEYS.length >= KEY_ROOM || key.length > 256) return -1;
    k = KEYS.length;
    KEYS.push(key);
    KEY_INDEX.set(key, k);
  }
  return k;
}

/** Per key, its KeyValue key field as bytes (0x0a, length, UTF-8), made at its first export. */
const KEY_BYTES: Uint8Array[] = [];

function keyBytesOf(index: number): Uint8Array {
  let bytes = KEY_BYTES[index];
  if (bytes === undefined) {
    const utf8 = Buffer.from(KEYS[index]!, 'utf8');
    const head = lengthPrefix(0x0a, utf8.length);
    bytes = new Uint8Array(head.length + utf8.length);
    bytes.set(head);
    bytes.set(utf8, head.length);
    KEY_BYTES[index] = bytes;
  }
  return bytes;
}

/** A KeyValue's bytes after its tag: its length, the key field, the value field (tag 2). */
function pairBytesOf(key: Uint8Array, any: Uint8Array): Uint8Array {
  const value = lengthPrefix(0x12, any.length);
  const n = key.length + value.length + any.length;
  const head = lengthPrefix(0, n).slice(1);
  const out = new Uint8Array(head.length + n);
  out.set(head);
  out.set(key, head.length);
  out.set(value, head.length + key.length);
  out.set(any, head.length + key.length + value.length);
  return out;
}

/** A tag byte and a length as a varint. */
function lengthPrefix(tag: number, n: number): number[] {
  const out = [tag];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return out;
}

const NO_SLAB = { release() {} } as unknown as Slab;

/** The batch processor's settings, as its shim reads them: given, else OTEL_BSP_*, else the defaults. */
export interface LogSettings {
  maxQueueSize: number;
  maxExportBatchSize: number;
  scheduledDelayMillis: number;
  exportTimeoutMillis: number;
}

export function logSettings(given: Partial<LogSettings> = {}): LogSettings {
  const maxQueueSize = given.maxQueueSize ?? getNumberFromEnv('OTEL_BSP_MAX_QUEUE_SIZE') ?? 2048;
  const batch = given.maxExportBatchSize ?? getNumberFromEnv('OTEL_BSP_MAX_EXPORT_BATCH_SIZE') ?? 512;
  return {
    maxQueueSize,
    // As the SDK's: a batch larger than the queue is the queue.
    maxExportBatchSize: Math.min(batch, maxQueueSize),
    scheduledDelayMillis: given.scheduledDelayMillis ?? getNumberFromEnv('OTEL_BSP_SCHEDULE_DELAY') ?? 5000,
    exportTimeoutMillis: given.exportTimeoutMillis ?? getNumberFromEnv('OTEL_BSP_EXPORT_TIMEOUT') ?? 30000,
  };
}

export class SpanLog {
  private buf: Buffer = Buffer.allocUnsafe(64 * 1024);
  /** The write head (the end of the last byte written), and the end of the last record closed. */
  private pos = 0;
  private committed = 0;
  /** The open record's first byte (-1: none open). */
  private recordStart = -1;
  /** Records closed and waiting for export. */
  private waiting = 0;
  /** The open record is dropped when closed (the queue was full, or shut down). */
  private dropping = false;
  private exporting = false;
  private timer: NodeJS.Timeout | undefined;
  private shutdownPromise: Promise<void> | undefined;
  readonly settings: LogSettings;
  /** Spans dropped because the queue was full (what the SDK's processor counts for its diag line). */
  dropped = 0;
  /** Spans the protobuf export wrote through a LeanSpan (the limits trimmed them; tests). */
  throughLeanSpans = 0;
  /** The longest string value kept (the tracer's attribute value length limit). */
  private readonly valueLimit: number;
  /**
   * Short string values written before, by index: a value that repeats (a model, a route, an
   * agent's name, a finish reason, an event's name) is written as its index and read back as the
   * same string, no copy, no new string at export (where the protobuf writer then finds its
   * bytes by identity, otlp-proto.ts's Writer.attribute). Emptied when nothing waits and it is
   * full; values known to change every request (ids) are never put in it.
   */
  private values: string[] = [];
  private valueIndex = new Map<string, number>();
  private valueChars = 0;

  constructor(
    private readonly exporter: SpanExporter,
    /** The resource, scope and limits the spans are read back with. */
    private readonly tracer: LeanTracer,
    settings: Partial<LogSettings> = {},
    /**
     * The exporter is otlp-proto.ts's protobuf one: a batch's records are written straight into
     * their protobuf bytes (EncodedSpans), no span object made; else they are read back as
     * LeanSpans (the JSON exporter reads those).
     */
    private readonly protobuf = false,
  ) {
    this.settings = logSettings(settings);
    this.valueLimit = tracer.limits.attributeValueLength;
    const l = tracer.limits;
    // The direct path writes what the limits leave whole; a record they would trim takes the
    // LeanSpan path (the SDK's rules): checked per record, cheap (counts and a stamp per key).
    this.direct = l.attributeValueLength >= VALUE_LONGEST;
  }

  /** Whether a record may be written straight into bytes (the limits allow every short value). */
  private readonly direct: boolean;

  /** Spans waiting for export. */
  get queued(): number {
    return this.waiting;
  }

  // Writing a record: open, then attributes, events and a status in any order, then close.

  /**
   * Opens a span's record. `parentSpanId`: its parent's (none: a root span), `parentRemote` whether
   * that parent is the client's. Times are epoch milliseconds.
   */
  open(
    kind: number,
    traceFlags: number,
    traceId: string,
    spanId: string,
    parentSpanId: string | undefined,
    parentRemote: boolean,
    traceState: TraceState | undefined,
    name: string,
    startMs: number,
    endMs: number,
  ): void {
    if (this.recordStart >= 0) this.pos = this.recordStart; // a record never closed (a throw): gone
    this.dropping = this.shutdownPromise !== undefined || this.waiting >= this.settings.maxQueueSize;
    if (this.dropping) this.dropped++;
    this.recordStart = this.pos;
    this.ensure(8);
    const buf = this.buf;
    buf[this.pos++] = kind;
    buf[this.pos++] = traceFlags;
    buf[this.pos++] = parentSpanId === undefined ? 0 : parentRemote ? 2 : 1;
    this.ascii(traceId);
    this.ascii(spanId);
    if (parentSpanId !== undefined) this.ascii(parentSpanId);
    this.string(traceState === undefined ? '' : traceState.serialize());
    this.ensure(1);
    this.stringValue(name, false);
    this.f64(startMs);
    this.f64(endMs);
  }

  /** An attribute of the open record (the SDK's setAttribute: null and undefined ignored). */
  setAttribute(key: string, value: AttributeValue | undefined | null): void {
    if (value == null) return;
    this.ensure(2);
    this.buf[this.pos++] = ATTRIBUTE;
    this.keyValue(key, value);
  }

  /** An event of the open record (at `ms`), with its attributes as given. */
  event(name: string, ms: number, attributes?: Readonly<Record<string, unknown>>): void {
    this.eventOpen(name, ms);
    if (attributes)
      for (const key in attributes) {
        const v = attributes[key];
        if (v != null) this.eventAttribute(key, v as AttributeValue);
      }
    this.eventClose();
  }

  /** An event opened: its attributes follow (eventAttribute), then eventClose. */
  eventOpen(name: string, ms: number): void {
    this.ensure(1);
    this.buf[this.pos++] = EVENT;
    this.ensure(1);
    this.stringValue(name, false);
    this.f64(ms);
  }

  eventAttribute(key: string, value: AttributeValue): void {
    this.ensure(1);
    this.buf[this.pos++] = ATTRIBUTE;
    this.keyValue(key, value);
  }

  eventClose(): void {
    this.ensure(1);
    this.buf[this.pos++] = EVENT_END;
  }

  /** The span's status (the last one written stands, as the SDK's setStatus on an unset status). */
  status(code: number, message: string | undefined): void {
    this.ensure(2);
    const buf = this.buf;
    buf[this.pos++] = STATUS;
    buf[this.pos++] = code;
    if (message === undefined) this.varint(0);
    else {
      this.varint(1);
      this.string(message);
    }
  }

  /** Closes the open record: it waits for export (or is dropped: the queue was full). */
  close(): void {
    if (this.recordStart < 0) return;
    if (this.dropping) {
      this.pos = this.recordStart;
      this.recordStart = -1;
      return;
    }
    this.ensure(1);
    this.buf[this.pos++] = END;
    this.committed = this.pos;
    this.recordStart = -1;
    this.waiting++;
    this.maybeExport();
  }

  /**
   * An attribute of the open record by its key's index (keyOf: sdk.ts looks its keys up once):
   * no look-up per attribute, and a string value that is the very string this key had last time
   * (a route's name, the provider, an API) is found by identity, without hashing it.
   */
  set(k: number, value: AttributeValue | undefined | null): void {
    if (value == null) return;
    this.indexed(k, value);
  }

  /**
   * An attribute of the open event by its key's index (keyOf): the bytes eventAttribute writes
   * for that key, without looking the key up (sdk.ts's effects: a few a request).
   */
  eventSet(k: number, value: AttributeValue): void {
    this.indexed(k, value);
  }

  private indexed(k: number, value: AttributeValue): void {
    this.ensure(8);
    this.buf[this.pos++] = ATTRIBUTE;
    this.varint(k + 2);
    if (typeof value === 'string') {
      if (this.lastString[k] === value) {
        this.buf[this.pos++] = STRING_REF;
        this.varint(this.lastRef[k]!);
        return;
      }
      const ref = this.stringValue(value);
      if (ref >= 0) {
        this.lastString[k] = value;
        this.lastRef[k] = ref;
      }
      return;
    }
    this.value(value);
  }

  /** Per key index, the string value it had last and that value's dictionary index. */
  private lastString: Array<string | undefined> = [];
  private lastRef: number[] = [];

  private keyValue(key: string, value: AttributeValue): void {
    this.key(key);
    this.ensure(1);
    if (typeof value === 'string') this.stringValue(value);
    else this.value(value);
  }

  /** A value other than a string (a number, a boolean, an array). */
  private value(value: AttributeValue): void {
    const t = typeof value;
    if (t === 'number') {
      this.buf[this.pos++] = NUMBER;
      this.f64(value as number);
    } else if (t === 'boolean') this.buf[this.pos++] = value ? TRUE : FALSE;
    else if (Array.isArray(value) && value.every((v) => typeof v === 'string')) {
      this.buf[this.pos++] = STRINGS;
      this.varint(value.length);
      for (const s of value as string[]) this.string(this.cut(s));
    } else {
      // Anything else an AttributeValue may be (numbers' or booleans' arrays): as JSON.
      this.buf[this.pos++] = OTHER;
      this.string(JSON.stringify(value) ?? 'null');
    }
  }

  /** A key: its index among the keys seen (code's constants), or its text past KEY_ROOM of them. */
  private key(key: string): void {
    const k = keyOf(key);
    if (k < 0) {
      this.varint(KEY_TEXT);
      this.string(key);
    } else this.varint(k + 2);
  }

  /** A string value: its index when it is (or may go) in the dictionary (returned; else -1), else its bytes. */
  private stringValue(s: string, cut = true): number {
    if (s.length <= VALUE_LONGEST) {
      let i = this.valueIndex.get(s);
      if (i === undefined && this.values.length < VALUE_ROOM && this.valueChars + s.length <= VALUE_CHARS) {
        i = this.values.length;
        // A copy of its own: a slice of a request's string (its URL) would hold all of it.
        const own = ownString(s);
        this.values.push(own);
        this.valueIndex.set(own, i);
        this.valueChars += s.length;
      }
      if (i !== undefined) {
        this.buf[this.pos++] = STRING_REF;
        this.varint(i);
        return i;
      }
    }
    this.buf[this.pos++] = STRING;
    this.string(cut ? this.cut(s) : s);
    return -1;
  }

  /** An attribute whose value changes every time (a request's id): its bytes, never in the dictionary. */
  setUniqueAttribute(key: string | number, value: string): void {
    this.ensure(2);
    this.buf[this.pos++] = ATTRIBUTE;
    // A key's index (keyOf) as key() writes it, or its text looked up.
    if (typeof key === 'number') this.varint(key + 2);
    else this.key(key);
    this.ensure(1);
    this.buf[this.pos++] = STRING;
    this.string(this.cut(value));
  }

  private cut(s: string): string {
    return s.length > this.valueLimit ? s.slice(0, this.valueLimit) : s;
  }

  // The buffer.

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  private varint(v: number): void {
    this.ensure(5);
    const buf = this.buf;
    while (v > 0x7f) {
      buf[this.pos++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    buf[this.pos++] = v;
  }

  private f64(v: number): void {
    this.ensure(8);
    F64[0] = v;
    const buf = this.buf;
    const p = this.pos;
    for (let i = 0; i < 8; i++) buf[p + i] = F64_BYTES[i]!;
    this.pos = p + 8;
  }

  /** An id's hex text (ASCII, its length known to the reader: 32 or 16). */
  private ascii(s: string): void {
    const n = s.length;
    this.ensure(n + 1);
    const buf = this.buf;
    let p = this.pos;
    buf[p++] = n;
    for (let i = 0; i < n; i++) buf[p++] = s.charCodeAt(i);
    this.pos = p;
  }

  /** A string as its UTF-8 bytes after their length (a varint). */
  private string(s: string): void {
    this.ensure(s.length * 3 + 6);
    const at = shortAscii(this.buf, this.pos, s);
    if (at >= 0) {
      this.pos = at;
      return;
    }
    const bytes = Buffer.byteLength(s, 'utf8');
    this.varint(bytes);
    this.pos += utf8Write.call(this.buf, s, this.pos);
  }

  // Reading records back (at export).

  private readPos = 0;

  private readVarint(): number {
    const buf = this.buf;
    let v = 0;
    let shift = 0;
    let b: number;
    do {
      b = buf[this.readPos++]!;
      v += (b & 0x7f) * 2 ** shift;
      shift += 7;
    } while (b & 0x80);
    return v;
  }

  private readString(): string {
    const n = this.readVarint();
    const at = this.readPos;
    this.readPos += n;
    return n === 0 ? '' : this.buf.toString('utf8', at, at + n);
  }

  private readAscii(): string {
    const n = this.buf[this.readPos++]!;
    const at = this.readPos;
    this.readPos += n;
    return this.buf.toString('latin1', at, at + n);
  }

  private readF64(): number {
    const buf = this.buf;
    const p = this.readPos;
    for (let i = 0; i < 8; i++) F64_BYTES[i] = buf[p + i]!;
    this.readPos = p + 8;
    return F64[0]!;
  }

  private readKey(): string {
    const k = this.readVarint();
    return k === KEY_TEXT ? this.readString() : KEYS[k - 2]!;
  }

  private readValue(): EventValue {
    const type = this.buf[this.readPos++]!;
    switch (type) {
      case STRING:
        return this.readString();
      case STRING_REF:
        return this.values[this.readVarint()]!;
      case NUMBER:
        return this.readF64();
      case TRUE:
        return true;
      case FALSE:
        return false;
      case STRINGS: {
        const n = this.readVarint();
        const out: string[] = [];
        for (let i = 0; i < n; i++) out.push(this.readString());
        return out;
      }
      default:
        return JSON.parse(this.readString()) as EventValue;
    }
  }

  /** The record at readPos, as the LeanSpan it describes (the limits applied as it is built). */
  private readRecord(): LeanSpan {
    const buf = this.buf;
    const kind = buf[this.readPos++]!;
    const traceFlags = buf[this.readPos++]!;
    const parentKind = buf[this.readPos++]!;
    const traceId = this.readAscii();
    const spanId = this.readAscii();
    const parentSpanId = parentKind === 0 ? undefined : this.readAscii();
    const state = this.readString();
    const traceState = state === '' ? undefined : new W3CTraceState(state);
    const name = this.readValue() as string;
    const startMs = this.readF64();
    const endMs = this.readF64();
    const parent =
      parentSpanId === undefined
        ? undefined
        : { traceId, spanId: parentSpanId, traceFlags, isRemote: parentKind === 2, traceState };
    const span = leanSpanOf(
      this.tracer,
      name,
      kind,
      traceId,
      spanId,
      traceFlags,
      traceState,
      parent,
      startMs,
    );
    let eventName: string | undefined;
    let eventMs = 0;
    let eventAttributes: Record<string, EventValue> | undefined;
    for (;;) {
      const tag = buf[this.readPos++]!;
      if (tag === END) break;
      if (tag === ATTRIBUTE) {
        const key = this.readKey();
        const value = this.readValue();
        if (eventName === undefined) span.setAttribute(key, value);
        else (eventAttributes ??= {})[key] = value;
      } else if (tag === EVENT) {
        eventName = this.readValue() as string;
        eventMs = this.readF64();
        eventAttributes = undefined;
      } else if (tag === EVENT_END) {
        span.addEvent(eventName!, eventAttributes, eventMs);
        eventName = undefined;
      } else if (tag === STATUS) {
        const code = buf[this.readPos++]!;
        const given = buf[this.readPos++] === 1;
        span.setStatus(given ? { code, message: this.readString() } : { code });
      }
    }
    span.endAt(endMs);
    return span;
  }

  /**
   * The `n` oldest waiting records, read back as spans (or their bytes, `protobuf`); their
   * records are then free (what waits behind them moves to the front: the write head stays at
   * the start of the buffer).
   */
  private take(n: number): ReadableSpan[] {
    const spans: ReadableSpan[] = new Array(n);
    this.readPos = 0;
    if (this.protobuf) {
      // A writer of the batch's own (the export copies the bytes out as it starts, synchronously,
      // unless the resource is still detecting: then the next batch must not write over them).
      const resource = this.tracer.resource as { asyncAttributesPending?: boolean };
      const w = resource.asyncAttributesPending ? new Writer() : this.batchWriter;
      w.pos = 0;
      for (let i = 0; i < n; i++) {
        const start = w.pos;
        const at = this.readPos;
        if (!this.direct || !this.encodeRecord(w)) {
          w.pos = start;
          this.readPos = at;
          leanSpan(w, this.readRecord());
          this.throughLeanSpans++;
        }
        spans[i] = new EncodedSpan(
          w.buf,
          start,
          w.pos,
          this.buf[at + 1]!,
          this.tracer.resource,
          this.tracer.scope,
          NO_SLAB,
        ) as unknown as ReadableSpan;
      }
      // The writer may have grown: every span points at its final buffer.
      for (let i = 0; i < n; i++) (spans[i] as unknown as { bytes: Buffer }).bytes = w.buf;
    } else for (let i = 0; i < n; i++) spans[i] = this.readRecord();
    const rest = this.pos - this.readPos;
    if (rest > 0) this.buf.copyWithin(0, this.readPos, this.pos);
    this.pos = rest;
    this.committed -= this.readPos;
    if (this.recordStart >= 0) this.recordStart -= this.readPos;
    this.waiting -= n;
    // Nothing refers to the dictionary now: a full one starts again (ids that changed, agents).
    // Full by count or by characters: the characters fill first when values average over 32 of
    // them (model paths, 256-character ids a client or upstream sends), and a dictionary that
    // never started again wrote every value first seen after it as text, for the process's life.
    if (
      this.waiting === 0 &&
      this.recordStart < 0 &&
      (this.values.length >= VALUE_ROOM || this.valueChars > VALUE_CHARS - VALUE_LONGEST)
    ) {
      this.values = [];
      this.valueIndex = new Map();
      this.valueChars = 0;
      this.valueBytes = [];
      this.pairBytes = new Map();
      this.lastPairValue.fill(-1);
      this.lastPair = [];
      this.lastString = [];
      this.lastRef = [];
    }
    // A buffer grown past 4 MB (long content under the opt-in) goes once nothing waits in it.
    if (this.pos === 0 && this.buf.length > 4 * 1024 * 1024) this.buf = Buffer.allocUnsafe(64 * 1024);
    return spans;
  }

  /** Where a batch's records are written as protobuf (reused: each export copies them out first). */
  private readonly batchWriter = new Writer();
  /** Per dictionary value, its AnyValue as bytes (0x0a, length, UTF-8); emptied with the dictionary. */
  private valueBytes: Uint8Array[] = [];
  /**
   * Per key and dictionary value (key index * VALUE_ROOM + value index), the KeyValue's bytes
   * after its tag (its length, key, value): the pairs a request writes again and again (the
   * operation, the provider, the model, the route, the upstream, the agent) copied in one go.
   * Emptied with the dictionary, and when it holds more than PAIR_ROOM.
   */
  private pairBytes = new Map<number, Uint8Array>();
  /** Per key index, the dictionary value of its last pair and that pair's bytes (-1: none). */
  private lastPairValue = new Int32Array(KEY_ROOM).fill(-1);
  private lastPair: Array<Uint8Array | undefined> = [];
  /** Per key index, the record it was last seen in (a key twice in one span takes the LeanSpan path). */
  private keyStamp = new Int32Array(KEY_ROOM);
  private stamp = 0;

  /**
   * The record at readPos written as its protobuf `Span` message (the bytes leanSpan writes for
   * the LeanSpan readRecord would make), straight from the log's bytes: ids from their hex,
   * strings from the dictionary's cached bytes or copied as UTF-8, no object made. False when the
   * record needs the SDK's rules (a key twice, more attributes or events than the limits, a
   * status set twice, a value not a string, number, boolean or strings): the caller takes the
   * LeanSpan path for it.
   */
  private encodeRecord(w: Writer): boolean {
    const buf = this.buf;
    const limits = this.tracer.limits;
    const stamp = (this.stamp = (this.stamp + 1) | 0);
    const kind = buf[this.readPos++]!;
    const traceFlags = buf[this.readPos++]!;
    const parentKind = buf[this.readPos++]!;
    // trace_id, span_id
    w.tag(1, 2);
    this.hexOut(w);
    w.tag(2, 2);
    this.hexOut(w);
    let parentAt = -1;
    if (parentKind !== 0) {
      parentAt = this.readPos;
      this.readPos += 1 + buf[this.readPos]!;
    }
    const stateLength = this.readVarint();
    if (stateLength > 0) {
      w.tag(3, 2);
      this.bytesOut(w, this.readPos, stateLength);
      this.readPos += stateLength;
    }
    if (parentAt >= 0) {
      const end = this.readPos;
      this.readPos = parentAt;
      w.tag(4, 2);
      this.hexOut(w);
      this.readPos = end;
    }
    w.tag(5, 2);
    this.stringOut(w);
    w.tag(6, 0);
    w.uint32(kind + 1);
    w.tag(7, 1);
    w.timeMs(this.readF64());
    w.tag(8, 1);
    w.timeMs(this.readF64());
    let attributes = 0;
    let events = 0;
    let statusCode = 0;
    let statusAt = -1;
    // Attributes come before events in the message: events are written after, from their offsets.
    let firstEvent = -1;
    for (;;) {
      const tag = buf[this.readPos++]!;
      if (tag === END) break;
      if (tag === ATTRIBUTE) {
        if (++attributes > limits.attributeCount || !this.keyValueOut(w, 9, stamp)) return false;
      } else if (tag === EVENT) {
        if (firstEvent < 0) firstEvent = this.readPos - 1;
        if (++events > limits.eventCount) return false;
        this.skipEvent(limits.attributePerEventCount);
        if (this.readPos < 0) return false;
      } else if (tag === STATUS) {
        if (statusAt >= 0) return false;
        statusCode = buf[this.readPos++]!;
        statusAt = this.readPos;
        if (buf[this.readPos++] === 1) this.skip(this.readVarint());
      } else return false;
    }
    const end = this.readPos;
    w.tag(10, 0);
    w.uint32(0);
    if (firstEvent >= 0) {
      this.readPos = firstEvent;
      for (let i = 0; i < events; ) {
        const tag = buf[this.readPos++]!;
        if (tag === ATTRIBUTE) {
          this.readVarint();
          this.skipValue();
          continue;
        }
        if (tag === STATUS) {
          this.readPos++;
          if (buf[this.readPos++] === 1) this.skip(this.readVarint());
          continue;
        }
        // EVENT: time, name, attributes, dropped count.
        w.tag(11, 2);
        const at = w.begin();
        const nameAt = this.readPos;
        this.skipValue0();
        w.tag(1, 1);
        w.timeMs(this.readF64());
        const after = this.readPos;
        this.readPos = nameAt;
        w.tag(2, 2);
        this.stringOut(w);
        this.readPos = after;
        const eventStamp = (this.stamp = (this.stamp + 1) | 0);
        while (buf[this.readPos] === ATTRIBUTE) {
          this.readPos++;
          if (!this.keyValueOut(w, 3, eventStamp)) return false;
        }
        this.readPos++; // EVENT_END
        w.tag(4, 0);
        w.uint32(0);
        w.end(at);
        i++;
      }
    }
    w.tag(12, 0);
    w.uint32(0);
    w.tag(14, 0);
    w.uint32(0);
    w.tag(15, 2);
    const status = w.begin();
    if (statusAt >= 0 && buf[statusAt] === 1) {
      this.readPos = statusAt + 1;
      const n = this.readVarint();
      // Only an error keeps its message (LeanSpan.setStatus); an empty one is not written.
      if (n > 0 && statusCode === 2) {
        w.tag(2, 2);
        this.bytesOut(w, this.readPos, n);
      }
    }
    w.tag(3, 0);
    w.uint32(statusCode);
    w.end(status);
    w.tag(16, 5);
    w.fixed32((traceFlags & 0xff) | 0x100 | (parentKind === 2 ? 0x200 : 0));
    this.readPos = end;
    return true;
  }

  /** An id's hex text at readPos as its bytes (length-prefixed), from the log's ASCII. */
  private hexOut(w: Writer): void {
    const buf = this.buf;
    const n = buf[this.readPos++]!;
    const bytes = n >> 1;
    w.uint32(bytes);
    w.ensure(bytes);
    const out = w.buf;
    let p = w.pos;
    let at = this.readPos;
    for (let i = 0; i < bytes; i++) {
      out[p++] = (HEX[buf[at]! & 0x7f]! << 4) | HEX[buf[at + 1]! & 0x7f]!;
      at += 2;
    }
    w.pos = p;
    this.readPos += n;
  }

  /** `n` bytes of the log at `at`, length-prefixed. */
  private bytesOut(w: Writer, at: number, n: number): void {
    w.uint32(n);
    w.ensure(n);
    if (n < 64) {
      const out = w.buf;
      const buf = this.buf;
      let p = w.pos;
      for (let i = 0; i < n; i++) out[p++] = buf[at + i]!;
      w.pos = p;
    } else {
      this.buf.copy(w.buf, w.pos, at, at + n);
      w.pos += n;
    }
  }

  /**
   * Bytes as they are (a cached field): a short one byte by byte, a longer one (most pairs: 20-60
   * bytes) by the typed array's own copy, ~3x faster a byte from 16 bytes on (0.4 against 1.4 ns
   * in a loop; the export's largest frame was this copy).
   */
  private static copyOut(w: Writer, bytes: Uint8Array): void {
    const n = bytes.length;
    w.ensure(n);
    const out = w.buf;
    let p = w.pos;
    if (n >= 16) {
      out.set(bytes, p);
      w.pos = p + n;
      return;
    }
    for (let i = 0; i < n; i++) out[p++] = bytes[i]!;
    w.pos = p;
  }

  /** A string value at readPos (STRING or STRING_REF) as a length-prefixed UTF-8 field. */
  private stringOut(w: Writer): void {
    const type = this.buf[this.readPos++]!;
    if (type === STRING_REF) {
      const bytes = this.anyValueBytes(this.readVarint());
      // The AnyValue's bytes are 0x0a, the length, the UTF-8: the field's are the same past the tag.
      w.ensure(bytes.length);
      const out = w.buf;
      let p = w.pos;
      for (let i = 1; i < bytes.length; i++) out[p++] = bytes[i]!;
      w.pos = p;
      return;
    }
    const n = this.readVarint();
    this.bytesOut(w, this.readPos, n);
    this.readPos += n;
  }

  /** A dictionary value's AnyValue bytes (string_value), made at its first use. */
  private anyValueBytes(i: number): Uint8Array {
    let bytes = this.valueBytes[i];
    if (bytes === undefined) {
      const utf8 = Buffer.from(this.values[i]!, 'utf8');
      const head = lengthPrefix(0x0a, utf8.length);
      bytes = new Uint8Array(head.length + utf8.length);
      bytes.set(head);
      bytes.set(utf8, head.length);
      this.valueBytes[i] = bytes;
    }
    return bytes;
  }

  /**
   * An attribute at readPos (after its tag) as a KeyValue of field `field`; false when its key
   * was already written in this span or event (`stamp`), or its key or value is not of the
   * direct path's (the caller then takes the LeanSpan path).
   */
  private keyValueOut(w: Writer, field: number, stamp: number): boolean {
    const k = this.readVarint();
    if (k === KEY_TEXT) return false;
    const index = k - 2;
    if (this.keyStamp[index] === stamp) return false;
    this.keyStamp[index] = stamp;
    const buf = this.buf;
    const type = buf[this.readPos++]!;
    if (type === STRING_REF) {
      // A key and a value that repeat: the KeyValue's bytes made once, copied (its tag apart).
      const value = this.readVarint();
      // Most keys have the value they had last time (the operation, the provider, the route): no
      // look-up then.
      let bytes: Uint8Array | undefined;
      if (this.lastPairValue[index] === value) bytes = this.lastPair[index]!;
      else {
        const pair = index * VALUE_ROOM + value;
        bytes = this.pairBytes.get(pair);
        if (bytes === undefined) {
          bytes = pairBytesOf(keyBytesOf(index), this.anyValueBytes(value));
          if (this.pairBytes.size >= PAIR_ROOM) this.pairBytes.clear(); // a cache: the hot pairs come back
          this.pairBytes.set(pair, bytes);
        }
        this.lastPairValue[index] = value;
        this.lastPair[index] = bytes;
      }
      w.tag(field, 2);
      SpanLog.copyOut(w, bytes);
      return true;
    }
    const keyBytes = keyBytesOf(index);
    w.tag(field, 2);
    const kv = w.begin();
    SpanLog.copyOut(w, keyBytes);
    w.tag(2, 2);
    const any = w.begin();
    switch (type) {
      case STRING: {
        w.tag(1, 2);
        const n = this.readVarint();
        this.bytesOut(w, this.readPos, n);
        this.readPos += n;
        break;
      }
      case NUMBER: {
        const v = this.readF64();
        if (Number.isInteger(v) && v >= MIN_INT64 && v < MAX_INT64) {
          w.tag(3, 0);
          w.int64(v);
        } else {
          w.tag(4, 1);
          w.double(v);
        }
        break;
      }
      case TRUE:
      case FALSE:
        w.tag(2, 0);
        w.uint32(type === TRUE ? 1 : 0);
        break;
      case STRINGS: {
        w.tag(5, 2);
        const array = w.begin();
        const n = this.readVarint();
        for (let i = 0; i < n; i++) {
          w.tag(1, 2);
          const item = w.begin();
          w.tag(1, 2);
          const len = this.readVarint();
          this.bytesOut(w, this.readPos, len);
          this.readPos += len;
          w.end(item);
        }
        w.end(array);
        break;
      }
      default:
        return false;
    }
    w.end(any);
    w.end(kv);
    return true;
  }

  /**
   * `n` bytes on (a length read just before: `this.readPos += this.readVarint()` would add it to
   * readPos as it was before the varint).
   */
  private skip(n: number): void {
    this.readPos += n;
  }

  /** Past a value at readPos (its type byte first). */
  private skipValue(): void {
    const type = this.buf[this.readPos++]!;
    if (type === STRING || type === OTHER) this.skip(this.readVarint());
    else if (type === STRING_REF) this.readVarint();
    else if (type === NUMBER) this.readPos += 8;
    else if (type === STRINGS) {
      const n = this.readVarint();
      for (let i = 0; i < n; i++) this.skip(this.readVarint());
    }
  }

  /** Past a name (STRING or STRING_REF) at readPos. */
  private skipValue0(): void {
    this.skipValue();
  }

  /**
   * Past an event at readPos (after its tag), checking what the direct path needs: at most
   * `perEvent` attributes; readPos -1 when it has more.
   */
  private skipEvent(perEvent: number): void {
    this.skipValue();
    this.readPos += 8;
    let n = 0;
    while (this.buf[this.readPos] === ATTRIBUTE) {
      this.readPos++;
      this.readVarint();
      this.skipValue();
      if (++n > perEvent) {
        this.readPos = -1;
        return;
      }
    }
    this.readPos++; // EVENT_END
  }

  // Exporting (the batch processor's rules).

  /** A batch is full: exported now; else a timer, if none runs and no export does. */
  private maybeExport(): void {
    if (this.exporting) return;
    if (this.waiting >= this.settings.maxExportBatchSize) {
      this.exportLoop();
      return;
    }
    if (this.timer !== undefined) return;
    this.timer = setTimeout(() => this.exportLoop(), this.settings.scheduledDelayMillis);
    this.timer.unref();
  }

  private exportLoop(): void {
    this.exporting = true;
    this.exportOne()
      .catch(() => {
        // the spans are lost (the exporter's wrapper in sdk.ts says so in the log)
      })
      .finally(() => {
        this.exporting = false;
        if (this.waiting > 0) {
          this.clearTimer();
          this.maybeExport();
        }
      });
  }

  private clearTimer(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }

  /** One batch (the oldest waiting spans, at most maxExportBatchSize) to the exporter. */
  private exportOne(): Promise<void> {
    this.clearTimer();
    if (this.waiting === 0) return Promise.resolve();
    const spans = this.take(Math.min(this.waiting, this.settings.maxExportBatchSize));
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('Timeout')), this.settings.exportTimeoutMillis);
      const send = () =>
        this.exporter.export(spans as ReadableSpan[], (result) => {
          clearTimeout(timer);
          if (result.code === ExportResultCode.SUCCESS) resolve();
          else reject(result.error ?? new Error('span export failed'));
        });
      const resource = this.tracer.resource as {
        asyncAttributesPending?: boolean;
        waitForAsyncAttributes?: () => Promise<void>;
      };
      if (resource.asyncAttributesPending && resource.waitForAsyncAttributes)
        resource.waitForAsyncAttributes().then(send, reject);
      else send();
    });
  }

  /** Every waiting span exported (in batches); rejected when an export fails. */
  forceFlush(): Promise<void> {
    if (this.shutdownPromise) return this.shutdownPromise;
    return this.flushAll();
  }

  private flushAll(): Promise<void> {
    const batches = Math.ceil(this.waiting / this.settings.maxExportBatchSize);
    const all: Promise<void>[] = [];
    for (let i = 0; i < batches; i++) all.push(this.exportOne());
    return Promise.all(all).then(() => undefined);
  }

  /** Flushes, then stops the exporter; later spans are dropped. */
  shutdown(): Promise<void> {
    this.shutdownPromise ??= Promise.resolve()
      .then(() => this.flushAll())
      .then(() => this.exporter.shutdown());
    return this.shutdownPromise;
  }
}
