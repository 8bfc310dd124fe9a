/** Small helpers shared by server tests: a seeded generator and a JSON log capture. */
import { Writable } from 'node:stream';

/** A seeded generator (mulberry32): failures replay. */
export function seededRng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A stream for a pino logger that keeps every JSON line it is given, parsed; `requestLine` waits
 * (about a second at most) for a request's own log line, written once its response ended.
 */
export function logCapture(): {
  stream: Writable;
  lines: Array<Record<string, unknown>>;
  requestLine(reqId: string): Promise<Record<string, unknown>>;
} {
  const lines: Array<Record<string, unknown>> = [];
  const requestLine = async (reqId: string) => {
    for (let i = 0; i < 1000; i++) {
      const line = lines.find((l) => l.reqId === reqId && l.msg === 'request');
      if (line) return line;
      await new Promise((r) => setTimeout(r, 1));
    }
    throw new Error(`no log line for ${reqId}`);
  };
  const stream = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split('\n').filter(Boolean))
        lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  return { stream, lines, requestLine };
}
