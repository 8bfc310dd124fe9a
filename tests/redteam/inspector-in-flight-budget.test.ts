/**
 * Reading a request in flight (docs/inspect.md, "A request in flight"): the page asks for it
 * every second while the stream goes on, and a stream runs as long as its model writes (an agent
 * stuck in a loop for minutes). Each read decodes and reassembles the stream so far: it must cost
 * what the text costs (a stream 4x as long, at most about 4x), and no more than the per-text cap
 * however long the stream ran past it.
 */
import { describe, expect, it } from 'vitest';
import { answer, type RequestView } from '../../server/capture/query.js';
import { Attempt, CaptureRing } from '../../server/capture/ring.js';
import { measureScaling, withinBudget } from '../support/cost-scaling.js';

/** One read of a stream: 16 events of a few words each (~2 KB, a read's size on a fast model). */
const READ = Buffer.from(
  Array.from(
    { length: 16 },
    (_, i) =>
      `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: `word ${i} of the answer ` } }] })}\n\n`,
  ).join(''),
);

/** A ring holding one request in flight whose stream has had `reads` reads so far. */
function inFlight(reads: number, textChars: number): CaptureRing {
  const ring = new CaptureRing({ maxBytes: 64 * 1024 * 1024, textChars });
  const w = ring.open({
    id: 'live',
    api: 'chat',
    model: 'm',
    stream: true,
    session: 's',
    method: 'POST',
    path: '/v1/chat/completions',
  });
  w.attempt(new Attempt(1, 'u', 0, 0, true, { text: '', cut: 0 }));
  for (let i = 0; i < reads; i++) {
    w.read(READ, 16);
    w.client(READ);
  }
  return ring;
}

const read = (ring: CaptureRing) => answer(ring, { op: 'get', id: 'live' }, 0) as RequestView;

describe('reading a request in flight', () => {
  it('costs what its text costs: a stream x1 vs x4', () => {
    const s = measureScaling(
      (reads) => inFlight(reads, 64 * 1024 * 1024),
      (ring) => read(ring),
      // Up to 256 reads (~460 KB of stream; 4x: 1.8 MB, both texts well within the record's share).
      { from: 16, max: 256 },
    );
    expect(withinBudget(s, 5).time, JSON.stringify(s)).toBe(true);
  }, 60_000);

  it('reads no more than the per-text cap however long the stream ran past it', () => {
    const cap = 64 * 1024;
    const short = read(inFlight(40, cap));
    const long = read(inFlight(4000, cap));
    for (const v of [short, long]) {
      const response = v.record.upstreamAttempts[0]!.response;
      expect(response.partial).toBe(true);
      expect(response.text.length).toBeLessThanOrEqual(cap);
      expect(v.record.clientResponse.body.text.length).toBeLessThanOrEqual(cap);
    }
    const longText = long.record.upstreamAttempts[0]!.response;
    // Everything past the cap is counted, not read.
    expect(longText.text.length + longText.cut).toBe(4000 * READ.length);
    expect(long.modelWrote[0]!.content.length).toBeLessThanOrEqual(cap);
    // The stream past the cap changes nothing of what a read decodes.
    expect(longText.text).toBe(read(inFlight(400, cap)).record.upstreamAttempts[0]!.response.text);
  });
});
