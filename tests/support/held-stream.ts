/**
 * An upstream whose streamed answer stops mid-way until the test lets it go on: a model
 * generating slowly, as the inspector shows it while the request is in flight. Every chat
 * completion streams the role and `first` pieces at once, then waits for `release()`,
 * then streams `rest`, the finish and `[DONE]`.
 */
import { chunkEvent } from './harness.js';
import { type FakeUpstream, startFakeUpstream } from './fake-upstream.js';

export interface HeldStream extends FakeUpstream {
  /** Streams the rest of every answer waiting now, and of every later one at once. */
  release(): void;
  /** Resolves once an answer has streamed its first pieces and waits. */
  holding: Promise<void>;
}

/** A piece of content, or a delta of its own (reasoning: `{ reasoning_content: '...' }`). */
export type Piece = string | Record<string, unknown>;

export async function startHeldStream(first: readonly Piece[], rest: readonly Piece[]): Promise<HeldStream> {
  let release!: () => void;
  const released = new Promise<void>((r) => {
    release = r;
  });
  let held!: () => void;
  const holding = new Promise<void>((r) => {
    held = r;
  });
  const chunk = (delta: unknown, finish: string | null = null) =>
    chunkEvent(delta, finish, 'chatcmpl-held', 'm1');
  const upstream = await startFakeUpstream((_body, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(chunk({ role: 'assistant', content: '' }));
    for (const p of first) res.write(chunk(typeof p === 'string' ? { content: p } : p));
    held();
    void released.then(() => {
      if (res.destroyed) return;
      for (const p of rest) res.write(chunk(typeof p === 'string' ? { content: p } : p));
      res.write(chunk({}, 'stop'));
      res.end('data: [DONE]\n\n');
    });
  });
  return { ...upstream, release, holding };
}

/**
 * Reads a streamed response until what arrived includes `text` (the client has the first half
 * of a held answer); returns the reader to read the rest with. Throws when the stream ends first.
 */
export async function readUntil(
  res: Response,
  text: string,
): Promise<ReadableStreamDefaultReader<Uint8Array>> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let received = '';
  while (!received.includes(text)) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the stream ended early: ${received}`);
    received += decoder.decode(value, { stream: true });
  }
  return reader;
}
