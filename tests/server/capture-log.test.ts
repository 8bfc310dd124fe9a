/**
 * Capture as an append-only log (server/capture/log.ts, log-read.ts; TOOLPROOF_CAPTURE_LOG=1, a
 * first cut for issue 28): what a request's touch points append reads back as the record that
 * was written, whatever the point where the log came round; a record whose first entry was
 * written over is gone whole (never read as cut into another's bytes); the log's bound holds by
 * construction; reading it costs what the log holds (x1 vs x4).
 */
import { performance } from 'node:perf_hooks';
import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { answer, type RequestView } from '../../server/capture/query.js';
import {
  beginCapture,
  captureAttemptEnd,
  captureAttemptOpened,
  captureAttemptSent,
  captureDecision,
  captureRead,
  finishCapture,
} from '../../server/capture/recorder.js';
import { CaptureLog, type LogWriter } from '../../server/capture/log.js';
import { CaptureRing } from '../../server/capture/ring.js';
import type { ChatCall } from '../../server/chat/context.js';
import { newTrace } from '../../server/chat/trace.js';
import { measureScaling, prng, withinBudget } from '../support/cost-scaling.js';

interface Written {
  id: string;
  body: string;
  sent: string;
  reads: string[];
  frames: string[];
  status: number;
  reason: string;
}

function logRing(logBytes: number, textChars = 64 * 1024): CaptureRing {
  const ring = new CaptureRing({ maxBytes: logBytes * 2, textChars });
  ring.log = new CaptureLog(logBytes);
  return ring;
}

function requestOf(id: string, body: string): FastifyRequest {
  return {
    id,
    url: '/v1/chat/completions?x=1',
    method: 'POST',
    headers: { 'x-from': id, authorization: 'Bearer sk-secret' },
    body: JSON.parse(body),
    tpStart: performance.now(),
    tpKey: undefined,
  } as unknown as FastifyRequest;
}

function callOf(): ChatCall {
  return {
    api: 'chat',
    original: { model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] },
    trace: newTrace(),
    route: { client: { label: 'http://up/v1' } },
    phase: { request: { stream: true } },
    capture: undefined,
    discardedTokens: 0,
  } as unknown as ChatCall;
}

const word = (rand: () => number, n: number) =>
  Array.from({ length: n }, () => 'abcdefghé中'[Math.floor(rand() * 11)]).join('');

/** One request's touch points as steps (interleaved with other requests' by the caller). */
function* request(
  rand: () => number,
  ring: CaptureRing,
  i: number,
  out: Written[],
  opened: number[],
): Generator<void> {
  const id = `r${i}`;
  const body = JSON.stringify({
    model: 'm',
    stream: true,
    messages: [{ role: 'user', content: word(rand, 20 + Math.floor(rand() * 1500)) }],
  });
  const shared = rand() < 0.5;
  const sent = shared
    ? `${body.slice(0, -1)},"tool_choice":"required"}`
    : JSON.stringify({ other: word(rand, 50) });
  const w: Written = {
    id,
    body,
    sent,
    reads: [],
    frames: [],
    status: rand() < 0.2 ? 502 : 200,
    reason: word(rand, 12),
  };
  const call = callOf();
  out.push(w);
  beginCapture(ring, requestOf(id, body), call, `session-${i % 3}`, Buffer.from(body));
  opened.push(i);
  yield;
  call.trace.attempts = 1;
  captureAttemptSent(call, Buffer.from(sent), performance.now());
  captureAttemptOpened(call, performance.now(), { status: w.status, replica: 'rep' });
  yield;
  const reads = 1 + Math.floor(rand() * 6);
  for (let k = 0; k < reads; k++) {
    const r = `data: {"k":${k},"t":"${word(rand, Math.floor(rand() * 400))}"}\n\n`;
    w.reads.push(r);
    captureRead(call, Buffer.from(r), 1);
    if (rand() < 0.5) yield;
  }
  captureAttemptEnd(call);
  captureDecision(call, 'why', w.reason, { n: i });
  const frames = 1 + Math.floor(rand() * 3);
  for (let k = 0; k < frames; k++) {
    const f = `data: ${word(rand, Math.floor(rand() * 300))}\n\n`;
    w.frames.push(f);
    (call.capture as LogWriter).client(k % 2 === 0 ? f : Buffer.from(f));
    yield;
  }
  finishCapture(call, w.status, true, undefined, undefined, undefined, undefined);
}

describe('capture as a log', () => {
  it('reads back every record as written, whatever the wrap point; the oldest go first, whole', () => {
    for (let seed = 1; seed <= 8; seed++) {
      const rand = prng(seed);
      const ring = logRing(64 * 1024 + Math.floor(rand() * 64) * 1024);
      const written: Written[] = [];
      const opened: number[] = [];
      const running: Generator<void>[] = [];
      let n = 0;
      for (let step = 0; step < 3000; step++) {
        if (running.length < 1 + Math.floor(rand() * 8))
          running.push(request(rand, ring, n++, written, opened));
        const k = Math.floor(rand() * running.length);
        if (running[k]!.next().done) running.splice(k, 1);
        if (step % 97 !== 0) continue;
        const records = ring.logRecords();
        const byId = new Map(written.map((x) => [x.id, x]));
        expect(ring.bytes).toBeLessThanOrEqual(ring.limits.maxBytes);
        // The records kept are the newest ones opened, in the order they opened.
        const ids = records.map((r) => Number(r.id.slice(1)));
        expect(ids).toEqual(opened.slice(opened.length - ids.length));
        expect(ids.length).toBeGreaterThan(0);
        for (const r of records) {
          const w = byId.get(r.id)!;
          expect(r.clientRequest.body.text).toBe(w.body);
          expect(r.clientRequest.body.cut).toBe(0);
          expect(JSON.stringify(r.clientRequest.headers)).toBe(
            JSON.stringify({ 'x-from': w.id, authorization: '[redacted]' }),
          );
          expect(r.path).toBe('/v1/chat/completions');
          expect(r.session).toBe(`session-${Number(r.id.slice(1)) % 3}`);
          const a = r.upstreamAttempts[0];
          if (a === undefined) continue;
          expect(a.request.text).toBe(w.sent);
          expect(a.status).toBe(w.status);
          expect(a.replica).toBe('rep');
          expect(w.reads.join('').startsWith(a.response.text)).toBe(true);
          if (!r.inFlight) {
            expect(a.response.text).toBe(w.reads.join(''));
            expect(a.events).toBe(w.reads.length);
            expect(r.clientResponse.body.text).toBe(w.frames.join(''));
            expect(r.status).toBe(w.status);
            expect(r.outcome).toBe(w.status >= 400 ? 'failed' : 'clean');
            expect(r.decisions.map((d) => d.reason)).toEqual([w.reason]);
          }
        }
      }
    }
  }, 120_000);

  it('keeps no more than its size, and a record never takes more than a quarter of it', () => {
    const ring = logRing(256 * 1024, 1024 * 1024);
    const big = 'x'.repeat(200_000);
    let whole = 0;
    for (let i = 0; i < 50; i++) {
      const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: big }] });
      whole = body.length;
      const call = callOf();
      beginCapture(ring, requestOf(`b${i}`, body), call, 's', Buffer.from(body));
      finishCapture(call, 200, true, undefined, undefined, undefined, undefined);
      expect(ring.bytes).toBeLessThanOrEqual(ring.limits.maxBytes);
    }
    const r = ring.logRecords().at(-1)!;
    expect(r.clientRequest.body.text.length).toBeLessThan((256 * 1024) / 4);
    expect(r.clientRequest.body.text.length + r.clientRequest.body.cut).toBe(whole);
  });

  it('a request in flight reads as far as it went; one whose first entry was written over is gone', () => {
    const ring = logRing(64 * 1024);
    const body = JSON.stringify({ model: 'm', messages: [] });
    const live = callOf();
    beginCapture(ring, requestOf('live', body), live, 's', Buffer.from(body));
    live.trace.attempts = 1;
    captureAttemptSent(live, Buffer.from('{}'), performance.now());
    // A read that ends inside a character: it is left for the next read.
    captureRead(live, Buffer.from('data: {"a":"é').subarray(0, -1), 1);
    const v = answer(ring, { op: 'get', id: 'live' }, 0) as RequestView;
    expect(v.record.inFlight).toBe(true);
    expect(v.record.upstreamAttempts[0]!.response).toMatchObject({ text: 'data: {"a":"', partial: true });
    // Other requests come round the log: the live one is gone, and writes nothing more.
    for (let i = 0; i < 200; i++) {
      const c = callOf();
      beginCapture(ring, requestOf(`o${i}`, body), c, 's', Buffer.from(`${body}${' '.repeat(1000)}`));
      finishCapture(c, 200, true, undefined, undefined, undefined, undefined);
    }
    expect(ring.get('live')).toBeUndefined();
    const at = ring.log!.at;
    captureRead(live, Buffer.from('x'.repeat(1000)), 1);
    expect(ring.log!.at).toBe(at);
  });

  it('reads the list at a cost of what the log holds: x1 vs x4', () => {
    const s = measureScaling(
      (kb) => {
        const ring = logRing(kb * 1024);
        const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'q'.repeat(400) }] });
        for (let i = 0; i < kb; i++) {
          const c = callOf();
          beginCapture(ring, requestOf(`s${i}`, body), c, 's', Buffer.from(body));
          c.trace.attempts = 1;
          captureAttemptSent(c, Buffer.from(body), performance.now());
          captureRead(c, Buffer.from('data: {}\n\n'), 1);
          captureAttemptEnd(c);
          finishCapture(c, 200, true, undefined, undefined, undefined, undefined);
        }
        return ring;
      },
      (ring) => ring.list({ limit: 1000 }),
      { from: 64, max: 4096 },
    );
    expect(withinBudget(s, 5).time, JSON.stringify(s)).toBe(true);
  }, 60_000);
});
