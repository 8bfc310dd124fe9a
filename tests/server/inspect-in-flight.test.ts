/**
 * A request in flight in the inspector's API (docs/inspect.md, "A request in flight"): the
 * running attempt's stream as read so far and the client's frames as sent so far, reassembled
 * like a finished record's and marked `partial`, then the whole answer once it ended. Over real
 * HTTP with an upstream that holds its stream mid-answer; then the ring itself: a read that ends
 * inside a character, pieces of concurrent streams, the cap, a retry's earlier attempt.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { answer, type RequestView } from '../../server/capture/query.js';
import { Attempt, CaptureRing, type RecordInit } from '../../server/capture/ring.js';
import { type RunningProxy, startProxy } from '../support/harness.js';
import { type HeldStream, readUntil, startHeldStream } from '../support/held-stream.js';

let proxy: RunningProxy | undefined;
let upstream: HeldStream | undefined;
afterEach(async () => {
  upstream?.release();
  await proxy?.close();
  await upstream?.close();
  proxy = undefined;
  upstream = undefined;
});

const view = async (id: string): Promise<RequestView> => {
  const res = await fetch(`${proxy!.origin}/inspect/api/requests/${id}`);
  expect(res.status).toBe(200);
  return (await res.json()) as RequestView;
};

describe('a request in flight, read through /inspect/api/requests/:id', () => {
  it('shows the stream read so far and what the client received so far, then the whole answer', async () => {
    upstream = await startHeldStream(['Hello, ', 'the first half'], [', and the rest.']);
    proxy = await startProxy({ TOOLPROOF_UPSTREAM_URL: upstream.url });
    const res = await fetch(`${proxy.origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'held-1' },
      body: JSON.stringify({ model: 'm1', messages: [{ role: 'user', content: 'Tell me' }], stream: true }),
    });
    expect(res.status).toBe(200);
    // Read until the client has the first half: toolproof read it and passed it on.
    const reader = await readUntil(res, 'the first half');

    const partial = await view('held-1');
    expect(partial.record.inFlight).toBe(true);
    const attempt = partial.record.upstreamAttempts[0]!;
    expect(attempt.response.partial).toBe(true);
    expect(attempt.response.cut).toBe(0);
    expect(attempt.response.text).toContain('"content":"the first half"');
    expect(attempt.response.text).not.toContain('the rest');
    expect(partial.modelWrote[0]!.content).toBe('Hello, the first half');
    expect(partial.record.clientResponse.body.partial).toBe(true);
    expect(partial.record.clientResponse.body.text).toContain('the first half');
    expect(partial.clientReceived.content).toBe('Hello, the first half');

    upstream.release();
    while (!(await reader.read()).done) {
      // the rest of the answer
    }
    let done = await view('held-1');
    for (let i = 0; i < 100 && done.record.inFlight; i++) {
      await new Promise((r) => setTimeout(r, 20));
      done = await view('held-1');
    }
    expect(done.record.inFlight).toBe(false);
    expect(done.record.outcome).toBe('clean');
    expect(done.modelWrote[0]!.content).toBe('Hello, the first half, and the rest.');
    expect(done.clientReceived.content).toBe('Hello, the first half, and the rest.');
    // A finished record's texts are its own, as they always were: nothing marks them partial.
    expect('partial' in done.record.upstreamAttempts[0]!.response).toBe(false);
    expect('partial' in done.record.clientResponse.body).toBe(false);
  });
});

describe('a client that leaves mid-stream', () => {
  it("ends the running attempt with the client's leaving: a total and the reason, never still running", async () => {
    upstream = await startHeldStream(['Hello, ', 'the first half'], [', and the rest.']);
    proxy = await startProxy({ TOOLPROOF_UPSTREAM_URL: upstream.url });
    const gone = new AbortController();
    const res = await fetch(`${proxy.origin}/v1/chat/completions`, {
      method: 'POST',
      signal: gone.signal,
      headers: { 'content-type': 'application/json', 'x-request-id': 'left-1' },
      body: JSON.stringify({ model: 'm1', messages: [{ role: 'user', content: 'Tell me' }], stream: true }),
    });
    await readUntil(res, 'the first half');
    gone.abort();
    let done = await view('left-1');
    for (let i = 0; i < 100 && done.record.inFlight; i++) {
      await new Promise((r) => setTimeout(r, 20));
      done = await view('left-1');
    }
    expect(done.record.inFlight).toBe(false);
    expect(done.record.status).toBe('aborted');
    expect(done.record.outcome).toBe('failed');
    // Why it failed, on the request and on the attempt the client's leaving cancelled.
    expect(done.record.error?.code).toBe('TP_ERR_CLIENT_CLOSED');
    const attempt = done.record.upstreamAttempts[0]!;
    expect(attempt.error?.code).toBe('TP_ERR_CLIENT_CLOSED');
    expect(attempt.totalMs).toBeTypeOf('number');
    expect(attempt.totalMs!).toBeGreaterThanOrEqual(attempt.ttfbMs!);
    expect(attempt.totalMs!).toBeLessThanOrEqual(done.record.durationMs! + 1);
    expect(done.modelWrote[0]!.content).toBe('Hello, the first half');
  });
});

const init = (id: string): RecordInit => ({
  id,
  api: 'chat',
  model: 'm',
  stream: true,
  session: 's',
  method: 'POST',
  path: '/v1/chat/completions',
});
const event = (content: string) =>
  `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content } }] })}\n\n`;
const get = (ring: CaptureRing, id: string) => answer(ring, { op: 'get', id }, 0) as RequestView;

describe('RecordWriter.soFar: the ring read back while a stream goes on', () => {
  it('leaves a character whose bytes are not all read yet for the next read, never a replacement', () => {
    const ring = new CaptureRing({ maxBytes: 1024 * 1024, textChars: 100_000 });
    const w = ring.open(init('a'));
    w.attempt(new Attempt(1, 'u', 0, 0, true, { text: '', cut: 0 }));
    const bytes = Buffer.from(event('café ☕ 🚀'));
    // Split inside each multi-byte character in turn.
    for (const at of [bytes.indexOf('é') + 1, bytes.indexOf(0xe2) + 2, bytes.indexOf(0xf0) + 3]) {
      const ring2 = new CaptureRing({ maxBytes: 1024 * 1024, textChars: 100_000 });
      const w2 = ring2.open(init('b'));
      w2.attempt(new Attempt(1, 'u', 0, 0, true, { text: '', cut: 0 }));
      w2.read(bytes.subarray(0, at), 0);
      const head = get(ring2, 'b').record.upstreamAttempts[0]!.response;
      expect(head.text).not.toContain('\ufffd');
      expect(Buffer.from(head.text).length).toBeLessThan(at);
      expect(bytes.toString('utf8').startsWith(head.text)).toBe(true);
      w2.read(bytes.subarray(at), 1);
      expect(get(ring2, 'b').record.upstreamAttempts[0]!.response.text).toBe(bytes.toString('utf8'));
      expect(get(ring2, 'b').modelWrote[0]!.content).toBe('café ☕ 🚀');
    }
    w.read(bytes, 1);
    expect(get(ring, 'a').modelWrote[0]!.content).toBe('café ☕ 🚀');
  });

  it('reads pieces of concurrent streams interleaved in the arena, each its own', () => {
    const ring = new CaptureRing({ maxBytes: 1024 * 1024, textChars: 100_000 });
    const a = ring.open(init('a'));
    const b = ring.open(init('b'));
    for (const w of [a, b]) w.attempt(new Attempt(1, 'u', 0, 0, true, { text: '', cut: 0 }));
    for (let i = 0; i < 5; i++) {
      a.read(Buffer.from(event(`a${i} `)), 1);
      b.read(Buffer.from(event(`b${i} `)), 1);
      a.client(event(`A${i} `));
    }
    const va = get(ring, 'a');
    expect(va.modelWrote[0]!.content).toBe('a0 a1 a2 a3 a4 ');
    expect(va.clientReceived.content).toBe('A0 A1 A2 A3 A4 ');
    expect(va.record.upstreamAttempts[0]!.events).toBe(5);
    expect(get(ring, 'b').modelWrote[0]!.content).toBe('b0 b1 b2 b3 b4 ');
    // b has sent the client nothing yet: no text of it, and nothing marked.
    expect(get(ring, 'b').record.clientResponse.body).toEqual({ text: '', cut: 0 });
    // Reading changed nothing the stream writes: it goes on, and ends as it would have.
    a.read(Buffer.from(event('end')), 1);
    a.endEvents();
    a.endClient(200);
    a.inFlight = false;
    const ended = JSON.parse(JSON.stringify(get(ring, 'a'))) as RequestView;
    expect(ended.modelWrote[0]!.content).toBe('a0 a1 a2 a3 a4 end');
    expect(ended.record.upstreamAttempts[0]!.response.partial).toBeUndefined();
    expect(ended.record.clientResponse.body.partial).toBeUndefined();
  });

  it('is cut at the per-text cap like the finished text, the rest counted', () => {
    const ring = new CaptureRing({ maxBytes: 1024 * 1024, textChars: 1000 });
    const w = ring.open(init('a'));
    w.attempt(new Attempt(1, 'u', 0, 0, true, { text: '', cut: 0 }));
    for (let i = 0; i < 100; i++) w.read(Buffer.from('x'.repeat(99) + '\n'), 1);
    const soFar = get(ring, 'a').record.upstreamAttempts[0]!.response;
    expect(soFar.text.length).toBe(1000);
    expect(soFar.cut).toBe(9000);
    expect(soFar.partial).toBe(true);
    w.endEvents();
    w.inFlight = false;
    const ended = get(ring, 'a').record.upstreamAttempts[0]!.response;
    expect({ text: ended.text, cut: ended.cut }).toEqual({ text: soFar.text, cut: soFar.cut });
  });

  it("gives a retry's running attempt its stream so far, the earlier attempt its own text", () => {
    const ring = new CaptureRing({ maxBytes: 1024 * 1024, textChars: 100_000 });
    const w = ring.open(init('a'));
    w.attempt(new Attempt(1, 'u', 0, 0, true, { text: '', cut: 0 }));
    w.read(Buffer.from(event('first try')), 1);
    w.endEvents();
    w.attempt(new Attempt(2, 'u', 0, 0, true, { text: '', cut: 0 }));
    const before = get(ring, 'a');
    // Between the attempts: the second has read nothing yet.
    expect(before.record.upstreamAttempts[1]!.response).toEqual({ text: '', cut: 0 });
    w.read(Buffer.from(event('second')), 1);
    const v = get(ring, 'a');
    expect(v.modelWrote.map((m) => m.content)).toEqual(['first try', 'second']);
    expect(v.record.upstreamAttempts[0]!.response.partial).toBeUndefined();
    expect(v.record.upstreamAttempts[1]!.response.partial).toBe(true);
  });
});
