/**
 * What the inspector API answers, from one process's ring (ring.ts): the list, one request with
 * its views (what the model wrote beside what the client received, copy-as-curl per attempt),
 * the sessions, and one session's turns with their prompt-prefix check (docs/prefix.md). Plain
 * data in, plain data out: the same answers travel between cluster workers (cluster.ts).
 */
import { type Reassembled, reassemble } from './reassemble.js';
import { REDACTED as REDACTED_VALUE } from './redact.js';
import {
  type CapturedAttempt,
  type CaptureQuery,
  type CaptureRecord,
  type CaptureRing,
  type CaptureSummary,
  RecordWriter,
  summaryOf,
} from './ring.js';

export type CaptureOp =
  | { op: 'list'; query: CaptureQuery }
  | { op: 'get'; id: string; owner?: string }
  | { op: 'sessions'; owner?: string }
  | { op: 'session'; key: string; owner?: string }
  /** One session's requests whole, in the ring's order (a session's export: docs/inspect.md). */
  | { op: 'export'; key: string; owner?: string; chars?: number }
  | { op: 'stats' };

export interface RequestView {
  record: CaptureRecord;
  /** Per attempt, what the model wrote (its response read back). */
  modelWrote: Reassembled[];
  /** What the client received, read back. */
  clientReceived: Reassembled;
  /** Per attempt, a curl command that replays it against the backend (no credentials). */
  curl: string[];
  /**
   * Per attempt, the choice it served when the client's `n` choices were asked one request each
   * (the `choice-asked` decisions); null for an attempt that asked them all, or when none were split.
   */
  attemptChoice: Array<number | null>;
}

export interface SessionSummary {
  session: string;
  requests: number;
  first: number;
  last: number;
  models: string[];
  failed: number;
}

export interface SessionTurn {
  summary: CaptureSummary;
  /** Cached prompt tokens over prompt tokens, when the upstream reported both. */
  cachedRatio: number | null;
  /**
   * Whether the prompt kept the previous turn's bytes: null for the first turn or when a body
   * was cut; otherwise where the first difference is (docs/prefix.md): in which part, at which
   * byte of the prompt (`offset`) and of that part (`partOffset`). `opens`: a prompt of its own,
   * continuing none of the turns before it (see againstParent).
   */
  prefix:
    | { kept: true }
    | { kept: false; where: string; offset: number; partOffset: number; before: string; after: string }
    | { opens: true }
    | { earlier: number }
    | null;
}

/**
 * A turn as the session view reads it (turnsOf): its summary and the prompt it sent first, whole
 * (null when that body was cut or no attempt was made). Only this travels between workers: the
 * whole records (each attempt as sent, the responses, the client's bodies) went through the
 * cluster's primary for each session read, ~2x the bytes of the prompts and more with retries.
 */
export interface SessionRecord {
  summary: CaptureSummary;
  prompt: string | null;
}

export function sessionRecordOf(r: CaptureRecord): SessionRecord {
  const first = r.upstreamAttempts[0];
  return { summary: summaryOf(r), prompt: first && first.request.cut === 0 ? first.request.text : null };
}

/** One worker's part of a session's export: its newest requests up to its share of EXPORT_CHARS, in order. */
export interface ExportPart {
  requests: RequestView[];
  /** Its older requests of the session left out for the bound. */
  omitted: number;
}

/**
 * The most JSON characters of views a session export holds (16 MiB, the relay's burst for one
 * reader: capture/cluster.ts), each of N workers' parts a 1/N share (the route asks `chars`): two
 * full parts relayed 28 MB through the primary, which parses and writes each byte again. A view is ~2x the ring's bytes of it (the
 * attempt's request again as curl, quoted), so a session that filled a large ring came whole:
 * 2 GB of JSON for TOOLPROOF_CAPTURE_MB=1024, past V8's longest string, and every read stalled the
 * event loop ~14 ms a MB on this box. The newest requests are kept (a bug report's last turns).
 */
export const EXPORT_CHARS = 16 * 1024 * 1024;

function exportOf(records: CaptureRecord[], most: number): ExportPart {
  const requests: RequestView[] = [];
  let chars = 0;
  for (let i = records.length - 1; i >= 0; i--) {
    const r = records[i]!;
    const view = viewOf(withSoFar(snapshotOf(r), r));
    // And the diffBase the route adds: the client's request again (translated, for Messages and
    // Responses: about its size).
    chars += JSON.stringify(view).length + JSON.stringify(view.record.clientRequest.body.text).length;
    if (chars > most) return { requests: requests.reverse(), omitted: i + 1 };
    requests.push(view);
  }
  return { requests: requests.reverse(), omitted: 0 };
}

export interface Stats {
  worker: number;
  enabled: boolean;
  bytes: number;
  maxBytes: number;
  records: number;
}

export function answer(ring: CaptureRing | undefined, op: CaptureOp, worker: number): unknown {
  if (op.op === 'stats')
    return {
      worker,
      enabled: ring !== undefined,
      bytes: ring?.bytes ?? 0,
      maxBytes: ring?.limits.maxBytes ?? 0,
      records: ring?.size ?? 0,
    } satisfies Stats;
  if (!ring) {
    if (op.op === 'export') return { requests: [], omitted: 0 } satisfies ExportPart;
    return op.op === 'get' ? null : op.op === 'list' ? { requests: [], older: 0 } : [];
  }
  switch (op.op) {
    case 'list': {
      const page = ring.page(op.query);
      // An owner's list says how many of its requests other keys' traffic pushed out of the ring.
      const dropped = op.query.owner === undefined ? undefined : ring.droppedForOthers.get(op.query.owner);
      return dropped === undefined ? page : { ...page, droppedForOthers: { ...dropped } };
    }
    case 'get': {
      const r = op.owner === undefined ? ring.get(op.id) : ring.ownRecord(op.id, op.owner);
      return r ? viewOf(withSoFar(snapshotOf(r), r)) : null;
    }
    case 'sessions':
      return sessionsOf(ring, op.owner);
    case 'session':
      return ring.session(op.key, op.owner).map(sessionRecordOf);
    case 'export':
      return exportOf(ring.session(op.key, op.owner), Math.min(op.chars ?? EXPORT_CHARS, EXPORT_CHARS));
  }
}

/**
 * A record as it reads now, in objects of its own: the ring reuses a record's object (and its
 * first attempt's) once the record is evicted (ring.ts CaptureRing.open), and an answer is read
 * after an await (the route, the cluster's gathering). Its texts stay bytes of the arena, each
 * read back whole or as cut (LazyText), never as another record's.
 */
function snapshotOf(r: CaptureRecord): CaptureRecord {
  const json = (r as { toJSON?: () => CaptureRecord }).toJSON?.() ?? { ...r };
  return {
    ...json,
    upstreamAttempts: json.upstreamAttempts.map(
      (a) => (a as { toJSON?: () => CapturedAttempt }).toJSON?.() ?? { ...a },
    ),
  };
}

/**
 * A snapshot of a request in flight with what it has read and sent so far (RecordWriter.soFar):
 * the running attempt's stream as its response, the client's frames as its response body, each
 * marked `partial`. Read for one request at a time (this answer), never for the list or a
 * session; a record that ended is returned as it was.
 */
function withSoFar(snapshot: CaptureRecord, r: CaptureRecord): CaptureRecord {
  if (!snapshot.inFlight || !(r instanceof RecordWriter)) return snapshot;
  const { events, client } = r.soFar();
  const attempts = snapshot.upstreamAttempts;
  const last = attempts[attempts.length - 1];
  return {
    ...snapshot,
    upstreamAttempts:
      events === undefined || last === undefined
        ? attempts
        : [...attempts.slice(0, -1), { ...last, response: events }],
    clientResponse:
      client === undefined ? snapshot.clientResponse : { ...snapshot.clientResponse, body: client },
  };
}

function viewOf(record: CaptureRecord): RequestView {
  const clientReceived = reassemble(record.clientResponse.body.text);
  // The client got no end when it left first: said, as the attempt it cancelled says it.
  if (clientReceived.finish.length === 0 && record.status === 'aborted')
    clientReceived.finish = [CLIENT_CLOSED];
  return {
    record,
    modelWrote: record.upstreamAttempts.map((a) => endedBy(record, a, reassemble(a.response.text))),
    clientReceived,
    curl: record.upstreamAttempts.map((a) => curlOf(record, a)),
    attemptChoice: attemptChoices(record),
  };
}

/**
 * An attempt's finish reasons when the upstream's response named none (docs/inspect.md): who
 * ended it, in the words its span's gen_ai.response.finish_reasons uses (server/tracing/sdk.ts).
 * The client left and toolproof cancelled it; toolproof cut it off itself (its `early-stop`
 * decision); it failed after its response opened (a 2xx then a cut, an error event, a stall).
 * Read when the record is read: nothing of it is kept per request.
 */
const CLIENT_CLOSED = 'client_closed';
function endedBy(record: CaptureRecord, a: CapturedAttempt, wrote: Reassembled): Reassembled {
  if (wrote.finish.length > 0) return wrote;
  const code = a.error?.code;
  if (code === 'TP_ERR_CLIENT_CLOSED') wrote.finish = [CLIENT_CLOSED];
  else if (record.decisions.some((d) => d.kind === 'early-stop' && d.attempt === a.n))
    wrote.finish = ['early_stop'];
  else if (code !== undefined && typeof a.status === 'number' && a.status >= 200 && a.status < 300)
    wrote.finish = ['error'];
  return wrote;
}

/**
 * The choice each attempt served, from the `choice-asked` decisions (each: a choice's index and
 * the attempt it starts from, up to the next choice's first).
 */
function attemptChoices(record: CaptureRecord): Array<number | null> {
  const starts: Array<{ index: number; from: number }> = [];
  for (const d of record.decisions) {
    if (d.kind !== 'choice-asked' || d.detail === undefined) continue;
    try {
      const { index, fromAttempt } = JSON.parse(d.detail) as { index?: unknown; fromAttempt?: unknown };
      if (typeof index === 'number' && typeof fromAttempt === 'number')
        starts.push({ index, from: fromAttempt });
    } catch {
      // a detail cut by the capture: that choice's attempts go unlabelled
    }
  }
  return record.upstreamAttempts.map((a) => {
    let choice: number | null = null;
    let from = 0;
    for (const s of starts)
      if (s.from <= a.n && s.from >= from) {
        choice = s.index;
        from = s.from;
      }
    return choice;
  });
}

const shellQuote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

/** The placeholder the copied command puts where the backend's key went (the user sets it). */
const KEY_PLACEHOLDER = `\${TOOLPROOF_UPSTREAM_API_KEY:?set it to the key toolproof sends the backend}`;

/**
 * Where the attempt went: its replica (an origin) with the upstream's path, else the upstream's
 * first URL; `note` when that is a guess (several replicas, the one that answered not known).
 */
function attemptUrl(upstream: string, replica: string | undefined): { url: string; note?: string } {
  const urls = upstream.split(',');
  const first = urls[0] ?? upstream;
  let origin = first;
  let path = '';
  try {
    const u = new URL(/^https?:\/\//.test(first) ? first : `http://${first}`);
    origin = u.origin;
    path = u.pathname.replace(/\/+$/, '');
  } catch {
    // not a URL (a label only): as it is
  }
  if (replica !== undefined && replica !== '') {
    try {
      origin = new URL(/^https?:\/\//.test(replica) ? replica : `http://${replica}`).origin;
    } catch {
      origin = replica;
    }
    return { url: `${origin}${path}/chat/completions` };
  }
  const url = `${origin}${path}/chat/completions`;
  return urls.length > 1
    ? {
        url,
        note: `# One of ${urls.length} replicas answered (which one was not recorded): this is the first.`,
      }
    : { url };
}

/** An attempt's place in the user's traces: its trace and its own (CLIENT) span. */
export interface AttemptTrace {
  traceId: string;
  spanId: string;
}

const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/**
 * Per attempt, its trace and span ids (docs/inspect.md), read from the `traceparent` it was sent
 * with: with tracing on, a sampled attempt's names its own span (server/tracing/sdk.ts), so the
 * ids cost the request nothing (its headers are kept anyway). Null for an attempt the sampler
 * left out (flags 00: no span), one whose headers were not kept, and every attempt when tracing
 * is off (`tracing` false: the header then is the client's own, forwarded, naming no span of
 * toolproof's).
 */
export function attemptTraces(record: CaptureRecord, tracing: boolean): Array<AttemptTrace | null> {
  return record.upstreamAttempts.map((a) => {
    if (!tracing) return null;
    const m = TRACEPARENT.exec(headerObject(a.headers)?.traceparent ?? '');
    // Bit 0 of the flags: sampled. toolproof writes 01 for a span it made, 00 for none.
    return m && (Number.parseInt(m[3]!, 16) & 1) === 1 ? { traceId: m[1]!, spanId: m[2]! } : null;
  });
}

/** Headers as kept (a HeaderText in this process, an object from another worker's JSON). */
function headerObject(h: CapturedAttempt['headers']): Readonly<Record<string, string>> | undefined {
  if (h === undefined || h === null) return undefined;
  return typeof (h as { object?: unknown }).object === 'function'
    ? (h as { object(): Record<string, string> }).object()
    : (h as Readonly<Record<string, string>>);
}

/**
 * The here-document's end: `TOOLPROOF_BODY` and the fewest underscores that no line of the body
 * is (a line that were would end the body there, and the shell run the rest as commands). One
 * pass over the body: a client's body of lines `TOOLPROOF_BODY`, `TOOLPROOF_BODY_`, ... tried
 * one delimiter a pass read the body once per line.
 */
function delimiterFor(body: string): string {
  const taken = new Set<number>();
  for (const m of body.matchAll(/^TOOLPROOF_BODY(_*)$/gm)) taken.add(m[1]!.length);
  let n = 0;
  while (taken.has(n)) n++;
  return `TOOLPROOF_BODY${'_'.repeat(n)}`;
}

/**
 * A shell command that sends the attempt again as toolproof sent it: the same URL, headers in
 * their order (the backend's key as a variable the user sets: toolproof never keeps it) and body
 * bytes. curl's own `accept` and `user-agent` are turned off (toolproof sends neither). A body
 * of one line goes by `--data @-`, which drops the here-document's closing newline: the bytes
 * as sent; one with line breaks of its own (a client's pretty-printed body forwarded as it came)
 * by `--data-binary @-`, with that newline added at its end.
 */
function curlOf(record: CaptureRecord, a: CapturedAttempt): string {
  const body = a.request.text;
  const { url, note } = attemptUrl(a.upstream, a.replica);
  const headers = headerObject(a.headers);
  const lines = [
    `# Replays attempt ${a.n} of ${record.id} as toolproof sent it (URL, headers, body).`,
    ...(note ? [note] : []),
    ...(a.request.cut > 0
      ? [`# The captured body was cut (${a.request.cut} characters left out): this replay is incomplete.`]
      : []),
  ];
  const flags: string[] = [];
  let keyed = false;
  if (headers === undefined) {
    lines.push('# The headers it was sent with were not kept (its record ran out of room).');
    flags.push(`-H 'content-type: application/json'`);
  } else {
    for (const [name, value] of Object.entries(headers)) {
      if (value !== REDACTED_VALUE) flags.push(`-H ${shellQuote(`${name}: ${value}`)}`);
      else if (name.toLowerCase() === 'authorization') {
        keyed = true;
        flags.push(`-H "authorization: Bearer ${KEY_PLACEHOLDER}"`);
      } else lines.push(`# Its ${name} header carried a credential, not kept: add it.`);
    }
  }
  if (keyed)
    lines.push(
      "# It carried the backend's key, which toolproof never keeps: set TOOLPROOF_UPSTREAM_API_KEY.",
    );
  const multiline = /[\r\n]/.test(body);
  const delimiter = delimiterFor(body);
  lines.push(
    // -N: a stream's events are written as they arrive (curl's output buffer held them back).
    `curl -sS${a.stream ? ' -N' : ''} ${shellQuote(url)} \\`,
    ...flags.map((f) => `  ${f} \\`),
    "  -H 'accept:' -H 'user-agent:' \\",
    `  ${multiline ? '--data-binary' : '--data'} @- <<'${delimiter}'`,
    body,
    delimiter,
  );
  return lines.join('\n');
}

function sessionsOf(ring: CaptureRing, owner: string | undefined): SessionSummary[] {
  const by = new Map<string, SessionSummary>();
  // Each session's models as a Set: a session whose every request names its own model (up to
  // 256 characters kept) searched its list per record, the records squared.
  const models = new Map<SessionSummary, Set<string>>();
  // Every record of the ring (a full ring of short requests holds thousands).
  for (const s of ring
    .list({ limit: Number.POSITIVE_INFINITY, ...(owner === undefined ? {} : { owner }) })
    .reverse()) {
    let e = by.get(s.session);
    if (!e) {
      e = { session: s.session, requests: 0, first: s.at, last: s.at, models: [], failed: 0 };
      by.set(s.session, e);
      models.set(e, new Set());
    }
    e.requests++;
    e.last = Math.max(e.last, s.at);
    e.first = Math.min(e.first, s.at);
    const seen = models.get(e)!;
    if (!seen.has(s.model)) {
      seen.add(s.model);
      e.models.push(s.model);
    }
    if (s.outcome === 'failed') e.failed++;
  }
  return [...by.values()];
}

/**
 * How many earlier turns a turn is compared with to find the one it continues. An agent's side
 * requests fork the conversation in the same session (Claude Code's: the main loop's prompt and
 * one user message of their own, "CRITICAL: Respond with TEXT ONLY..."): the main loop's next
 * turn continues the turn before the fork, and compared with the fork it showed a break that
 * never was (its cached ratio 0.99).
 */
const PARENT_CANDIDATES = 8;

type Break = { kept: false; where: string; offset: number; before: string; after: string };
type Placed = Break & { partOffset: number };

/** One session's turns in order, from every worker's records (already merged). */
export function turnsOf(records: readonly SessionRecord[]): SessionTurn[] {
  const sorted = [...records].sort((a, b) => a.summary.at - b.summary.at);
  // The latest turns' prompts, newest last; emptied by a turn whose body was cut.
  const recent: ParsedPrompt[] = [];
  let seen = false;
  return sorted.map(({ summary, prompt }) => {
    const t = summary.tokens;
    const cachedRatio =
      t.cached !== null && t.prompt ? Math.round((t.cached / t.prompt) * 1000) / 1000 : null;
    const current = prompt === null ? null : parsePrompt(prompt);
    // The first turn held, carrying replies of the model: it continues turns the capture no
    // longer holds (the ring dropped them) or never saw (made before toolproof started). It read
    // "first turn", numbered 1, on the 44th turn of a long agent session in a full ring.
    const first = recent.length === 0 && current !== null && current.replies > 0 && !seen;
    const prefix = first
      ? { earlier: current.replies }
      : current === null || recent.length === 0
        ? null
        : againstParent(recent, current);
    seen = true;
    if (current === null) recent.length = 0;
    else if (recent.push(current) > PARENT_CANDIDATES) recent.shift();
    return { summary, cachedRatio, prefix };
  });
}

/**
 * The prefix check against the earlier turn this one continues: the one it shares the most
 * bytes with (the most recent on a tie), leaving out a sibling fork, an earlier turn that is a
 * turn this one keeps whole plus one last message of its own, which this one replaced with its
 * own continuation. A rewrite of anything an earlier turn sent is still a break.
 */
function againstParent(recent: readonly ParsedPrompt[], cur: ParsedPrompt): SessionTurn['prefix'] {
  // A turn continues only a turn that sent tools as it does, or none as it does: a request with
  // no tools beside an agent's loop is a side request of its own (opencode's and Kilo's title,
  // Codex's compaction), and the loop's first turn after one continues nothing. Compared anyway,
  // opencode's first loop turn read "changed in tools at byte 0: null → [...]", its 0% drawn as a
  // broken cache that never was.
  const alike = recent.filter((prev) => prev.hasTools === cur.hasTools);
  if (alike.length === 0) return { opens: true };
  const compared = alike.map((prev) => ({ prev, diff: firstDifference(prev, cur) }));
  const keptLengths = new Set(compared.filter((c) => c.diff.kept).map((c) => c.prev.parts.length));
  let best: (typeof compared)[number] | undefined;
  for (let i = compared.length - 1; i >= 0; i--) {
    const c = compared[i]!;
    const d = c.diff;
    if (!d.kept && d.index === c.prev.parts.length - 1 && keptLengths.has(d.index)) continue;
    if (best === undefined || d.common > best.diff.common) best = c;
  }
  if (best === undefined) return null;
  if (best.diff.kept) return { kept: true };
  return { ...best.diff.at, ...utf8Offsets(best.prev, best.diff.index, best.diff.common) };
}

/**
 * A break's offsets in UTF-8 bytes (the page and the docs say "at byte N"): in the prompt, and in
 * the part where it is (a message of 16 KB in a prompt of 50: "messages[0] at byte 38525" sent
 * the reader to a byte that message does not have). `common` counts characters, which differ from
 * bytes as soon as a prompt holds anything but ASCII. Counted for the one break shown, not for
 * every turn compared.
 */
function utf8Offsets(
  prev: ParsedPrompt,
  index: number,
  common: number,
): Pick<Placed, 'offset' | 'partOffset'> {
  let chars = 0;
  let bytes = 0;
  for (let i = 0; i < index; i++) {
    const text = prev.parts[i]!.text;
    chars += text.length;
    bytes += Buffer.byteLength(text);
  }
  const part = prev.parts[index];
  let at = common - chars;
  // A change inside a character of two UTF-16 units (an emoji edited into another of the same
  // high surrogate: 😀 into 🚀) starts at that character: the lone high surrogate before it was
  // counted as 3 bytes of its own, naming a byte inside the emoji, and not the one that changed.
  if (part !== undefined && at > 0 && /[\ud800-\udbff]/.test(part.text[at - 1] ?? '')) at--;
  const partOffset = part === undefined ? 0 : Buffer.byteLength(part.text.slice(0, at));
  return { offset: bytes + partOffset, partOffset };
}

interface ParsedPrompt {
  /** The parts of the prompt a later turn must keep byte for byte: tools, then each message. */
  parts: Array<{ where: string; text: string }>;
  /** Whether it declares a tool. */
  hasTools: boolean;
  /** How many of its messages are the model's (assistant): the replies it carries. */
  replies: number;
}

function parsePrompt(body: string): ParsedPrompt | null {
  let v: { tools?: unknown; messages?: unknown };
  try {
    v = JSON.parse(body) as typeof v;
  } catch {
    return null;
  }
  const parts: ParsedPrompt['parts'] = [{ where: 'tools', text: JSON.stringify(v.tools ?? null) }];
  let replies = 0;
  if (Array.isArray(v.messages))
    v.messages.forEach((m, i) => {
      parts.push({ where: `messages[${i}]`, text: JSON.stringify(m) });
      if ((m as { role?: unknown } | null)?.role === 'assistant') replies++;
    });
  return { parts, hasTools: Array.isArray(v.tools) && v.tools.length > 0, replies };
}

/**
 * The first difference between an earlier turn's prompt and this one's (appending is no
 * change): `common`, the bytes kept; `index`, the part where they differ.
 */
function firstDifference(
  prev: ParsedPrompt,
  cur: ParsedPrompt,
): { kept: true; common: number } | { kept: false; common: number; index: number; at: Break } {
  let offset = 0;
  for (let i = 0; i < prev.parts.length; i++) {
    const a = prev.parts[i]!;
    const b = cur.parts[i];
    if (b === undefined) {
      const at: Break = {
        kept: false,
        where: a.where,
        offset,
        before: a.text.slice(0, 80),
        after: '(missing)',
      };
      return { kept: false, common: offset, index: i, at };
    }
    if (a.text !== b.text) {
      const k = commonPrefixLength(a.text, b.text);
      const at: Break = {
        kept: false,
        where: a.where,
        offset: offset + k,
        before: a.text.slice(Math.max(0, k - 30), k + 50),
        after: b.text.slice(Math.max(0, k - 30), k + 50),
      };
      return { kept: false, common: offset + k, index: i, at };
    }
    offset += a.text.length;
  }
  return { kept: true, common: offset };
}

/**
 * How many characters `a` and `b` share from their start. Halved ranges compared as slices:
 * each comparison is V8's own (a memcmp), about 2x the shorter length in all, where a loop over
 * the characters in JavaScript cost ~7 ns each: a session view compares each turn with up to 8
 * earlier ones, and turns whose one long message differs only at its end (24 turns of 120 KB)
 * took 70-140 ms of the event loop per read, read again every 2 s by an open page.
 */
export function commonPrefixLength(a: string, b: string): number {
  let lo = 0;
  let hi = Math.min(a.length, b.length);
  // a and b agree on [0, lo); they differ somewhere in [lo, hi] or agree up to hi.
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (a.slice(lo, mid) === b.slice(lo, mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}
