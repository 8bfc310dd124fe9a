/**
 * The log's records, assembled when read (log.ts): one pass over the log's intact entries, oldest
 * first, makes each record whose OPEN is intact; an entry of a record whose OPEN was written over
 * (a long stream still writing when the head came round) is skipped. A record's texts are
 * LazyTexts over the log's bytes (read back whole, or as cut once written over: never another
 * record's bytes). The pass costs the log's entries (its size bounds it), not the texts' bytes.
 */
import { type CaptureLog, K } from './log.js';
import {
  type Arena,
  type CapturedAttempt,
  type CapturedText,
  type CaptureRecord,
  type Decision,
  HeaderText,
  LazyText,
  type Outcome,
} from './ring.js';

const NO_TEXT: CapturedText = Object.freeze({ text: '', cut: 0 });
const IN_FLIGHT: Outcome[] = Object.freeze(['in_flight']) as unknown as Outcome[];
const KIND_NAMES: Exclude<Outcome, 'in_flight' | 'clean'>[] = [
  'failed',
  'retried',
  'leak_recovered',
  'final_answer',
];

/** How the log's shared objects read (recorder.ts registers them: the log knows no policy). */
export interface LogReaders {
  effect(atMs: number, attempt: number, copy: Record<string, unknown>): Decision;
  harness(
    shared: Readonly<Record<string, unknown>>,
    n0: number,
    n1: number,
    n2: number,
    n3: number,
  ): Record<string, unknown>;
  /** A session worked out when read: from the chat body (`opening` undefined), or a run's first request's. */
  session(r: LogRecord, opening: string | undefined): string;
}
let readers: LogReaders | undefined;
export function readLogWith(r: LogReaders): void {
  readers = r;
}

/** Pieces of a text as they are assembled (lap, offset, length, flat). */
class Pieces {
  at: number[] = [];
  add(lap: number, off: number, len: number): void {
    const a = this.at;
    const k = a.length;
    // Right after the previous piece: one piece.
    if (k > 0 && a[k - 3] === lap && a[k - 2]! + a[k - 1]! === off) a[k - 1]! += len;
    else a.push(lap, off, len);
  }
  text(log: CaptureLog, cut: number, As: typeof LazyText = LazyText): LazyText {
    const a = this.at;
    if (a.length === 0) return new As(Buffer.alloc(0), 0, 0, 0, undefined, cut);
    return new As(log.buf, a[0]!, a[1]!, a[2]!, a.length > 3 ? a : undefined, cut, log as unknown as Arena);
  }
}

class LogAttempt implements CapturedAttempt {
  n = 0;
  upstream = '';
  replica: string | undefined = undefined;
  at = 0;
  queueMs = 0;
  ttfbMs: number | undefined = undefined;
  totalMs: number | undefined = undefined;
  stream = false;
  request: CapturedText = NO_TEXT;
  status: number | undefined = undefined;
  response: CapturedText = NO_TEXT;
  events = 0;
  error: CapturedAttempt['error'] = undefined;
  /** The stream's reads while it runs. */
  reads: Pieces | undefined = undefined;
  ended = false;

  toJSON(): CapturedAttempt {
    return {
      n: this.n,
      upstream: this.upstream,
      replica: this.replica,
      at: this.at,
      queueMs: this.queueMs,
      ttfbMs: this.ttfbMs,
      totalMs: this.totalMs,
      stream: this.stream,
      request: this.request,
      status: this.status,
      response: this.response,
      events: this.events,
      error: this.error,
    };
  }
}

export class LogRecord implements CaptureRecord {
  id = '';
  worker = 0;
  at = 0;
  api = '';
  model = '';
  stream = false;
  key: string | undefined = undefined;
  inFlight = true;
  status: number | 'aborted' | null = null;
  outcome: Outcome = 'in_flight';
  kinds: Outcome[] = IN_FLIGHT;
  attempts = 0;
  tokens: CaptureRecord['tokens'] = { cached: null, prompt: null, completion: null };
  durationMs: number | null = null;
  method = '';
  path = '';
  clientRequest: CaptureRecord['clientRequest'] = { headers: {}, body: NO_TEXT };
  upstreamAttempts: LogAttempt[] = [];
  decisions: Decision[] = [];
  clientResponse: CaptureRecord['clientResponse'] = { status: null, body: NO_TEXT };
  error: CaptureRecord['error'] = undefined;
  harness: Record<string, unknown> | undefined = undefined;
  /** Its place in the log's order (assembled list), and the list. */
  index = 0;
  list: LogRecord[] = [];
  slot = 0;
  /** The session's label, or 1: from the body, 2: a run's first request (`sess` the opening). */
  sess = '';
  sessionLater: 0 | 1 | 2 | 3 = 0;
  bodyLap = 0;
  bodyOff = 0;
  frames: Pieces | undefined = undefined;
  private cache: Map<number, string> | undefined;

  constructor(cache?: Map<number, string>) {
    this.cache = cache;
  }

  get session(): string {
    const later = this.sessionLater;
    if (later === 0 || later === 3) return this.sess;
    const hit = this.cache?.get(this.slot);
    if (hit !== undefined) return hit;
    this.sessionLater = 0;
    const label = readers ? readers.session(this, later === 2 ? this.sess : undefined) : '';
    if (this.sessionLater === 0 || this.sessionLater === 3) {
      this.sess = label;
      this.cache?.set(this.slot, label);
    }
    return label;
  }

  set session(s: string) {
    this.sess = s;
    this.sessionLater = 0;
  }

  get body(): CapturedText {
    return this.clientRequest.body;
  }

  get opensRun(): boolean {
    return this.sessionLater >= 2;
  }

  openedRun(): void {
    this.sessionLater = 3;
  }

  deferSession(opening?: string): void {
    if (opening === undefined) this.sessionLater = 1;
    else {
      this.sess = opening;
      this.sessionLater = 2;
    }
  }

  later(max: number): LogRecord[] {
    return this.list.slice(this.index + 1, this.index + 1 + max);
  }

  /** In flight: the running attempt's stream and the client's frames so far (ring.ts soFar). */
  soFar(): { events: CapturedText | undefined; client: CapturedText | undefined } {
    const last = this.upstreamAttempts[this.upstreamAttempts.length - 1];
    const events = last !== undefined && !last.ended ? partial(last.response) : undefined;
    return { events, client: partial(this.clientResponse.body) };
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
      upstreamAttempts: this.upstreamAttempts.map((a) => a.toJSON()),
      decisions: this.decisions,
      clientResponse: this.clientResponse,
      error: this.error,
      harness: this.harness,
    };
  }
}

function partial(t: CapturedText): CapturedText {
  const text = t.text;
  // A trailing character whose bytes are not all read yet is left for the next read.
  const last = text.length > 0 ? text.charCodeAt(text.length - 1) : 0;
  return { text: last === 0xfffd ? text.slice(0, -1) : text, cut: t.cut, partial: true };
}

function str(log: CaptureLog, off: number, len: number): string {
  return len === 0 ? '' : log.buf.toString('utf8', off, off + len);
}

/**
 * The log's records, oldest first. `sessions`: the labels worked out so far, by slot (kept by
 * the caller between reads; entries of slots no longer in the log are dropped here).
 */
export function assemble(log: CaptureLog, sessions?: Map<number, string>): LogRecord[] {
  const bySlot = new Map<number, LogRecord>();
  const list: LogRecord[] = [];
  const i32 = log.i32;
  log.scan((_off, kind, slot, w, b, n, lap) => {
    if (kind === K.OPEN) {
      const r = new LogRecord(sessions);
      r.slot = slot;
      r.at = i32[w]! * 1000 + i32[w + 1]!;
      const flags = i32[w + 2]!;
      r.stream = (flags & 1) !== 0;
      r.worker = i32[w + 3]!;
      let o = b;
      const next = (k: number) => {
        const s = str(log, o, i32[w + k]!);
        o += i32[w + k]!;
        return s;
      };
      r.id = next(4);
      r.api = next(5);
      r.model = next(6);
      r.method = next(7);
      r.path = next(8);
      const key = next(9);
      r.key = (flags & 2) !== 0 ? key : undefined;
      r.sess = next(10);
      const mode = (flags >> 2) & 3;
      r.sessionLater = mode === 0 ? 0 : mode === 1 ? 1 : 2;
      r.index = list.length;
      r.list = list;
      list.push(r);
      bySlot.set(slot, r);
      return;
    }
    const r = bySlot.get(slot);
    if (r === undefined) return;
    const a = r.upstreamAttempts[r.upstreamAttempts.length - 1];
    switch (kind) {
      case K.HEADERS:
        r.clientRequest.headers = new HeaderText(log.buf, lap, b, n, undefined, 0, log as unknown as Arena);
        return;
      case K.BODY:
        r.clientRequest.body = new LazyText(log.buf, lap, b, n, undefined, i32[w]!, log as unknown as Arena);
        r.bodyLap = lap;
        r.bodyOff = b;
        return;
      case K.ATTEMPT: {
        const t = new LogAttempt();
        t.n = i32[w]!;
        t.at = i32[w + 1]! * 1000 + i32[w + 2]!;
        t.queueMs = i32[w + 3]! / 10;
        t.stream = i32[w + 4]! !== 0;
        const u = i32[w + 5]!;
        t.upstream = str(log, b, u);
        const head = i32[w + 6]!;
        const cut = i32[w + 7]!;
        const rest = n - u;
        if (head > 0) {
          const p = new Pieces();
          p.at.push(r.bodyLap, r.bodyOff, head);
          if (rest > 0) p.at.push(lap, b + u, rest);
          t.request = p.text(log, cut);
        } else t.request = new LazyText(log.buf, lap, b + u, rest, undefined, cut, log as unknown as Arena);
        r.upstreamAttempts.push(t);
        r.attempts = t.n;
        return;
      }
      case K.OPENED:
        if (a === undefined) return;
        a.ttfbMs = i32[w]! / 10;
        if (i32[w + 1]! >= 0) a.status = i32[w + 1]!;
        if (i32[w + 2]! > 0) a.replica = str(log, b, i32[w + 2]!);
        return;
      case K.READ:
        if (a === undefined) return;
        (a.reads ??= new Pieces()).add(lap, b, n);
        a.response = a.reads.text(log, 0);
        return;
      case K.ATTEMPT_END:
        if (a === undefined) return;
        a.totalMs = i32[w]! / 10;
        a.events = i32[w + 1]!;
        if (a.reads !== undefined) a.response = a.reads.text(log, i32[w + 2]!);
        a.reads = undefined;
        a.ended = true;
        return;
      case K.ATTEMPT_BODY:
        if (a === undefined) return;
        a.response = new LazyText(log.buf, lap, b, n, undefined, i32[w]!, log as unknown as Arena);
        return;
      case K.ERROR: {
        const c = i32[w + 2]!;
        const e = { code: str(log, b, c), status: i32[w + 1]!, message: str(log, b + c, n - c) };
        if (i32[w] === 1) {
          if (a !== undefined) a.error = e;
        } else r.error = e;
        return;
      }
      case K.EFFECT: {
        const copy = log.objects[i32[w + 2]!] as Record<string, unknown> | undefined;
        if (copy !== undefined && readers) r.decisions.push(readers.effect(i32[w]! / 10, i32[w + 1]!, copy));
        return;
      }
      case K.DECISION: {
        let o = b;
        const next = (k: number) => {
          const s = str(log, o, i32[w + k]!);
          o += i32[w + k]!;
          return s;
        };
        const kindName = next(2);
        const policy = next(3);
        const reason = next(4);
        const detail = next(5);
        r.decisions.push({
          atMs: i32[w]! / 10,
          attempt: i32[w + 1]!,
          kind: kindName,
          policy: policy || undefined,
          reason,
          detail: i32[w + 5]! > 0 ? detail : undefined,
        });
        return;
      }
      case K.CLIENT:
        (r.frames ??= new Pieces()).add(lap, b, n);
        r.clientResponse.body = r.frames.text(log, 0);
        return;
      case K.FINISH: {
        const s = i32[w]!;
        r.inFlight = false;
        const status = s >= 0 ? s : -s - 1;
        r.status = s >= 0 ? s : 'aborted';
        r.durationMs = i32[w + 1]! / 10;
        r.attempts = i32[w + 2]!;
        const bits = i32[w + 3]!;
        const kinds: Outcome[] = [];
        for (let i = 0; i < 4; i++) if ((bits & (1 << i)) !== 0) kinds.push(KIND_NAMES[i]!);
        if (kinds.length === 0) kinds.push('clean');
        r.kinds = kinds;
        r.outcome = kinds[0]!;
        const tok = (v: number) => (v < 0 ? null : v);
        r.tokens = { cached: tok(i32[w + 4]!), prompt: tok(i32[w + 5]!), completion: tok(i32[w + 6]!) };
        r.clientResponse = {
          status,
          body:
            r.frames !== undefined
              ? r.frames.text(log, i32[w + 7]!)
              : i32[w + 7]! > 0
                ? { text: '', cut: i32[w + 7]! }
                : NO_TEXT,
        };
        const h = i32[w + 8]!;
        if (h >= 0 && readers) {
          const copy = log.objects[h] as Readonly<Record<string, unknown>> | undefined;
          if (copy !== undefined)
            r.harness = readers.harness(copy, i32[w + 9]!, i32[w + 10]!, i32[w + 11]!, i32[w + 12]!);
        } else if (i32[w + 13]! > 0) {
          try {
            r.harness = JSON.parse(str(log, b, i32[w + 13]!)) as Record<string, unknown>;
          } catch {
            r.harness = undefined;
          }
        }
        return;
      }
    }
  });
  if (sessions !== undefined && sessions.size > 2 * list.length + 64) {
    const first = list.length > 0 ? list[0]!.slot : Number.POSITIVE_INFINITY;
    for (const slot of sessions.keys()) if (slot < first) sessions.delete(slot);
  }
  return list;
}
