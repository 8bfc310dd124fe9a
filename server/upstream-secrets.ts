/**
 * Upstream credentials echoed back. A backend (or a proxy in front of it) may repeat the
 * Authorization header it got in an error message ("invalid key sk-…") or a body: what toolproof
 * relays would carry toolproof's own upstream key to the client, its log line, the capture and
 * the traces. Every byte read from an upstream passes here once, at the body (upstream-body.ts),
 * so each door, the pass-through, the logs and the capture see the same scrubbed text.
 *
 * Cost: one Buffer.indexOf per configured key over each chunk (native, no decoding), and at a
 * chunk's end a check of its last (key length - 1) bytes against the key's start. A tail that
 * may begin a key is held back until the next chunk or the end (an SSE chunk ends in "\n\n",
 * which begins no key, so streams are not delayed in practice).
 */

/** What a key is replaced with. */
export const SCRUBBED_KEY = '[upstream-key]';
const MARKER = Buffer.from(SCRUBBED_KEY);

/**
 * Shorter keys are not scrubbed: a few characters occur in ordinary model text, and replacing
 * them would invent text in an answer (docs/security.md).
 */
export const MIN_SCRUBBED_KEY = 8;

/** The keys toolproof sends upstream, shared by every client of one Upstreams (it grows as targets appear). */
export class UpstreamSecrets {
  readonly keys: Buffer[] = [];

  add(key: string | undefined): void {
    if (key === undefined || key.length < MIN_SCRUBBED_KEY) return;
    const bytes = Buffer.from(key);
    if (this.keys.some((k) => k.equals(bytes))) return;
    this.keys.push(bytes);
  }

  /** The keys replaced in a response's header values, in place (the pass-through relays headers). */
  scrubHeaders(headers: Record<string, string | string[] | undefined>): void {
    if (this.keys.length === 0) return;
    for (const name of Object.keys(headers)) {
      const value = headers[name];
      if (typeof value === 'string') headers[name] = this.scrubText(value);
      else if (Array.isArray(value)) headers[name] = value.map((v) => this.scrubText(v));
    }
  }

  private scrubText(text: string): string {
    if (text.length < MIN_SCRUBBED_KEY) return text;
    let out = text;
    for (const key of this.keys) {
      const k = key.toString();
      if (out.includes(k)) out = out.split(k).join(SCRUBBED_KEY);
    }
    return out;
  }

  /** A scrubber for one body, or undefined when no key is configured. */
  scrubber(): SecretScrubber | undefined {
    return this.keys.length === 0 ? undefined : new SecretScrubber(this.keys);
  }
}

/** The keys replaced in a whole buffer; the same buffer when none occurs. */
export function scrubBytes(data: Buffer, keys: readonly Buffer[]): Buffer {
  let out = data;
  for (const key of keys) {
    let at = out.indexOf(key);
    if (at < 0) continue;
    const parts: Buffer[] = [];
    let from = 0;
    while (at >= 0) {
      parts.push(out.subarray(from, at), MARKER);
      from = at + key.length;
      at = out.indexOf(key, from);
    }
    parts.push(out.subarray(from));
    out = Buffer.concat(parts);
  }
  return out;
}

/** How many bytes at the end of `data` are the start of some key (0: none). */
function heldTail(data: Buffer, keys: readonly Buffer[]): number {
  let hold = 0;
  for (const key of keys) {
    const first = key[0]!;
    let at = data.indexOf(first, Math.max(0, data.length - key.length + 1));
    while (at >= 0) {
      const len = data.length - at;
      if (len > hold && data.compare(key, 0, len, at) === 0) {
        hold = len;
        break; // the earliest match is the longest
      }
      at = data.indexOf(first, at + 1);
    }
  }
  return hold;
}

/** One body's scrubber: keys split across chunks are caught by holding back a possible start. */
export class SecretScrubber {
  private carry: Buffer | null = null;

  constructor(private readonly keys: readonly Buffer[]) {}

  /** What of this chunk may be released now (possibly empty). */
  push(chunk: Buffer): Buffer {
    const joined = this.carry === null ? chunk : Buffer.concat([this.carry, chunk]);
    this.carry = null;
    const data = scrubBytes(joined, this.keys);
    const hold = heldTail(data, this.keys);
    if (hold === 0) return data;
    // A copy: a view would keep the whole chunk's memory for as long as the tail waits.
    this.carry = Buffer.from(data.subarray(data.length - hold));
    return data.subarray(0, data.length - hold);
  }

  /** The held tail at the end of the body (it began a key but never finished it). */
  end(): Buffer | null {
    const tail = this.carry;
    this.carry = null;
    return tail;
  }
}
