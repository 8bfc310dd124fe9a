/**
 * The decode work of one upstream response, counted as its bytes pass (server/upstream.ts), so
 * that the fair shares (admission.ts) charge a request what it cost its slot, not only its prompt:
 * a key asking `n: 8`, `best_of` or 32k-token answers holds the GPU far longer than one asking a
 * short answer to the same prompt.
 *
 * Two counts, the larger wins at the end:
 * - a stream's events (`data:` lines): about one a generated token a choice, counted as they come,
 *   so a long stream is charged while it runs, not only once it ends;
 * - the usage the backend reports (`"completion_tokens"`, Messages' and Responses'
 *   `"output_tokens"`), read wherever it stands in the body, the largest count read: what follows
 *   it is the client's to grow (vLLM writes a chat completion's `prompt_logprobs` after its
 *   `usage`, a list the size of the prompt: read from the body's last 2 KiB only, a request asking
 *   for them was charged nothing of its answer). A pattern inside a JSON string cannot match: its
 *   quotes are escaped there.
 *
 * Bounded: every byte is looked at once (native indexOf for each pattern, a count's few bytes
 * read one by one, also across reads); the memory is a few dozen bytes, whatever the body's size.
 */

const EVENT = Buffer.from('data:');
const USAGE_KEYS = [Buffer.from('"completion_tokens"'), Buffer.from('"output_tokens"')];
/** A reported count past this is read as this (a hostile or broken backend; 128 choices of 128k). */
const MAX_TOKENS = 1 << 24;
/** The stream's last bytes kept between reads: fewer than the longest pattern's (one cut between reads). */
const CARRY = Math.max(EVENT.length, ...USAGE_KEYS.map((k) => k.length)) - 1;
/** What both usage keys end with: one search of a read finds them both. */
const KEY_END = Buffer.from('_tokens"');
/**
 * The bytes a pattern goes on after (all but its last): a read whose last byte is none of them
 * leaves no pattern cut (an event's `\n\n`, most reads of a stream), and nothing is looked for.
 */
const GOES_ON = new Uint8Array(256);
for (const p of [EVENT, ...USAGE_KEYS]) for (let k = 0; k < p.length - 1; k++) GOES_ON[p[k]!] = 1;
/** Bytes after a usage key a count may take: spaces, a colon, spaces, at most 9 digits. */
const COUNT_BYTES = 32;
/** Digits of a count read (past them, what was read). */
const MAX_DIGITS = 9;

/**
 * Where `pattern` starts before `carried` in `b` and ends past it, by `end`; -1 none. A native
 * search from the first start that can end past `carried`: a match it finds first is the only
 * one that can (a later start ends later still), and bytes of `b` past `end` are no part of one.
 */
function cutBetween(b: Buffer, pattern: Buffer, carried: number, end: number): number {
  const s = b.indexOf(pattern, Math.max(0, carried - pattern.length + 1));
  return s !== -1 && s < carried && s + pattern.length <= end ? s : -1;
}

/** Whether `key` is in `b` at `at` (its end, KEY_END, already found there). */
function startsKey(b: Buffer, key: Buffer, at: number): boolean {
  if (at < 0) return false;
  for (let k = key.length - KEY_END.length - 1; k >= 0; k--) if (b[at + k] !== key[k]) return false;
  return true;
}

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;

/** Reading a count: before its colon, after it, in its digits. */
enum Phase {
  None = -1,
  Colon = 0,
  Value = 1,
  Digits = 2,
}

export class DecodeMeter {
  private events = 0;
  /** The largest usage count read (0: none). */
  private reported = 0;
  /** The last bytes of the stream so far, then the next read's first ones: one pattern cut between reads. */
  private readonly carry = Buffer.alloc(2 * CARRY);
  /** Bytes of `carry` that are the stream's last ones (up to CARRY). */
  private carried = 0;
  /** A count being read when a read ended in it (its bytes run on into the next). */
  private phase = Phase.None;
  private value = 0;
  private digits = 0;
  private seen = 0;

  constructor(private readonly sse: boolean) {}

  /** A chunk of the body: the stream's events counted so far (0 for a body that is not SSE). */
  push(chunk: Buffer): number {
    // A count cut between reads goes on; it ends before any pattern (each starts with a byte
    // that is no space, colon or digit), so at most one is open at a time.
    if (this.phase !== Phase.None) this.read(chunk, 0);
    const carry = this.carry;
    const carried = this.carried;
    const head = Math.min(CARRY, chunk.length);
    const cut = carried > 0 && GOES_ON[carry[carried - 1]!] === 1;
    if (cut || chunk.length < CARRY) chunk.copy(carry, carried, 0, head);
    if (cut) {
      // A pattern cut between two reads: it starts in the carry (its bytes, then this chunk's
      // first ones, side by side in one small buffer), a few dozen bytes looked at, nothing made.
      const end = carried + head;
      if (this.sse && cutBetween(carry, EVENT, carried, end) >= 0) this.events++;
      for (const key of USAGE_KEYS) {
        const s = cutBetween(carry, key, carried, end);
        if (s >= 0) this.readFresh(chunk, s + key.length - carried);
      }
    }
    if (this.sse)
      for (let i = chunk.indexOf(EVENT); i !== -1; i = chunk.indexOf(EVENT, i + EVENT.length)) this.events++;
    for (let i = chunk.indexOf(KEY_END); i !== -1; i = chunk.indexOf(KEY_END, i + KEY_END.length)) {
      const after = i + KEY_END.length;
      // A key begun in the last read was read above (cut).
      for (const key of USAGE_KEYS)
        if (startsKey(chunk, key, after - key.length)) this.readFresh(chunk, after);
    }
    if (chunk.length >= CARRY) {
      chunk.copy(carry, 0, chunk.length - CARRY);
      this.carried = CARRY;
    } else {
      // The carry's bytes and this short chunk's, their last CARRY kept.
      const n = carried + head;
      const keep = Math.min(CARRY, n);
      carry.copy(carry, 0, n - keep, n);
      this.carried = keep;
    }
    return this.events;
  }

  /** The body ended: the tokens it generated (events or reported usage, the larger). */
  total(): number {
    if (this.phase === Phase.Digits) this.counted(this.value);
    this.phase = Phase.None;
    return Math.max(this.events, Math.min(this.reported, MAX_TOKENS));
  }

  /**
   * A usage key ends at `i` in `b`: its count read from there. Left open only when `b` ends in
   * it, so it is the last key of `b`: a count open before it (the keys are found key by key, not
   * in order) is kept.
   */
  private readFresh(b: Buffer, i: number): void {
    const { phase, value, digits, seen } = this;
    this.phase = Phase.Colon;
    this.value = 0;
    this.digits = 0;
    this.seen = 0;
    if (this.read(b, i)) return;
    this.phase = phase;
    this.value = value;
    this.digits = digits;
    this.seen = seen;
  }

  /**
   * Reads the count from `i` on, until it ends (counted, or no count) or `b` does (left open):
   * whether it is left open.
   */
  private read(b: Buffer, i: number): boolean {
    let { phase, value, digits, seen } = this;
    for (const n = b.length; i < n && phase !== Phase.None; i++) {
      const c = b[i]!;
      if (++seen > COUNT_BYTES) phase = Phase.None;
      else if (phase === Phase.Digits) {
        if (isDigit(c)) {
          value = value * 10 + (c - 0x30);
          if (++digits === MAX_DIGITS) {
            this.counted(value);
            phase = Phase.None;
          }
        } else {
          this.counted(value);
          phase = Phase.None;
        }
      } else if (isSpace(c)) {
        // spaces before and after the colon
      } else if (phase === Phase.Colon) phase = c === 0x3a ? Phase.Value : Phase.None;
      else if (isDigit(c)) {
        phase = Phase.Digits;
        value = c - 0x30;
        digits = 1;
      } else phase = Phase.None;
    }
    this.phase = phase;
    this.value = value;
    this.digits = digits;
    this.seen = seen;
    return phase !== Phase.None;
  }

  private counted(value: number): void {
    if (value > this.reported) this.reported = value;
  }
}

/** Answers of fewer tokens teach no pace (their time is mostly the prompt's). */
const PACE_MIN_TOKENS = 64;

/**
 * How long an upstream's slot is held per token it generates, learnt from the answers metered
 * whole (a moving average: the batch's size and the prompts change it), for an answer the client
 * left before its end with no token counted: a non-streamed one sends its body, usage and all,
 * only at its end, so leaving just before it held the slot for the whole answer and was charged
 * none of it (a key doing so again and again decoded long answers nobody read, each charged its
 * prompt alone, ahead of another key's agent). Such an answer is charged the tokens its time
 * held would have made. Includes the prompt's prefill in what it learns, so it charges less
 * than it decoded at the pace learnt.
 */
export class DecodePace {
  private msPerToken: number | undefined;

  /** Whether it learnt a pace. */
  get known(): boolean {
    return this.msPerToken !== undefined;
  }

  /** An answer metered whole: `tokens` generated in `ms` from the request's start. */
  learn(ms: number, tokens: number): void {
    if (tokens < PACE_MIN_TOKENS || !(ms > 0)) return;
    const sample = ms / tokens;
    this.msPerToken = this.msPerToken === undefined ? sample : this.msPerToken * 0.8 + sample * 0.2;
  }

  /** The tokens `ms` of a slot held makes at the pace learnt (0 before any). */
  tokensIn(ms: number): number {
    const pace = this.msPerToken;
    return pace === undefined || !(ms > 0) ? 0 : Math.min(Math.floor(ms / pace), MAX_TOKENS);
  }
}

/** Owners whose own pace is kept, at most (the least recently used go first). */
const MAX_OWNERS = 1024;

/** What one request learns and is charged by (DecodePaces.of). */
export interface PaceOf {
  learn(ms: number, tokens: number): void;
  tokensIn(ms: number): number;
}

/**
 * An upstream's pace, and each admission owner's own: a request is charged by its owner's pace
 * when it has one, else by the upstream's. Its own first: `n: 16` answers make sixteen tokens in
 * the time of one, so a key asking them taught a pace sixteen times too fast, and another key's
 * agent leaving a request was charged sixteen times what it held.
 */
export class DecodePaces {
  private readonly all = new DecodePace();
  private readonly owners = new Map<string, DecodePace>();

  of(owner: string | undefined): PaceOf {
    return {
      learn: (ms, tokens) => {
        this.all.learn(ms, tokens);
        if (owner !== undefined && tokens >= PACE_MIN_TOKENS) this.own(owner, true)!.learn(ms, tokens);
      },
      tokensIn: (ms) => {
        const own = owner === undefined ? undefined : this.own(owner, false);
        return own?.known ? own.tokensIn(ms) : this.all.tokensIn(ms);
      },
    };
  }

  private own(owner: string, make: boolean): DecodePace | undefined {
    let pace = this.owners.get(owner);
    if (pace !== undefined) {
      // The most recently used last.
      this.owners.delete(owner);
      this.owners.set(owner, pace);
      return pace;
    }
    if (!make) return undefined;
    pace = new DecodePace();
    this.owners.set(owner, pace);
    if (this.owners.size > MAX_OWNERS) this.owners.delete(this.owners.keys().next().value!);
    return pace;
  }
}
