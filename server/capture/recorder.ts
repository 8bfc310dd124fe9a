/**
 * What the server tells the capture ring (ring.ts) about one request, at the points where it
 * happens: the client's request (startChatCall), each upstream attempt (attempt.ts and the two
 * drivers), each harness decision (effects.ts, the fallback, the attempt loop), the bytes the
 * client receives (a tap on the response), and the end (app.ts, with the log line). Every
 * function is a no-op for a call without a record: with capture off nothing here keeps anything.
 */
import cluster from 'node:cluster';
import { type IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { FastifyRequest } from 'fastify';
import { ToolproofError } from '../../protocol/errors.js';
import type { ChatCompletionRequest, Usage } from '../../protocol/openai.js';
import { describeEffect, type PolicyEffect } from '../../policies/registry.js';
import type { ChatCall } from '../chat/context.js';
import type { HarnessTrace } from '../chat/trace.js';
import { ownString } from '../../protocol/own-string.js';
import { affinityKey, namedSessionKey } from '../affinity.js';
import { REDACTED, redactedHeaderPairs } from './redact.js';
import { beginOp, flushJournal, journal, setApplier } from './journal.js';
import { ownRun, runOfHistory, runOfReply } from './runs.js';
import {
  type CapturedText,
  type CaptureRing,
  type Decision,
  type Outcome,
  type RecordWriter,
  readEffectsWith,
  readHarnessWith,
  readSessionWith,
} from './ring.js';

const WORKER = cluster.isWorker ? (cluster.worker?.id ?? 0) : 0;

/**
 * Epoch milliseconds of a time on the performance clock, the wall clock read once a second rather
 * than per call: on a VM's kvm-clock a clock read costs 0.12-0.34 µs (Date.now() the dearer), and
 * a request read the wall clock three times for its record (its arrival, its attempt sent, the
 * attempt's end) where the server already has each instant on the performance clock. Off the
 * wall clock by at most what NTP slews it in a second (0.5 ms).
 */
let epochBase = Date.now() - performance.now();
let epochSynced = performance.now();
function epochOf(t: number): number {
  if (t - epochSynced > 1000) {
    const now = performance.now();
    epochBase = Date.now() - now;
    epochSynced = now;
  }
  return epochBase + t;
}
/** A decision's detail is JSON cut to this many characters. */
const MAX_DETAIL_CHARS = 2000;

/**
 * The labels of the sessions seen lately, by key: every turn of a conversation has the same key,
 * so its records share one label (no string of their own, none built per request). Bounded: full,
 * it starts afresh.
 */
const LABELS_MAX = 512;
const LABEL_KEY_CHARS = 300;
let labels = new Map<string, string>();

/** The session a request belongs to: the affinity key (docs/affinity.md), readable. */
export function sessionLabel(key: string): string {
  const hit = labels.get(key);
  if (hit !== undefined) return hit;
  // Opening-message keys hold NUL separators (model, user, hashes): shown with slashes. A join
  // builds one flat string (replaceAll: a rope of slices, five heap objects a record keeps).
  const k = key.length > LABEL_KEY_CHARS ? ownString(key.slice(0, LABEL_KEY_CHARS)) : key;
  const label = k.includes('\u0000') ? k.split('\u0000').join('/') : ownString(k);
  if (key.length <= LABEL_KEY_CHARS) {
    if (labels.size >= LABELS_MAX) labels = new Map();
    labels.set(ownString(key), label);
  }
  return label;
}

/**
 * The same few strings (a model's name, a path) arrive as new strings with every request: a
 * record keeps the first one seen, not one of its own per request. Bounded: past this many,
 * a string is kept as it came.
 */
const SHARED_MAX = 256;
const shared = new Map<string, string>();
function sharedString(s: string): string {
  if (s.length > 256) return s;
  const hit = shared.get(s);
  if (hit !== undefined) return hit;
  if (shared.size >= SHARED_MAX) return s;
  // A copy of its own: a slice kept for good must not hold its parent (a whole URL).
  const own = ownString(s);
  shared.set(own, own);
  return own;
}

/**
 * The most characters a name kept outside the record's counted texts keeps (the model, a tool
 * name in the harness summary): the client and the model pick them, of any length (a 30 MB model
 * name was kept whole, uncounted, by every record: a 10 MB ring held hundreds of MB).
 */
const NAME_CHARS = 256;

/** `s` cut to NAME_CHARS, a copy of its own when cut (a slice would hold the whole string). */
function cutShort(s: string): string {
  return s.length > NAME_CHARS ? ownString(s.slice(0, NAME_CHARS)) : s;
}

const ONE_KIND = Object.freeze({
  failed: Object.freeze(['failed']),
  retried: Object.freeze(['retried']),
  leak_recovered: Object.freeze(['leak_recovered']),
  final_answer: Object.freeze(['final_answer']),
  degraded: Object.freeze(['degraded']),
  clean: Object.freeze(['clean']),
}) as unknown as Record<Exclude<Outcome, 'in_flight'>, Outcome[]>;

/** The request's path without its query, cut at 256 characters: a record's `path`. */
function recordPath(request: FastifyRequest): string {
  const url = request.url;
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  return sharedString(path.length > 256 ? path.slice(0, 256) : path);
}

/** The headers' names and values in turn, redacted (keepClientRequest), while they are written. */
const PAIRS: string[] = [];

/**
 * The client's request into a record: its headers, redacted, as bytes in the ring's arena (see
 * HeaderText; a record out of room keeps none), and its body: the client's own bytes when at
 * hand, else the parsed body as JSON (cut after). Returns the body's text.
 */
function keepClientRequest(
  w: RecordWriter,
  request: FastifyRequest,
  clientBytes: Buffer | undefined,
): CapturedText {
  // Redacted into a scratch list, then written into the arena from it, and the list emptied:
  // nothing of the headers but their redacted bytes is kept.
  w.headerPairs(PAIRS, redactedHeaderPairs(request.headers, PAIRS));
  PAIRS.length = 0;
  // Only the head of a large body is decoded: `cut` then counts the bytes left out.
  const body =
    clientBytes !== undefined ? w.fromBytes(clientBytes) : w.text(JSON.stringify(request.body ?? null));
  w.body = body;
  return body;
}

/**
 * Opens the record of a chat call (any front door), in flight from now on. `sessionKey`: the
 * call's affinity key when routing made it (several replicas); else the capture's own, from the
 * session the client names, or from its opening messages: for the chat door's body kept whole,
 * when the record is first read (readSession), not per request.
 */
export function beginCapture(
  ring: CaptureRing,
  request: FastifyRequest,
  call: ChatCall,
  sessionKey: string | undefined,
  clientBytes: Buffer | undefined,
): void {
  // A routing key made of the opening messages (several replicas) names no session: the capture
  // tells apart the runs that share it (runs.ts). Routing keeps it whole.
  // Opened at once, ahead of the ops the journal holds (journal.ts): their records' texts are the
  // same either way (a record's room is its own), only an eviction can come an op sooner or later.
  const opening = sessionKey?.startsWith('o:') ? sessionKey : undefined;
  const key =
    opening === undefined ? (sessionKey ?? namedSessionKey(request.headers, request.body)) : undefined;
  // The fields an in-flight record lists with; the rest are set as the request goes, and those
  // of its end (status, outcome, tokens, what the client received) by finishCapture.
  const model = call.original.model;
  const w = ring.open({
    id: request.id,
    worker: WORKER,
    // When the request arrived (the server's own instant of it, tpStart), on the wall clock.
    at: epochOf(request.tpStart > 0 ? request.tpStart : performance.now()),
    api: call.api,
    model: typeof model === 'string' ? sharedString(cutShort(model)) : model,
    stream: call.original.stream === true,
    session: key === undefined ? '' : sessionLabel(key),
    // One shape of init whether a key is named or not (a spread in the literal built it field by
    // field, in two shapes for reset to read).
    key: request.tpKey ? request.tpKey.name : undefined,
    keyToken: request.tpKey ? request.tpKey.token : undefined,
    method: request.method,
    path: recordPath(request),
  });
  const body = keepClientRequest(w, request, clientBytes);
  if (key === undefined) {
    // The chat door's body is the chat request itself (startChatCall): read again, it gives the
    // same opening messages. Any other door's (translated), or one cut: the key now.
    if (call.api === 'chat' && clientBytes !== undefined && clientBytes.length > 0 && body.cut === 0)
      w.deferSession();
    else
      runSession(
        w,
        sessionLabel(opening ?? affinityKey(request.headers, request.body, call.original)),
        call.original.messages,
      );
  }
  w.start = request.tpStart;
  call.capture = w;
  request.tpCapture = w;
}

/**
 * The last second (of the wall clock) each key had a refused request recorded in: one record per
 * key per second (recordRefused). Bounded: full, it starts afresh.
 */
const REFUSED_KEYS_MAX = 1024;
let refusedSecond = new Map<string, number>();

/**
 * Records a request its key's limits refused (429, before any call began: server/keys.ts), so
 * that the inspector shows why an agent stalled: the door, the model, the key, the client's
 * request (headers redacted, body cut as every record's), no attempt; its end (finishRefused,
 * from app.ts) adds the status, the error and what the client received. At most one record per
 * key per second: a client retrying in a tight loop would otherwise fill the ring with its 429s
 * and evict the records worth reading (the others are counted by toolproof_key_refusals_total
 * and each has its log line). Returns whether it was recorded.
 */
export function recordRefused(
  ring: CaptureRing,
  request: FastifyRequest,
  api: string,
  model: unknown,
  clientBytes: Buffer | undefined,
): boolean {
  const keyName = request.tpKey?.name;
  if (keyName === undefined || request.tpCapture !== undefined) return false;
  const now = performance.now();
  const at = epochOf(request.tpStart > 0 ? request.tpStart : now);
  const second = Math.floor(at / 1000);
  if (refusedSecond.get(keyName) === second) return false;
  flushJournal();
  if (refusedSecond.size >= REFUSED_KEYS_MAX && !refusedSecond.has(keyName)) refusedSecond = new Map();
  refusedSecond.set(keyName, second);
  // The session only when the client names it (no hashing of a refused request's messages).
  const key = namedSessionKey(request.headers, request.body);
  const w = ring.open({
    id: request.id,
    worker: WORKER,
    at,
    api,
    model: typeof model === 'string' ? sharedString(cutShort(model)) : '',
    stream: (request.body as { stream?: unknown } | null)?.stream === true,
    session: key === undefined ? '' : sessionLabel(key),
    key: keyName,
    keyToken: request.tpKey?.token,
    method: request.method,
    path: recordPath(request),
  });
  keepClientRequest(w, request, clientBytes);
  w.start = request.tpStart > 0 ? request.tpStart : now;
  // The response's bytes come to the record from here (CapturingResponse), as a call's do.
  request.tpCapture = w;
  return true;
}

/** The end of a refused request's record (recordRefused): failed, its error as the client got it. */
export function finishRefused(
  w: RecordWriter,
  status: number,
  finished: boolean,
  error: ToolproofError | undefined,
  now = performance.now(),
): void {
  // What the response wrote (its frames, held in the journal) before its end.
  flushJournal();
  w.endClient(status);
  w.inFlight = false;
  w.status = finished ? status : 'aborted';
  w.durationMs = now - (w.start ?? now);
  w.attempts = 0;
  w.kinds = ONE_KIND.failed;
  w.outcome = 'failed';
  w.setTokens(null, null, null);
  if (error) w.error = errorOf(error);
  w.settle();
  w.start = undefined;
}

/**
 * The server's response class while capturing (app.ts gives it to node's http server): every
 * front door's bytes, streamed or not, are seen as they are written, by one subclass with one
 * write and one end for every response, rather than a wrapper installed per response (two
 * closures each, and a response object of another shape on node's hot write path). A response
 * takes part once app.ts links its request (front-door routes); the record is the request's
 * once its call began (beginCapture).
 */
export class CapturingResponse<Req extends IncomingMessage = IncomingMessage> extends ServerResponse<Req> {
  /** The request whose record this response's bytes go to; undefined: not captured. */
  tpRequest: FastifyRequest | undefined;

  constructor(req: Req, options?: object) {
    // @ts-expect-error node passes the server's options (highWaterMark, rejectNonStandardBodyWrites); @types/node 20 declares only req
    super(req, options);
    this.tpRequest = undefined;
  }
}

function take(res: CapturingResponse, chunk: unknown): void {
  const w = res.tpRequest?.tpCapture;
  if (w === undefined || chunk === undefined || chunk === null || typeof chunk === 'function') return;
  let piece: string | Buffer;
  if (typeof chunk === 'string' || Buffer.isBuffer(chunk)) piece = chunk;
  else if (chunk instanceof Uint8Array) piece = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  else return;
  if (!w.ring.batched) {
    w.client(piece);
    return;
  }
  beginOp(OP_CLIENT, piece.length);
  J.refs[J.nRefs++] = w;
  J.refs[J.nRefs++] = piece;
}

type Fn = (this: ServerResponse, ...args: unknown[]) => unknown;
const baseWrite = ServerResponse.prototype.write as unknown as Fn;
const baseEnd = ServerResponse.prototype.end as unknown as Fn;
// Fixed arity: no rest array per call; node's write and end read missing arguments as undefined.
Object.defineProperty(CapturingResponse.prototype, 'write', {
  value: function write(this: CapturingResponse, chunk: unknown, a: unknown, b: unknown) {
    if (this.tpRequest !== undefined) take(this, chunk);
    return baseWrite.call(this, chunk, a, b);
  },
  writable: true,
  configurable: true,
});
Object.defineProperty(CapturingResponse.prototype, 'end', {
  value: function end(this: CapturingResponse, chunk: unknown, a: unknown, b: unknown) {
    if (this.tpRequest !== undefined) take(this, chunk);
    return baseEnd.call(this, chunk, a, b);
  },
  writable: true,
  configurable: true,
});

/*
 * The hooks below run where the request is (its attempt sent, a read, a frame, its end); what
 * they tell the record is applied by the apply* functions after them, at once when the ring is
 * not batched (tests' rings), or from the journal (journal.ts: the server's ring), many
 * requests' ops in a row while the code and the arena's head are warm. A hook takes at call time
 * what would change by then (the clock, the attempt's number, the call's record), so both ways
 * write the same record.
 */
const J = journal;
const OP_SENT = 1;
const OP_OPENED = 2;
const OP_BODY = 3;
const OP_EVENT = 4;
const OP_READ = 5;
const OP_ATTEMPT_END = 6;
const OP_ATTEMPT_ERROR = 7;
const OP_DECISION = 8;
const OP_EFFECTS = 9;
const OP_FINISH = 10;
const OP_CLIENT = 11;
const OP_FIRST_CHUNK = 12;

/** Applies the journal's `count` ops, in order (journal.ts flushJournal). */
function applyJournal(count: number): void {
  const op = J.op;
  const refs = J.refs;
  const nums = J.nums;
  let r = 0;
  let x = 0;
  for (let i = 0; i < count; i++) {
    const w = refs[r++] as RecordWriter;
    try {
      switch (op[i]) {
        case OP_EVENT:
          w.event(refs[r++] as string);
          break;
        case OP_READ:
          w.read(refs[r++] as Buffer, nums[x++]!);
          break;
        case OP_CLIENT:
          w.client(refs[r++] as string | Buffer);
          break;
        case OP_SENT:
          applySent(
            w,
            nums[x++]!,
            refs[r++] as string,
            nums[x++]!,
            nums[x++]!,
            nums[x++]!,
            refs[r++] as string | Buffer,
            refs[r++] as Readonly<Record<string, string>>,
          );
          break;
        case OP_OPENED:
          applyOpened(
            w,
            nums[x++]!,
            nums[x++]!,
            refs[r++] as string | undefined,
            refs[r++] as ToolproofError | undefined,
          );
          break;
        case OP_BODY:
          applyBody(w, refs[r++] as string | Buffer);
          break;
        case OP_FIRST_CHUNK:
          applyFirstChunk(w, nums[x++]!);
          break;
        case OP_ATTEMPT_END:
          applyAttemptEnd(w, nums[x++]!, refs[r++] as ToolproofError | undefined);
          break;
        case OP_ATTEMPT_ERROR:
          applyAttemptError(w, refs[r++] as ToolproofError);
          break;
        case OP_DECISION:
          applyDecision(
            w,
            nums[x++]!,
            nums[x++]!,
            refs[r++] as string,
            refs[r++] as string,
            refs[r++] as string | undefined,
            refs[r++] as string | undefined,
          );
          break;
        case OP_EFFECTS:
          applyEffects(w, nums[x++]!, nums[x++]!, refs[r++] as readonly PolicyEffect[]);
          break;
        case OP_FINISH:
          applyFinish(
            w,
            refs[r++] as HarnessTrace,
            nums[x++]!,
            nums[x++]!,
            nums[x++] === 1,
            refs[r++] as Usage | undefined,
            refs[r++] as { cached: number; prompt: number } | undefined,
            refs[r++] as Record<string, unknown> | HarnessOf | undefined,
            refs[r++] as ToolproofError | undefined,
            nums[x++]!,
          );
          break;
      }
    } catch (err) {
      // An op that throws would have thrown into its request's handler inline; here it must not
      // take the ops after it (other requests') with it, nor the process.
      process.emitWarning(`capture: a record's op failed: ${(err as Error)?.message ?? err}`);
    }
  }
}
setApplier(applyJournal);

/** Whether `w`'s hooks go through the journal (the server's ring) rather than at once. */
function batched(w: RecordWriter): boolean {
  return w.ring.batched;
}

/**
 * An attempt goes upstream: the body and the headers exactly as sent (`headers`: those toolproof
 * gives the transport; the backend's key, which upstream.ts adds, is kept as its name only).
 */
export function captureAttemptSent(
  call: ChatCall,
  body: string | Buffer,
  headers: Readonly<Record<string, string>>,
  sentAt: number,
): void {
  const w = call.capture;
  if (!w) return;
  const n = call.trace.attempts;
  const client = call.route.client;
  const upstream = client.label;
  const at = epochOf(sentAt);
  const queueMs = sentAt - startOf(call);
  // Two flags in one number: a stream (1), the backend's key added (2).
  const flags = (call.phase.request.stream === true ? 1 : 0) | (client.sendsKey ? 2 : 0);
  if (!batched(w)) {
    applySent(w, n, upstream, at, queueMs, flags, body, headers);
    return;
  }
  beginOp(OP_SENT, body.length);
  J.refs[J.nRefs++] = w;
  J.refs[J.nRefs++] = upstream;
  J.refs[J.nRefs++] = body;
  J.refs[J.nRefs++] = headers;
  J.nums[J.nNums++] = n;
  J.nums[J.nNums++] = at;
  J.nums[J.nNums++] = queueMs;
  J.nums[J.nNums++] = flags;
}

function applySent(
  w: RecordWriter,
  n: number,
  upstream: string,
  at: number,
  queueMs: number,
  flags: number,
  body: string | Buffer,
  headers: Readonly<Record<string, string>>,
): void {
  w.attempts = n;
  const stream = (flags & 1) === 1;
  if (typeof body === 'string') w.newAttempt(n, upstream, at, queueMs, stream, w.text(body));
  else w.attemptOf(n, upstream, at, queueMs, stream, body);
  w.note(200);
  // As the client's are (keepClientRequest): redacted into the scratch list, written, emptied.
  let chars = redactedHeaderPairs(headers, PAIRS);
  if ((flags & 2) === 2) {
    PAIRS.push('authorization', REDACTED);
    chars += 32;
  }
  w.attemptHeaders(PAIRS, chars);
  PAIRS.length = 0;
}

/** The upstream answered with headers (or failed before), at `now` (the performance clock). */
export function captureAttemptOpened(
  call: ChatCall,
  sentAt: number,
  res: { status: number; replica?: string } | undefined,
  error?: ToolproofError,
  now = performance.now(),
): void {
  const w = call.capture;
  if (!w) return;
  const status = res ? res.status : -1;
  const replica = res?.replica || undefined;
  if (!batched(w)) {
    applyOpened(w, now - sentAt, status, replica, error);
    return;
  }
  beginOp(OP_OPENED, 0);
  J.refs[J.nRefs++] = w;
  J.refs[J.nRefs++] = replica;
  J.refs[J.nRefs++] = error;
  J.nums[J.nNums++] = now - sentAt;
  J.nums[J.nNums++] = status;
}

function applyOpened(
  w: RecordWriter,
  ttfbMs: number,
  status: number,
  replica: string | undefined,
  error: ToolproofError | undefined,
): void {
  const a = w.current;
  if (!a) return;
  // No response (unreachable, refused, timed out before its headers): no first byte came, so no
  // TTFB; the time it took to fail is the attempt's total.
  if (status >= 0) {
    a.ttfbMs = ttfbMs;
    a.status = status;
    if (replica) a.replica = sharedString(replica);
  }
  if (error) {
    a.totalMs = ttfbMs;
    a.error = errorOf(error);
  }
}

/** A whole (non-streamed or error) response body of the running attempt. */
export function captureAttemptBody(call: ChatCall, body: string | Buffer): void {
  const w = call.capture;
  if (!w) return;
  if (!batched(w)) {
    applyBody(w, body);
    return;
  }
  beginOp(OP_BODY, body.length);
  J.refs[J.nRefs++] = w;
  J.refs[J.nRefs++] = body;
}

function applyBody(w: RecordWriter, body: string | Buffer): void {
  const a = w.current;
  if (!a) return;
  a.response = typeof body === 'string' ? w.text(body) : w.fromBytes(body);
}

/** One event of the running attempt's stream, as received. */
export function captureEvent(call: ChatCall, payload: string): void {
  const w = call.capture;
  if (!w) return;
  if (!batched(w)) {
    w.event(payload);
    return;
  }
  beginOp(OP_EVENT, payload.length);
  J.refs[J.nRefs++] = w;
  J.refs[J.nRefs++] = payload;
}

/** One read of the running attempt's stream (the upstream's bytes), and the events it completed. */
export function captureRead(call: ChatCall, buf: Buffer, events: number): void {
  const w = call.capture;
  if (!w) return;
  if (!batched(w)) {
    w.read(buf, events);
    return;
  }
  beginOp(OP_READ, buf.length);
  J.refs[J.nRefs++] = w;
  J.refs[J.nRefs++] = buf;
  J.nums[J.nNums++] = events;
}

/** The running attempt's stream brought its first bytes (once an attempt). */
export function captureFirstChunk(call: ChatCall): void {
  const w = call.capture;
  if (!w) return;
  const at = epochOf(performance.now());
  if (!batched(w)) {
    applyFirstChunk(w, at);
    return;
  }
  beginOp(OP_FIRST_CHUNK, 0);
  J.refs[J.nRefs++] = w;
  J.nums[J.nNums++] = at;
}

function applyFirstChunk(w: RecordWriter, at: number): void {
  const a = w.current;
  if (a && a.firstChunkMs === undefined) a.firstChunkMs = Math.max(0, at - a.at);
}

/** The running attempt's response ended (or failed). */
export function captureAttemptEnd(call: ChatCall, error?: ToolproofError): void {
  const w = call.capture;
  if (!w) return;
  const end = epochOf(performance.now());
  if (!batched(w)) {
    applyAttemptEnd(w, end, error);
    return;
  }
  beginOp(OP_ATTEMPT_END, 0);
  J.refs[J.nRefs++] = w;
  J.refs[J.nRefs++] = error;
  J.nums[J.nNums++] = end;
}

function applyAttemptEnd(w: RecordWriter, end: number, error: ToolproofError | undefined): void {
  const a = w.current;
  if (!a) return;
  w.endEvents();
  a.totalMs = end - a.at;
  if (error && !a.error) a.error = errorOf(error);
}

/** The running attempt failed in a way the server found (a bad response), if none was set. */
export function captureAttemptError(call: ChatCall, error: ToolproofError): void {
  const w = call.capture;
  if (!w) return;
  if (!batched(w)) {
    applyAttemptError(w, error);
    return;
  }
  beginOp(OP_ATTEMPT_ERROR, 0);
  J.refs[J.nRefs++] = w;
  J.refs[J.nRefs++] = error;
}

function applyAttemptError(w: RecordWriter, error: ToolproofError): void {
  const a = w.current;
  if (a && !a.error) a.error = errorOf(error);
}

/** A harness decision with its reason. */
export function captureDecision(
  call: ChatCall,
  kind: string,
  reason: string,
  detail?: unknown,
  policy?: string,
): void {
  const w = call.capture;
  if (!w) return;
  const atMs = round(performance.now() - startOf(call));
  const attempt = call.trace.attempts;
  // The detail is serialized now: an object the request goes on using could change by the time
  // the journal is applied.
  const text = detail !== undefined ? stringify(detail) : undefined;
  if (!batched(w)) {
    applyDecision(w, atMs, attempt, kind, reason, text, policy);
    return;
  }
  beginOp(OP_DECISION, reason.length + (text?.length ?? 0));
  J.refs[J.nRefs++] = w;
  J.refs[J.nRefs++] = kind;
  J.refs[J.nRefs++] = reason;
  J.refs[J.nRefs++] = text;
  J.refs[J.nRefs++] = policy;
  J.nums[J.nNums++] = atMs;
  J.nums[J.nNums++] = attempt;
}

function applyDecision(
  w: RecordWriter,
  atMs: number,
  attempt: number,
  kind: string,
  reason: string,
  detail: string | undefined,
  policy: string | undefined,
): void {
  // One shape for every decision (absent fields undefined: JSON leaves them out).
  const d: Decision = {
    atMs,
    attempt,
    kind,
    policy: policy || undefined,
    // A copy of its own when cut: a slice would hold the whole reason (a model's invented tool
    // name of MBs in 'call to … failed validation') for the record's life, uncounted.
    reason: reason.length > MAX_DETAIL_CHARS ? ownString(reason.slice(0, MAX_DETAIL_CHARS)) : reason,
    detail: detail !== undefined ? w.text(detail).text : undefined,
  };
  // A record out of room keeps no more decisions (its cut texts already say it was cut).
  if (w.note(d.reason.length + 64)) w.decision(d);
}

/**
 * What a kept effect decision is counted at: its reason (a template of at most ~150 characters
 * around fields of at most SMALL_CHARS each), its JSON detail (a few such fields), its own
 * fields.
 */
const EFFECT_DECISION_CHARS = 384;
/** A kept effect's strings: shorter than V8's shortest sliced string (13), so none pins a parent. */
const SMALL_CHARS = 12;
const SMALL_FIELDS = 4;

/**
 * The policies' effects, as decisions. An effect whose fields and detail are a few short
 * primitives (the forced tool choice, a tally, the final answer's outcome: nearly every
 * request's) is kept as those fields, in the record's flat list of decisions (no object of its
 * own: RecordWriter.decisions), and described when read (EffectDecision: its reason and JSON
 * detail then, not per request); any other (a leak, a validation failure, a retry with its
 * feedback) is described now and its detail serialized and cut, as a decision of the server's
 * own.
 */
export function captureEffects(call: ChatCall, effects: readonly PolicyEffect[]): void {
  const w = call.capture;
  if (!w) return;
  const sinceStart = performance.now() - startOf(call);
  const attempt = call.trace.attempts;
  if (!batched(w)) {
    applyEffects(w, sinceStart, attempt, effects);
    return;
  }
  beginOp(OP_EFFECTS, 0);
  J.refs[J.nRefs++] = w;
  J.refs[J.nRefs++] = effects;
  J.nums[J.nNums++] = sinceStart;
  J.nums[J.nNums++] = attempt;
}

/** `sinceStart`: ms since the request arrived when the effects came; `attempt`: the attempt's number then. */
function applyEffects(
  w: RecordWriter,
  sinceStart: number,
  attempt: number,
  effects: readonly PolicyEffect[],
): void {
  const at = -Math.round(sinceStart * 10) - 1;
  for (const e of effects) {
    // A constant effect (policies' constantEffect: nearly every request's) known by identity; else
    // a copy seen before, found by its fields: the effect then small like it.
    let seen = constantCopies.get(e);
    if (seen === undefined) {
      seen = knownEffect(e);
      if (seen !== undefined && deepFrozen(e)) constantCopies.set(e, seen);
    }
    if (seen !== undefined) {
      if (w.note(EFFECT_DECISION_CHARS)) w.flatDecisions().push(at, attempt, seen);
      continue;
    }
    if (isSmall(e)) {
      if (w.note(EFFECT_DECISION_CHARS)) {
        const d = w.flatDecisions();
        const t = sharedEffect(e);
        if (t !== undefined) {
          if (deepFrozen(e)) constantCopies.set(e, t);
          d.push(at, attempt, t);
        } else keepEffect(d, at, attempt, e);
      }
      continue;
    }
    const detail = (e as { detail?: unknown }).detail;
    applyDecision(
      w,
      round(sinceStart),
      attempt,
      e.kind,
      reasonOf(e),
      detail !== undefined ? stringify(detail) : undefined,
      e.policy,
    );
  }
}

/**
 * The small effects seen lately: one frozen copy of each (a request's forced tool choice, its
 * final answer's outcome: the same few over and over), which the flat decisions hold as
 * [-(time in tenths) - 1, attempt, copy] (three slots, no object per record: the fields inline
 * took ~20 slots, ~0.5 KB a record the collector promoted). Found by kind (a name of the code's
 * own), then by comparing fields (no key built per effect). Bounded: full, it starts afresh.
 */
const EFFECTS_MAX = 1024;
const EFFECTS_PER_KIND = 32;
let sharedEffects = new Map<string, Readonly<Record<string, unknown>>[]>();
let sharedCount = 0;

/**
 * The shared copy of an effect with `e`'s fields and detail, if one was made (only small effects
 * have one: a copy found is of an effect as small). A detail that is not a plain object (null, an
 * array: isSmall keeps neither) is never found.
 */
function knownEffect(e: PolicyEffect): Readonly<Record<string, unknown>> | undefined {
  const list = sharedEffects.get(e.kind);
  if (list === undefined) return undefined;
  const o = e as unknown as Record<string, unknown>;
  const detail = o.detail as Record<string, unknown> | undefined;
  if (detail !== undefined && (typeof detail !== 'object' || detail === null || Array.isArray(detail)))
    return undefined;
  for (const t of list) {
    if (!sameFields(t, o)) continue;
    const td = t.detail as Record<string, unknown> | undefined;
    if (detail === undefined ? td === undefined : td !== undefined && sameFields(td, detail)) return t;
  }
  return undefined;
}

function sharedEffect(e: PolicyEffect): Readonly<Record<string, unknown>> | undefined {
  const o = e as unknown as Record<string, unknown>;
  const detail = o.detail as Record<string, unknown> | undefined;
  const found = knownEffect(e);
  if (found !== undefined) return found;
  let list = sharedEffects.get(e.kind);
  if (!keyable(o) || (detail !== undefined && !keyable(detail))) return undefined;
  const copy = fieldsOf(o);
  if (detail !== undefined) copy.detail = Object.freeze(fieldsOf(detail));
  Object.freeze(copy);
  if (sharedCount >= EFFECTS_MAX) {
    sharedEffects = new Map();
    sharedCount = 0;
    list = undefined;
  }
  if (list === undefined) sharedEffects.set(e.kind, (list = []));
  if (list.length < EFFECTS_PER_KIND) {
    list.push(copy);
    sharedCount++;
  }
  return copy;
}

/**
 * The shared copy of each frozen effect seen (policies/kit constantEffect: a module's constants,
 * made once per distinct content), keyed by the effect itself: found by identity, its fields not
 * walked. A frozen effect and its frozen detail of primitives (isSmall) cannot change, so its
 * copy stays right; one the shared copies forgot (full, started afresh) keeps its own here.
 * Weak: an effect no policy holds any more goes.
 */
const constantCopies = new WeakMap<object, Readonly<Record<string, unknown>>>();

/** Whether neither the effect nor its detail can change (a small effect's detail holds primitives). */
function deepFrozen(e: PolicyEffect): boolean {
  if (!Object.isFrozen(e)) return false;
  const d = (e as { detail?: unknown }).detail;
  return typeof d !== 'object' || d === null || Object.isFrozen(d);
}

/** Whether `t` (a shared copy, or its detail) has exactly `o`'s defined fields (detail aside). */
function sameFields(t: Readonly<Record<string, unknown>>, o: Record<string, unknown>): boolean {
  let n = 0;
  for (const k in o) {
    if (k === 'detail') continue;
    const v = o[k];
    if (v === undefined) continue;
    if (t[k] !== v) return false;
    n++;
  }
  for (const k in t) if (k !== 'detail') n--;
  return n === 0;
}

/** Fields a copy can be shared for: primitives compared by value (isSmall allows only these and null). */
function keyable(o: Record<string, unknown>): boolean {
  for (const k in o) {
    if (k === 'detail') continue;
    const t = typeof o[k];
    if (t === 'symbol' || t === 'bigint') return false;
    // NaN never equals itself: such a copy would never be found again (still correct, kept).
  }
  return true;
}

function fieldsOf(o: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k in o) {
    if (k === 'detail') continue;
    const v = o[k];
    if (v !== undefined) out[k] = typeof v === 'string' ? ownString(v) : v;
  }
  return out;
}

/**
 * An effect's fields appended to the flat decisions: [-(time in tenths) - 1, attempt, fields,
 * detail fields (-1: no detail), name, value...]. Short strings are shared (sharedString).
 */
function keepEffect(d: unknown[], time: number, attempt: number, e: PolicyEffect): void {
  const at = d.length;
  d.push(time, attempt, 0, -1);
  let fields = 0;
  const o = e as unknown as Record<string, unknown>;
  for (const k in o) {
    if (k === 'detail') continue;
    const v = o[k];
    if (v === undefined) continue;
    d.push(k, typeof v === 'string' ? sharedString(v) : v);
    fields++;
  }
  d[at + 2] = fields;
  const detail = o.detail as Record<string, unknown> | undefined;
  if (detail === undefined) return;
  let details = 0;
  for (const k in detail) {
    const v = detail[k];
    if (v === undefined) continue;
    d.push(k, typeof v === 'string' ? sharedString(v) : v);
    details++;
  }
  d[at + 3] = details;
}

/**
 * A deferred session (beginCapture): the chat door's body the record keeps, parsed again, keyed as
 * affinityKey keys it (the client named no session: its headers and body were looked at then),
 * and the run's mark after it (runSession); or, `opening` given, a run's first request's
 * (firstOfRun). A body no longer readable (the arena came round over it, which the ring's
 * accounting all but rules out) has no session ('').
 */
readSessionWith((r, opening) => {
  if (opening !== undefined) return firstOfRun(r, opening);
  const text = r.body.text;
  if (text === '') return '';
  let chat: unknown;
  try {
    chat = JSON.parse(text);
  } catch {
    return '';
  }
  if (typeof chat !== 'object' || chat === null) return '';
  const label = sessionLabel(affinityKey(NO_HEADERS, chat, chat as ChatCompletionRequest));
  const run = runOfHistory((chat as { messages?: unknown }).messages);
  return run !== undefined ? `${label}/${run}` : firstOfRun(r, label);
});

/**
 * The session of a request that names none, keyed by its opening messages (label `opening`):
 * the run it belongs to (runs.ts), marked after the opening's label. A run's first request is
 * marked by the reply it got, once it ended (docs/inspect.md).
 */
function runSession(w: RecordWriter, opening: string, messages: unknown): void {
  const run = runOfHistory(messages);
  if (run !== undefined) w.session = `${opening}/${run}`;
  else w.deferSession(opening);
}

/**
 * How many later records a failed first request looks through for its retry: past them, it is
 * a run of its own for good (a retry comes next, not after this many other requests), so that
 * reading it again costs nothing.
 */
const RETRY_WINDOW = 64;
/** A failed first request is looking for its retry (firstOfRun): one nested in it does not look. */
let seekingRetry = false;

/**
 * A run's first request (no assistant message): in flight, the opening's label for now (read
 * again later); ended with a reply, the run that reply starts. One that got none to carry back
 * (an error status, the client gone) is in the run of the client's retry: the next first request
 * that opens alike (failed too: the one after it); else in a run of its own, marked by its id
 * (read again while that retry may still come).
 */
function firstOfRun(r: RecordWriter, opening: string): string {
  if (r.inFlight || seekingRetry) {
    r.deferSession(opening);
    return opening;
  }
  r.openedRun();
  const run = replyRun(r);
  if (run !== undefined) return `${opening}/${run}`;
  const prefix = `${opening}/`;
  const later = r.later(RETRY_WINDOW);
  // Whether the retry may still come (or is in flight): then read again.
  let pending = later.length < RETRY_WINDOW;
  seekingRetry = true;
  try {
    for (const next of later) {
      const label = next.session;
      if (!next.opensRun || (label !== opening && !label.startsWith(prefix))) continue;
      if (next.inFlight) {
        pending = true;
        break;
      }
      const retried = replyRun(next);
      if (retried !== undefined) return `${opening}/${retried}`;
    }
  } finally {
    seekingRetry = false;
  }
  if (pending) r.deferSession(opening);
  return `${opening}/${ownRun(r.id)}`;
}

/** The run a first request's reply starts; undefined when it failed or holds nothing to carry back. */
function replyRun(r: RecordWriter): string | undefined {
  const replied = typeof r.status === 'number' && r.status < 400;
  return replied ? runOfReply(r.clientResponse.body.text) : undefined;
}
const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

readEffectsWith(
  (atMs, attempt, effect) => new EffectDecision(atMs, attempt, effect as unknown as PolicyEffect),
);

/** An effect whose fields and detail are short primitives (see captureEffects). */
function isSmall(e: PolicyEffect): boolean {
  if (e.kind.length > 64 || e.policy.length > 64) return false;
  let n = 0;
  // Its policy and kind are names of the code's own; its other fields, as its detail's.
  for (const k in e) {
    if (k === 'detail' || k === 'policy' || k === 'kind') continue;
    if (++n > SMALL_FIELDS || k.length > 32 || !isShort((e as unknown as Record<string, unknown>)[k]))
      return false;
  }
  const d = (e as { detail?: unknown }).detail;
  if (d === undefined) return true;
  if (typeof d !== 'object' || d === null || Array.isArray(d)) return false;
  n = 0;
  for (const k in d) {
    if (++n > SMALL_FIELDS || k.length > 32 || !isShort((d as Record<string, unknown>)[k])) return false;
  }
  return true;
}

function isShort(v: unknown): boolean {
  return typeof v === 'string'
    ? v.length <= SMALL_CHARS
    : typeof v === 'object'
      ? v === null
      : typeof v !== 'function';
}

/**
 * A decision that is a policy's effect, kept as the effect and described when read: reads as
 * the same { atMs, attempt, kind, policy, reason, detail } as a Decision (JSON included).
 */
export class EffectDecision implements Decision {
  constructor(
    readonly atMs: number,
    readonly attempt: number,
    readonly effect: PolicyEffect,
  ) {}

  get kind(): string {
    return this.effect.kind;
  }

  get policy(): string | undefined {
    return this.effect.policy || undefined;
  }

  get reason(): string {
    const r = reasonOf(this.effect);
    return r.length > MAX_DETAIL_CHARS ? r.slice(0, MAX_DETAIL_CHARS) : r;
  }

  get detail(): string | undefined {
    const d = (this.effect as { detail?: unknown }).detail;
    return d !== undefined ? stringify(d) : undefined;
  }

  toJSON(): Decision {
    return {
      atMs: this.atMs,
      attempt: this.attempt,
      kind: this.kind,
      policy: this.policy,
      reason: this.reason,
      detail: this.detail,
    };
  }
}

/**
 * An effect its policy does not describe (a retry's outcome, a call returned invalid after the
 * retries): its kind in words and what its detail says, its short fields (e.g. "retry outcome
 * (outcome: fixed)"), never "corrective-retry: retry-outcome", which left the outcome to the
 * detail. Made when read, never per request.
 */
function plainReason(e: PolicyEffect): string {
  const words = e.kind.replace(/-/g, ' ');
  const d = (e as { detail?: unknown }).detail;
  if (typeof d !== 'object' || d === null || Array.isArray(d)) return words;
  const parts: string[] = [];
  for (const [k, v] of Object.entries(d as Record<string, unknown>)) {
    const shown =
      typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean'
        ? String(v)
        : Array.isArray(v) && v.every((x) => typeof x === 'string' || typeof x === 'number')
          ? v.join(', ')
          : undefined;
    if (shown !== undefined && shown.length <= 200) parts.push(`${k}: ${shown}`);
    if (parts.length === 6) break;
  }
  return parts.length === 0 ? words : `${words} (${parts.join('; ')})`;
}

/** What each normalization of the upstream's answer did (normalize-tool-calls' kinds). */
const NORMALIZATION_WORDS: Readonly<Record<string, string>> = {
  'empty-tool-calls': "the upstream's empty tool_calls list left out",
  'finish-reason': 'finish_reason "tool_calls" without a call, sent as "stop"',
  'missing-id': 'a call without an id given one',
  'duplicate-id': "a call with an earlier call's id given its own",
  'missing-type': 'a call without type "function" given it',
  'object-arguments': 'arguments sent as a JSON value, not a string, written as its JSON text',
  'truncated-arguments': 'a call\'s arguments cut short, finish_reason sent as "length"',
  'duplicate-index': "a new call streamed at an earlier call's index, kept apart",
  'unasked-choice': "choices past the request's n dropped",
};

function reasonOf(e: PolicyEffect): string {
  const r = describeEffect(e);
  if (!r) return plainReason(e);
  switch (r.type) {
    case 'forced':
      return `forced tool use: tool_choice "${r.toolChoice}" sent upstream (a prose answer then comes through final_answer)`;
    case 'final-answer':
      return 'the answer came through the synthetic final_answer tool';
    case 'forced-but-prose':
      return 'a forced request was answered in prose all the same';
    case 'leak':
      return `tool-call text in ${r.leak.source} (${r.leak.format}): ${r.leak.outcome}${r.leak.reason ? `, ${r.leak.reason}` : ''}`;
    case 'validation-failed':
      return `call to ${r.tool} failed validation${r.undeclared ? ' (undeclared tool)' : ''}`;
    case 'schema-unenforced':
      return `schema of ${r.tool} not fully enforced: ${r.reasons.join(', ')}`;
    case 'retry':
      return `corrective retry asked for: ${r.reason}`;
    case 'tally': {
      // A normalization in words where it has them: "normalizations: empty-tool-calls" was on
      // nearly every vLLM answer (its `tool_calls: []`) and said nothing to a reader.
      const words = r.tally === 'normalizations' ? NORMALIZATION_WORDS[r.key] : undefined;
      const times = r.count > 1 ? ` x${r.count}` : '';
      return words ? `normalized: ${words}${times}` : `${r.tally}: ${r.key}${times}`;
    }
    case 'degraded':
      // What its policy says happened (which images went as notes, and why), else its kind.
      if (r.reason) return r.reason;
  }
  return plainReason(e);
}

/** The feedback a corrective retry sends: the messages it adds to the attempt it retries. */
export function captureRetry(
  call: ChatCall,
  reason: string,
  sent: ChatCompletionRequest,
  next: ChatCompletionRequest,
): void {
  if (!call.capture) return;
  const before = Array.isArray(sent.messages) ? sent.messages.length : 0;
  const added = Array.isArray(next.messages) ? next.messages.slice(before) : [];
  const feedback = added
    .filter((m) => m.role !== 'assistant')
    .map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)))
    .join('\n');
  captureDecision(call, 'retry-feedback', `corrective retry (${reason}): feedback sent`, {
    feedback,
    added,
  });
}

/** What makes a request's harness summary (server/chat/harness-summary.ts harnessOf). */
/** What a request's end reads of its call: its trace and the tokens it discarded (no more, see finishCapture). */
export type FinishedCall = Pick<ChatCall, 'trace' | 'discardedTokens'>;

export type HarnessOf = (
  call: FinishedCall,
  cache: { cached: number; prompt: number } | undefined,
) => Record<string, unknown>;

/**
 * The request ended (at `now`, the performance clock): status, outcome, usage, the harness
 * summary (the summary itself, or the function that makes it: then a plain trace's summary is
 * found without making it, see plainHarness).
 */
export function finishCapture(
  call: ChatCall,
  status: number,
  finished: boolean,
  usage: Usage | undefined,
  cache: { cached: number; prompt: number } | undefined,
  harness: Record<string, unknown> | HarnessOf | undefined,
  error: ToolproofError | undefined,
  now = performance.now(),
): void {
  const w = call.capture;
  if (!w) return;
  // The call has no record from here, whenever the journal applies its end.
  call.capture = undefined;
  if (!batched(w)) {
    applyFinish(w, call.trace, call.discardedTokens, status, finished, usage, cache, harness, error, now);
    return;
  }
  // The call's trace, not the call: held until the journal is applied, the call would keep the
  // request's parsed body (its history, ~10 KB of objects an agent turn) alive past a young
  // collection or two, promoted to die in the old generation (perf30, issue 28).
  beginOp(OP_FINISH, 0);
  J.refs[J.nRefs++] = w;
  J.refs[J.nRefs++] = call.trace;
  J.refs[J.nRefs++] = usage;
  J.refs[J.nRefs++] = cache;
  J.refs[J.nRefs++] = harness;
  J.refs[J.nRefs++] = error;
  J.nums[J.nNums++] = call.discardedTokens;
  J.nums[J.nNums++] = status;
  J.nums[J.nNums++] = finished ? 1 : 0;
  J.nums[J.nNums++] = now;
}

/** Why a request the client left failed, as its record says it (shared: every such record's). */
const CLIENT_CLOSED = Object.freeze(errorOf(new ToolproofError('TP_ERR_CLIENT_CLOSED')));

/**
 * The client left while an attempt was still being read: toolproof cancelled it, and no end of
 * it comes after this one. It ends now, with the reason, rather than reading as still running
 * (a total of "…" on a request that ended) with no error on a failed request.
 */
function clientLeft(w: RecordWriter, now: number): void {
  const a = w.current;
  if (!a || a.totalMs !== undefined) return;
  a.totalMs = round(epochOf(now) - a.at);
  a.error ??= CLIENT_CLOSED;
}

function applyFinish(
  w: RecordWriter,
  t: HarnessTrace,
  discarded: number,
  status: number,
  finished: boolean,
  usage: Usage | undefined,
  cache: { cached: number; prompt: number } | undefined,
  harness: Record<string, unknown> | HarnessOf | undefined,
  error: ToolproofError | undefined,
  now: number,
): void {
  const startedAt = w.start ?? now;
  const r = w;
  w.endEvents();
  if (!finished) clientLeft(w, now);
  w.endClient(status);
  r.inFlight = false;
  r.status = finished ? status : 'aborted';
  r.durationMs = now - startedAt;
  r.attempts = t.attempts;
  if (t.droppedTools?.length)
    applyDecision(
      w,
      round(now - (w.start ?? 0)),
      t.attempts,
      'dropped-tools',
      `hosted tools left out of the upstream request: ${t.droppedTools.join(', ')}`,
      undefined,
      undefined,
    );
  // Any attempt sent again is a retry: a re-ask, and the upstream's refusal (images, schema
  // keywords, tool_choice "required") or cut stream that toolproof sent again rewritten.
  const retried = t.retries.length > 0 || t.refused !== undefined || t.resentAfterCut === true || t.fallback;
  // A re-ask whose last attempt was still invalid (settleRetry: 'failed') gave the client the
  // invalid turn: failed as well as retried; with n choices asked one request each, any choice's
  // (choiceReturnedInvalid: the earlier ones'). Only a retried request reads its retries.
  const failed =
    !finished ||
    status >= 400 ||
    error !== undefined ||
    t.finalKind === 'error' ||
    (retried && (t.retries.at(-1)?.outcome === 'failed' || t.choiceReturnedInvalid === true));
  const leak = t.leaks.length > 0 && t.leaks.some((l) => l.outcome === 'recovered');
  const final = t.finalKind === 'final_answer' || t.finalAnswer;
  // What went upstream is not all the client sent: content as a note or cut (images the backend
  // could not take, a document's text, a long tool result), hosted tools left out. On every turn
  // that carries it, a remembered refusal's turns included, which no other kind marks.
  const degraded = !isEmpty(t.degraded) || (t.droppedTools?.length ?? 0) > 0;
  // One kind (nearly every request): a shared array; several: an array of their own.
  const kinds: Outcome[] =
    +failed + +retried + +leak + +final + +degraded > 1
      ? (['failed', 'retried', 'leak_recovered', 'final_answer', 'degraded'] as const).filter(
          (_, i) => [failed, retried, leak, final, degraded][i],
        )
      : ONE_KIND[
          failed
            ? 'failed'
            : retried
              ? 'retried'
              : leak
                ? 'leak_recovered'
                : final
                  ? 'final_answer'
                  : degraded
                    ? 'degraded'
                    : 'clean'
        ];
  r.kinds = kinds;
  r.outcome = kinds[0]!;
  w.setTokens(
    cache?.cached ?? cachedOf(usage),
    usage?.prompt_tokens ?? cache?.prompt ?? null,
    usage?.completion_tokens ?? null,
  );
  if (error) r.error = errorOf(error);
  else if (!finished) r.error = CLIENT_CLOSED;
  if (harness) {
    if (typeof harness !== 'function') keepHarness(w, compact(harness));
    else if (!plainHarness(w, t, discarded, cache, harness)) {
      keepHarness(w, compact(harness({ trace: t, discardedTokens: discarded }, cache)));
      learnPlain(w, t, harness);
    }
    // Counted by its parts, not serialized: a few fields and the trace's short lists.
    w.note(harnessChars(t));
  }
  w.settle();
  w.start = undefined;
}

/**
 * The harness summary as kept: its empty lists and tallies the shared empty ones, not the
 * trace's own (a request's trace holds a dozen, each an object the ring would keep).
 */
function compact(h: Record<string, unknown>): Record<string, unknown> {
  for (const k in h) {
    const v = h[k];
    if (typeof v !== 'object' || v === null || v === EMPTY_LIST || v === EMPTY_TALLY) continue;
    if (Array.isArray(v)) {
      if (v.length === 0) h[k] = EMPTY_LIST;
      else h[k] = boundedList(v);
    } else if (isEmpty(v)) h[k] = EMPTY_TALLY;
  }
  return h;
}

/** Entries of one of the summary's lists a record keeps (the rest are counted in a last entry). */
const LIST_ENTRIES = 32;

/**
 * A list of the harness summary as a record keeps it: its strings (a tool name the model made up,
 * of any length) cut at NAME_CHARS, at most LIST_ENTRIES entries; the list itself when nothing
 * needed cutting (nearly always). A copy: the log line's summary is the same object.
 */
function boundedList(list: unknown[]): unknown[] {
  let out: unknown[] | undefined;
  const n = Math.min(list.length, LIST_ENTRIES);
  for (let i = 0; i < n; i++) {
    const v = list[i];
    const b = bounded(v, 2);
    if (b !== v) (out ??= list.slice(0, n))[i] = b;
  }
  if (list.length > n) (out ??= list.slice(0, n)).push(`… ${list.length - n} more`);
  return out ?? list;
}

function bounded(v: unknown, depth: number): unknown {
  if (typeof v === 'string') return cutShort(v);
  if (typeof v !== 'object' || v === null) return v;
  if (depth === 0) return '…';
  if (Array.isArray(v)) {
    let out: unknown[] | undefined;
    const n = Math.min(v.length, LIST_ENTRIES);
    for (let i = 0; i < n; i++) {
      const b = bounded(v[i], depth - 1);
      if (b !== v[i]) (out ??= v.slice(0, n))[i] = b;
    }
    if (v.length > n) (out ??= v.slice(0, n)).push(`… ${v.length - n} more`);
    return out ?? v;
  }
  let out: Record<string, unknown> | undefined;
  for (const k in v) {
    const x = (v as Record<string, unknown>)[k];
    const b = bounded(x, depth - 1);
    if (b !== x) (out ??= { ...(v as Record<string, unknown>) })[k] = b;
  }
  return out ?? v;
}
const EMPTY_LIST = Object.freeze([]);

/**
 * The harness summary's fields that differ from one request to the next (times, token counts),
 * kept as the record's own numbers; its other fields (booleans, a few names, the shared empty
 * lists and tallies: the same over and over) as one shared frozen copy (RecordWriter.shareHarness):
 * no object of the record's own (one of ~25 fields, 0.2 KB the collector promoted with every
 * record). Any other value (a leak, a retry, a tally with counts) keeps the summary as it is.
 */
const HARNESS_NUMBERS = ['queuedMs', 'cachedTokens', 'promptTokens', 'discardedTokens'] as const;
/** queuedMs is kept in tenths (harnessOf rounds it to one decimal). */
const HARNESS_SCALE = [10, 1, 1, 1] as const;
const HARNESS_MAX = 64;
/** The shared copies, each with its keys in order (a copy is found by keys and values alike). */
let sharedHarnesses: { copy: Readonly<Record<string, unknown>>; keys: readonly string[] }[] = [];
const SCRATCH_NUMBERS = [-1, -1, -1, -1];

function keepHarness(w: RecordWriter, h: Record<string, unknown>): void {
  for (let i = 0; i < 4; i++) {
    const v = h[HARNESS_NUMBERS[i]!];
    if (v === undefined) {
      SCRATCH_NUMBERS[i] = -1;
      continue;
    }
    const n = typeof v === 'number' ? Math.round(v * HARNESS_SCALE[i]!) : -1;
    // A small non-negative integer that reads back as the same number, or the summary as it is.
    if (!(n >= 0 && n <= 0x3fffffff && n / HARNESS_SCALE[i]! === v)) {
      w.harness = h;
      return;
    }
    SCRATCH_NUMBERS[i] = n;
  }
  const shared = sharedHarness(h);
  if (shared === undefined) w.harness = h;
  else
    w.shareHarness(
      shared,
      SCRATCH_NUMBERS[0]!,
      SCRATCH_NUMBERS[1]!,
      SCRATCH_NUMBERS[2]!,
      SCRATCH_NUMBERS[3]!,
    );
}

function isHarnessNumber(k: string): boolean {
  return k === 'queuedMs' || k === 'cachedTokens' || k === 'promptTokens' || k === 'discardedTokens';
}

/** A shared copy with `h`'s fields (its numbers aside), or undefined when one is not shareable. */
function sharedHarness(h: Record<string, unknown>): Readonly<Record<string, unknown>> | undefined {
  for (const t of sharedHarnesses) if (sameHarness(t.copy, t.keys, h)) return t.copy;
  const copy: Record<string, unknown> = {};
  const keys: string[] = [];
  for (const k in h) {
    keys.push(ownString(k));
    const v = h[k];
    if (isHarnessNumber(k)) copy[k] = undefined;
    else if (v === undefined || v === null || v === EMPTY_LIST || v === EMPTY_TALLY) copy[k] = v;
    else if (typeof v === 'string') {
      if (v.length > 64) return undefined;
      copy[k] = ownString(v);
    } else if (typeof v === 'number' || typeof v === 'boolean') copy[k] = v;
    else return undefined;
  }
  Object.freeze(copy);
  if (sharedHarnesses.length >= HARNESS_MAX) sharedHarnesses = [];
  sharedHarnesses.push({ copy, keys: Object.freeze(keys) });
  return copy;
}

/** Whether the shared copy `t` (its keys in order: `keys`) has `h`'s keys, in order, and values (its numbers aside). */
function sameHarness(
  t: Readonly<Record<string, unknown>>,
  keys: readonly string[],
  h: Record<string, unknown>,
): boolean {
  let i = 0;
  for (const k in h) {
    if (keys[i++] !== k) return false;
    if (!isHarnessNumber(k) && t[k] !== h[k]) return false;
  }
  return i === keys.length;
}

/**
 * The harness summaries of plain traces (no leak, retry, repair, tally, validation failure,
 * degradation, dropped tool or route fallback: nearly every request's), found by the trace's few
 * fields that vary (forced, the tool choice sent, ...) without making the summary: harnessOf's
 * object of ~25 fields, then two walks over its keys (compact, sharedHarness) cost ~3 µs a
 * request, about a tenth of capture's cost on a short stream. Each entry is the shared copy the
 * full path made (learnPlain), so a hit keeps what that path keeps; a summary with a field this
 * list does not know (harnessOf grew one) is never learned, and takes the full path.
 */
const PLAIN_FIELDS = [
  'forced',
  'toolChoice',
  'fallback',
  'attempts',
  'repairs',
  'leaks',
  'retries',
  'normalizations',
  'constraints',
  'finalAnswerProblems',
  'validationFailures',
  'unenforced',
  'droppedTools',
  'schemaAnswer',
  'degraded',
  'refused',
  'resentAfterCut',
  'cachedTokens',
  'promptTokens',
  'discardedTokens',
  'key',
  'routeFallbacks',
  'servedBy',
  'priority',
  'queuedMs',
  'final',
].join();
const PLAIN_MAX = 64;

interface PlainEntry {
  forced: boolean;
  toolChoice: string | undefined;
  fallback: boolean;
  attempts: number;
  schemaAnswer: string | undefined;
  key: string | undefined;
  servedBy: string | undefined;
  priority: string | undefined;
  final: string | null;
  copy: Readonly<Record<string, unknown>>;
}
let plainEntries: PlainEntry[] = [];
/** The function the entries were learned from (another one starts afresh). */
let plainOf: HarnessOf | undefined;

function isPlainTrace(t: ChatCall['trace']): boolean {
  return (
    t.leaks.length === 0 &&
    t.retries.length === 0 &&
    t.validationFailures.length === 0 &&
    t.unenforced.length === 0 &&
    t.droppedTools === undefined &&
    t.routeFallbacks === undefined &&
    t.refused === undefined &&
    t.resentAfterCut === undefined &&
    isEmpty(t.repairs) &&
    isEmpty(t.normalizations) &&
    isEmpty(t.constraints) &&
    isEmpty(t.finalAnswerProblems) &&
    isEmpty(t.degraded)
  );
}

/** The entry for a plain trace's fields, if one was learned. */
function plainEntry(t: ChatCall['trace']): PlainEntry | undefined {
  const toolChoice = t.toolChoiceSent ? t.toolChoiceSent : undefined;
  const schemaAnswer = t.schemaAnswer ? t.schemaAnswer : undefined;
  const key = t.key ? t.key : undefined;
  const servedBy = t.servedBy ? t.servedBy : undefined;
  const priority = t.priority ? t.priority : undefined;
  const final = t.finalKind ?? null;
  for (const e of plainEntries)
    if (
      e.forced === t.forced &&
      e.toolChoice === toolChoice &&
      e.fallback === t.fallback &&
      e.attempts === t.attempts &&
      e.schemaAnswer === schemaAnswer &&
      e.key === key &&
      e.servedBy === servedBy &&
      e.priority === priority &&
      e.final === final
    )
      return e;
  return undefined;
}

/** The numbers of a plain trace's summary as keepHarness keeps them, in SCRATCH_NUMBERS; false when one is not kept so. */
function plainNumbers(
  t: HarnessTrace,
  d: number,
  cache: { cached: number; prompt: number } | undefined,
): boolean {
  const q = Math.round(t.queuedMs * 10) / 10;
  const n0 = Math.round(q * 10);
  if (!(n0 >= 0 && n0 <= 0x3fffffff && n0 / 10 === q)) return false;
  SCRATCH_NUMBERS[0] = n0;
  if (cache) {
    if (!smallInt(cache.cached) || !smallInt(cache.prompt)) return false;
    SCRATCH_NUMBERS[1] = cache.cached;
    SCRATCH_NUMBERS[2] = cache.prompt;
  } else SCRATCH_NUMBERS[1] = SCRATCH_NUMBERS[2] = -1;
  if (d > 0 && !smallInt(d)) return false;
  SCRATCH_NUMBERS[3] = d > 0 ? d : -1;
  return true;
}

function smallInt(n: number): boolean {
  return Number.isInteger(n) && n >= 0 && n <= 0x3fffffff;
}

/** Keeps a plain trace's summary from a learned entry; false when there is none (or it is not plain). */
function plainHarness(
  w: RecordWriter,
  t: HarnessTrace,
  discarded: number,
  cache: { cached: number; prompt: number } | undefined,
  of: HarnessOf,
): boolean {
  if (of !== plainOf || plainEntries.length === 0 || !isPlainTrace(t)) return false;
  const e = plainEntry(t);
  if (e === undefined || !plainNumbers(t, discarded, cache)) return false;
  w.shareHarness(e.copy, SCRATCH_NUMBERS[0]!, SCRATCH_NUMBERS[1]!, SCRATCH_NUMBERS[2]!, SCRATCH_NUMBERS[3]!);
  return true;
}

/**
 * After the full path kept a plain trace's summary as a shared copy: that copy, for its fields,
 * when its keys are the ones PLAIN_FIELDS lists.
 */
function learnPlain(w: RecordWriter, t: HarnessTrace, of: HarnessOf): void {
  const copy = w.sharedHarness;
  if (copy === undefined || !isPlainTrace(t) || Object.keys(copy).join() !== PLAIN_FIELDS) return;
  if (of !== plainOf) {
    plainOf = of;
    plainEntries = [];
  }
  if (plainEntry(t) !== undefined) return;
  if (plainEntries.length >= PLAIN_MAX) plainEntries = [];
  plainEntries.push({
    forced: t.forced,
    toolChoice: t.toolChoiceSent ? t.toolChoiceSent : undefined,
    fallback: t.fallback,
    attempts: t.attempts,
    schemaAnswer: t.schemaAnswer ? t.schemaAnswer : undefined,
    key: t.key ? t.key : undefined,
    servedBy: t.servedBy ? t.servedBy : undefined,
    priority: t.priority ? t.priority : undefined,
    final: t.finalKind ?? null,
    copy,
  });
}

readHarnessWith((shared, n0, n1, n2, n3) => {
  // A copy of the shared one (its keys in order), its numbers this request's own.
  const h: Record<string, unknown> = { ...shared };
  h.queuedMs = n0 < 0 ? undefined : n0 / 10;
  h.cachedTokens = n1 < 0 ? undefined : n1;
  h.promptTokens = n2 < 0 ? undefined : n2;
  h.discardedTokens = n3 < 0 ? undefined : n3;
  return h;
});
const EMPTY_TALLY = Object.freeze({});

function isEmpty(o: object): boolean {
  for (const _ in o) return false;
  return true;
}

/**
 * What the harness summary costs, about: its fixed fields and tallies (a few keys each, from a
 * short list of kinds) and ~100 characters an entry of its lists.
 */
function harnessChars(t: ChatCall['trace']): number {
  return 1024 + 100 * (t.leaks.length + t.retries.length + t.validationFailures.length + t.unenforced.length);
}

function cachedOf(usage: Usage | undefined): number | null {
  const c = (usage?.prompt_tokens_details as { cached_tokens?: unknown } | null | undefined)?.cached_tokens;
  return typeof c === 'number' ? c : null;
}

function errorOf(e: ToolproofError): { code: string; status: number; message: string } {
  const message = String(e.message);
  return {
    code: e.code,
    status: e.status,
    message: message.length > MAX_DETAIL_CHARS ? ownString(message.slice(0, MAX_DETAIL_CHARS)) : message,
  };
}

function stringify(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}

/** When the call's request arrived (performance clock). */
function startOf(call: ChatCall): number {
  return call.capture?.start ?? 0;
}
