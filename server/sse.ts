/**
 * Bytes <-> server-sent events. One pass with a carry buffer: chunks may split anywhere,
 * inside a line, inside "\r\n", inside a multi-byte UTF-8 character (its first bytes wait for
 * the next read: see Utf8Carry). Only `data:` fields matter for OpenAI streams; comment lines
 * (llama-server's ": ping") and other fields are ignored.
 *
 * Linear by construction: every character is scanned once. A line still open at the end of a
 * read is kept as pieces (joined once, when its terminator arrives) and never rescanned, so an
 * event that arrives in thousands of small reads costs what one read would. The upstream is not
 * trusted to end its lines: an event (or a line) larger than `maxEventSize` throws
 * SseEventTooLargeError instead of growing the buffer without bound.
 */
import { ToolproofError } from '../protocol/errors.js';

/** Largest event (its data lines together, or any single line) accepted from an upstream: 16 MiB. */
export const MAX_SSE_EVENT_SIZE = 16 * 1024 * 1024;

/**
 * Thrown by SseParser when an upstream event outgrows the bound. A ToolproofError with the code
 * TP_ERR_UPSTREAM_BAD_RESPONSE (502), so the stream code maps it as any unreadable upstream.
 */
export class SseEventTooLargeError extends ToolproofError {
  readonly limit: number;
  constructor(limit: number) {
    super('TP_ERR_UPSTREAM_BAD_RESPONSE', {
      message: `The upstream sent a server-sent event larger than ${limit} characters (each data line counted ${LINE_WEIGHT} more than its text).`,
    });
    this.limit = limit;
  }
}

export interface SseParserOptions {
  /** Characters one event (or one line) may hold before the parser throws; default MAX_SSE_EVENT_SIZE. */
  maxEventSize?: number;
}

const LF = 10;
const CR = 13;

/**
 * What a data line costs the event's bound besides its characters: its slot in the list of the
 * event's lines and its string. Counted at its characters alone, an event of 16M empty `data:`
 * lines (96 MB from the upstream) was within the bound and held 306 MB of heap until it ended.
 */
const LINE_WEIGHT = 16;

/**
 * Streaming UTF-8 decoding without a TextDecoder: a streaming TextDecoder holds an ICU
 * converter, about 1.3 KB of native memory per open stream, and decodes slower than
 * Buffer#toString. A read is decoded up to its last complete character; an incomplete one (at
 * most 3 bytes) waits for the next read. Cutting before a lead byte never changes the decoding:
 * a lead byte always ends whatever sequence came before it, so invalid bytes get the same
 * U+FFFD replacements as a TextDecoder over the whole stream (tests/server/sse.test.ts).
 */
class Utf8Carry {
  private carry: Buffer | null = null;
  private started = false;

  decode(chunk: Uint8Array): string {
    let bytes = Buffer.isBuffer(chunk)
      ? chunk
      : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (this.carry) {
      bytes = Buffer.concat([this.carry, bytes]);
      this.carry = null;
    }
    let end = bytes.length;
    let i = end - 1;
    // Back over at most 3 continuation bytes to the start of the last character.
    while (i >= 0 && end - i <= 3 && (bytes[i]! & 0xc0) === 0x80) i--;
    if (i >= 0) {
      const lead = bytes[i]!;
      const size = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
      if (size > end - i) end = i;
    }
    if (end < bytes.length) this.carry = Buffer.from(bytes.subarray(end));
    return this.text(bytes.toString('utf8', 0, end));
  }

  /** End of stream: an incomplete last character becomes U+FFFD, as a TextDecoder's flush. */
  finish(): string {
    const rest = this.carry;
    this.carry = null;
    return rest ? this.text(rest.toString('utf8')) : '';
  }

  /** A byte order mark opening the stream is dropped (a TextDecoder's default). */
  private text(s: string): string {
    if (this.started || s === '') return s;
    this.started = true;
    return s.charCodeAt(0) === 0xfeff ? s.slice(1) : s;
  }
}

export class SseParser {
  private readonly decoder = new Utf8Carry();
  private readonly max: number;
  /** The open line so far, in pieces; none holds a line terminator. */
  private head: string[] = [];
  private headSize = 0;
  /** The previous read ended on "\r": a "\n" opening the next one belongs to it. */
  private skipLf = false;
  /** The event's data lines so far: the first alone (nearly every event has one), the rest after it. */
  private dataFirst: string | undefined;
  private dataMore: string[] | undefined;
  private dataSize = 0;

  constructor(options: SseParserOptions = {}) {
    this.max = options.maxEventSize ?? MAX_SSE_EVENT_SIZE;
  }

  /** Feeds raw bytes; returns the data payloads of every event completed by them. */
  push(chunk: Uint8Array | string): string[] {
    const text = typeof chunk === 'string' ? chunk : this.decoder.decode(chunk);
    const out: string[] = [];
    this.scan(text, out);
    return out;
  }

  /** True while part of an event is held (the bytes fed so far do not end on an event boundary). */
  pending(): boolean {
    return this.headSize > 0 || this.head.length > 0 || this.dataFirst !== undefined || this.skipLf;
  }

  /** End of stream: an unterminated last line, and an event without its blank line, still count. */
  finish(): string[] {
    const out: string[] = [];
    this.scan(this.decoder.finish(), out);
    if (this.head.length > 0) this.lineAt(this.takeHead(''), -1, -1, out);
    this.skipLf = false;
    this.dispatch(out);
    return out;
  }

  private scan(text: string, out: string[]): void {
    let start = 0;
    if (this.skipLf && text.length > 0) {
      this.skipLf = false;
      if (text.charCodeAt(0) === LF) start = 1;
    }
    // Next "\n" and "\r" at or after `start`, each searched again only once passed: one scan.
    let nl = text.indexOf('\n', start);
    let cr = text.indexOf('\r', start);
    while (nl !== -1 || cr !== -1) {
      const end = nl === -1 ? cr : cr === -1 ? nl : Math.min(nl, cr);
      // A line read whole is read in place (one slice, for its value); a continued one is joined first.
      if (this.head.length === 0) this.lineAt(text, start, end, out);
      else this.lineAt(this.takeHead(text.slice(start, end)), -1, -1, out);
      start = end + 1;
      if (text.charCodeAt(end) === CR) {
        if (start === text.length) this.skipLf = true;
        else if (text.charCodeAt(start) === LF) start++;
      }
      if (nl !== -1 && nl < start) nl = text.indexOf('\n', start);
      if (cr !== -1 && cr < start) cr = text.indexOf('\r', start);
    }
    if (start < text.length) {
      const rest = start === 0 ? text : text.slice(start);
      // Each piece costs its slot and its string too, as a data line does: counted at its
      // characters alone, a line read two bytes at a time held ~13x its bytes (8M pieces, ~210 MB
      // of heap, within the 16 MiB bound), one such stream per slot.
      this.headSize += rest.length + LINE_WEIGHT;
      if (this.headSize > this.max) throw new SseEventTooLargeError(this.max);
      this.head.push(rest);
    }
  }

  /** The open line completed by `tail` (the head pieces are joined once, here). */
  private takeHead(tail: string): string {
    if (this.head.length === 0) return tail;
    this.head.push(tail);
    const line = this.head.join('');
    this.head = [];
    this.headSize = 0;
    if (line.length > this.max) throw new SseEventTooLargeError(this.max);
    return line;
  }

  /** The line text[from, to) (from -1: all of text). */
  private lineAt(text: string, from: number, to: number, out: string[]): void {
    const s = from === -1 ? 0 : from;
    const e = from === -1 ? text.length : to;
    if (s === e) {
      this.dispatch(out);
      return;
    }
    const c = text.charCodeAt(s);
    if (c === 58 /* ':' */) return;
    if (
      c === 100 /* d */ &&
      e - s >= 5 &&
      text.charCodeAt(s + 1) === 97 &&
      text.charCodeAt(s + 2) === 116 &&
      text.charCodeAt(s + 3) === 97 &&
      text.charCodeAt(s + 4) === 58
    ) {
      const value = text.slice(text.charCodeAt(s + 5) === 32 && e - s > 5 ? s + 6 : s + 5, e);
      this.dataSize += value.length + LINE_WEIGHT;
      if (this.dataSize > this.max) throw new SseEventTooLargeError(this.max);
      if (this.dataFirst === undefined) this.dataFirst = value;
      else (this.dataMore ??= []).push(value);
    }
  }

  /** A blank line (or the end): the event's data lines, joined, become one payload. */
  private dispatch(out: string[]): void {
    if (this.dataFirst === undefined) return;
    out.push(this.dataMore ? [this.dataFirst, ...this.dataMore].join('\n') : this.dataFirst);
    this.dataFirst = undefined;
    this.dataMore = undefined;
    this.dataSize = 0;
  }
}

export function sseData(payload: string): string {
  return `data: ${payload}\n\n`;
}

export const SSE_DONE = 'data: [DONE]\n\n';
