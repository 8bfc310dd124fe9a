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

export class DecodeMeter {
  private readonly ring = Buffer.allocUnsafe(TAIL_BYTES);
  /** Bytes in the ring (up to TAIL_BYTES), and where the next one goes. */
  private fill = 0;
  private pos = 0;
  private events = 0;
  /** The last bytes of the stream so far (fewer than an event's `data:`): one cut between reads. */
  private carry = Buffer.alloc(0);

  constructor(private readonly sse: boolean) {}

  /** A chunk of the body: the stream's events counted so far (0 for a body that is not SSE). */
  push(chunk: Buffer): number {
    if (this.sse) {
      for (let i = chunk.indexOf(EVENT); i !== -1; i = chunk.indexOf(EVENT, i + EVENT.length)) this.events++;
      // A `data:` cut between two reads: it starts in the carry, at most 8 bytes looked at.
      const carry = this.carry;
      const joint = Buffer.concat([carry, chunk.subarray(0, EVENT.length - 1)]);
      const i = carry.length > 0 ? joint.indexOf(EVENT) : -1;
      if (i !== -1 && i < carry.length) this.events++;
      const seen = chunk.length >= EVENT.length - 1 ? chunk : Buffer.concat([carry, chunk]);
      this.carry = Buffer.from(seen.subarray(Math.max(0, seen.length - (EVENT.length - 1))));
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
