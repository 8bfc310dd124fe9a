/**
 * Bytes <-> server-sent events. One pass with a carry buffer: chunks may split anywhere,
 * inside a line, inside "\r\n", inside a multi-byte UTF-8 character (the streaming TextDecoder
 * keeps the partial bytes). Only `data:` fields matter for OpenAI streams; comment lines
 * (llama-server's ": ping") and other fields are ignored.
 */

export class SseParser {
  private readonly decoder = new TextDecoder('utf-8');
  private buffer = '';
  private data: string[] = [];

  /** Feeds raw bytes; returns the data payloads of every event completed by them. */
  push(chunk: Uint8Array | string): string[] {
    const text = typeof chunk === 'string' ? chunk : this.decoder.decode(chunk, { stream: true });
    this.buffer += text;
    return this.drain(false);
  }

  /** True while part of an event is held (the bytes fed so far do not end on an event boundary). */
  pending(): boolean {
    return this.buffer.length > 0 || this.data.length > 0;
  }

  /** End of stream: an event without its terminating blank line still counts. */
  finish(): string[] {
    this.buffer += this.decoder.decode();
    const out = this.drain(true);
    if (this.data.length > 0) {
      out.push(this.data.join('\n'));
      this.data = [];
    }
    return out;
  }

  private drain(final: boolean): string[] {
    const out: string[] = [];
    let start = 0;
    const buf = this.buffer;
    for (;;) {
      const nl = buf.indexOf('\n', start);
      let end: number;
      let next: number;
      if (nl === -1) {
        // A lone trailing "\r" may be half of "\r\n": wait for more unless the stream ended.
        const cr = buf.indexOf('\r', start);
        if (cr === -1 || (cr === buf.length - 1 && !final)) break;
        end = cr;
        next = cr + 1;
      } else {
        const cr = buf.indexOf('\r', start);
        if (cr !== -1 && cr < nl) {
          end = cr;
          next = cr + 1 === nl ? nl + 1 : cr + 1;
        } else {
          end = nl;
          next = nl + 1;
        }
      }
      this.line(buf.slice(start, end), out);
      start = next;
    }
    if (final && start < buf.length) {
      this.line(buf.slice(start), out);
      start = buf.length;
    }
    this.buffer = start === 0 ? buf : buf.slice(start);
    return out;
  }

  private line(line: string, out: string[]): void {
    if (line === '') {
      if (this.data.length > 0) {
        out.push(this.data.join('\n'));
        this.data = [];
      }
      return;
    }
    if (line.charCodeAt(0) === 58 /* ':' */) return;
    if (line.startsWith('data:')) {
      this.data.push(line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5));
    }
  }
}

export function sseData(payload: string): string {
  return `data: ${payload}\n\n`;
}

export const SSE_DONE = 'data: [DONE]\n\n';
