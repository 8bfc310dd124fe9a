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
 *   `"output_tokens"`): read at the end from the body's last TAIL_BYTES, where every backend puts
 *   it (vLLM and llama-server last, before llama-server's timings; a stream's usage chunk before
 *   [DONE]). A pattern inside a JSON string cannot match: its quotes are escaped there.
 *
 * Bounded: every byte is looked at once (a native indexOf, one copy into a fixed ring of
 * TAIL_BYTES); the memory is the ring and three numbers, whatever the body's size.
 */

/** Where the usage is looked for: the body's last bytes. */
const TAIL_BYTES = 2048;
const EVENT = Buffer.from('data:');
const USAGE_KEYS = [Buffer.from('"completion_tokens"'), Buffer.from('"output_tokens"')];
/** A reported count past this is read as this (a hostile or broken backend; 128 choices of 128k). */
const MAX_TOKENS = 1 << 24;
/** The stream's last bytes kept between reads: fewer than an event's `data:`. */
const CARRY = EVENT.length - 1;

/** Whether an event's `data:` starts before `carried` in `b` and ends by `end`. */
function startsInCarry(b: Buffer, carried: number, end: number): boolean {
  for (let s = 0; s < carried && s + EVENT.length <= end; s++) {
    let k = 0;
    while (k < EVENT.length && b[s + k] === EVENT[k]) k++;
    if (k === EVENT.length) return true;
  }
  return false;
}

export class DecodeMeter {
  private readonly ring = Buffer.allocUnsafe(TAIL_BYTES);
  /** Bytes in the ring (up to TAIL_BYTES), and where the next one goes. */
  private fill = 0;
  private pos = 0;
  private events = 0;
  /** The last bytes of the stream so far (fewer than an event's `data:`): one cut between reads. */
  private readonly carry = Buffer.alloc(2 * CARRY);
  /** Bytes of `carry` that are the stream's last ones (up to CARRY). */
  private carried = 0;

  constructor(private readonly sse: boolean) {}

  /** A chunk of the body: the stream's events counted so far (0 for a body that is not SSE). */
  push(chunk: Buffer): number {
    if (this.sse) {
      for (let i = chunk.indexOf(EVENT); i !== -1; i = chunk.indexOf(EVENT, i + EVENT.length)) this.events++;
      // A `data:` cut between two reads: it starts in the carry (its bytes, then this chunk's
      // first ones, side by side in one small buffer), at most 8 bytes looked at, nothing made.
      const carry = this.carry;
      const carried = this.carried;
      const head = Math.min(CARRY, chunk.length);
      chunk.copy(carry, carried, 0, head);
      if (carried > 0 && startsInCarry(carry, carried, carried + head)) this.events++;
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
    }
    this.keep(chunk);
    return this.events;
  }

  /** The body ended: the tokens it generated (events or reported usage, the larger). */
  total(): number {
    return Math.max(this.events, this.reported());
  }

  private keep(chunk: Buffer): void {
    const n = chunk.length;
    if (n >= TAIL_BYTES) {
      chunk.copy(this.ring, 0, n - TAIL_BYTES);
      this.pos = 0;
      this.fill = TAIL_BYTES;
      return;
    }
    const first = Math.min(n, TAIL_BYTES - this.pos);
    chunk.copy(this.ring, this.pos, 0, first);
    if (first < n) chunk.copy(this.ring, 0, first);
    this.pos = (this.pos + n) % TAIL_BYTES;
    this.fill = Math.min(TAIL_BYTES, this.fill + n);
  }

  /** The body's last bytes, in order. */
  private tail(): Buffer {
    if (this.fill < TAIL_BYTES) return this.ring.subarray(0, this.fill);
    return Buffer.concat([this.ring.subarray(this.pos), this.ring.subarray(0, this.pos)]);
  }

  /** The last usage count in the tail (0: none). */
  private reported(): number {
    const tail = this.tail();
    let best = -1;
    let value = 0;
    for (const key of USAGE_KEYS) {
      const i = tail.lastIndexOf(key);
      if (i <= best) continue;
      const n = readCount(tail, i + key.length);
      if (n === undefined) continue;
      best = i;
      value = n;
    }
    return Math.min(value, MAX_TOKENS);
  }
}

/** The number after `"key"` at `i`: spaces, a colon, spaces, digits (at most 9). */
function readCount(b: Buffer, i: number): number | undefined {
  const n = b.length;
  while (i < n && (b[i] === 0x20 || b[i] === 0x0a || b[i] === 0x0d || b[i] === 0x09)) i++;
  if (b[i] !== 0x3a) return undefined;
  i++;
  while (i < n && (b[i] === 0x20 || b[i] === 0x0a || b[i] === 0x0d || b[i] === 0x09)) i++;
  let v = 0;
  let digits = 0;
  while (i < n && digits < 9 && b[i]! >= 0x30 && b[i]! <= 0x39) {
    v = v * 10 + (b[i]! - 0x30);
    digits++;
    i++;
  }
  return digits === 0 ? undefined : v;
}
