/**
 * The capture's journal (server/capture/journal.ts, issue 28): the server's ring gets a request's
 * hooks as ops applied later, many requests' at once; a ring written at once gets them inline.
 * Both must keep the same records, and no reader may see an op still held.
 */
import { describe, expect, it } from 'vitest';
import { forcedEffect } from '../../policies/force-tool-use/effects.js';
import { flushJournal, journal, OPS_MAX } from '../../server/capture/journal.js';
import {
  beginCapture,
  captureAttemptEnd,
  captureAttemptOpened,
  captureAttemptSent,
  captureDecision,
  captureEffects,
  captureRead,
  finishCapture,
} from '../../server/capture/recorder.js';
import { CaptureRing } from '../../server/capture/ring.js';
import type { ChatCall } from '../../server/chat/context.js';
import { harnessOf } from '../../server/chat/harness-summary.js';
import { newTrace } from '../../server/chat/trace.js';

/** `n` requests in flight together, their hooks interleaved as 32 streams' are in a server. */
function serve(ring: CaptureRing, n: number, from = 0): void {
  const calls: ChatCall[] = [];
  for (let i = from; i < from + n; i++) {
    const bytes = Buffer.from(
      JSON.stringify({
        model: 'm',
        stream: true,
        messages: [{ role: 'user', content: `question ${i} ${'x'.repeat(i % 7)}` }],
      }),
    );
    const request = {
      id: `r${i}`,
      method: 'POST',
      url: '/v1/chat/completions',
      headers: { 'content-type': 'application/json', authorization: 'Bearer secret' },
      body: JSON.parse(bytes.toString()),
      tpStart: 1000 + i,
    };
    const call = {
      api: 'chat',
      original: request.body,
      trace: newTrace(),
      route: { client: { label: 'http://upstream' } },
      phase: { request: { stream: true } },
      discardedTokens: 0,
    } as unknown as ChatCall;
    beginCapture(ring, request as never, call, undefined, bytes);
    calls.push(call);
  }
  for (const [k, call] of calls.entries()) {
    call.trace.attempts = 1;
    captureAttemptSent(
      call,
      Buffer.from(`{"model":"m","n":${k}}`),
      { 'x-request-id': `r${k}`, 'content-type': 'application/json' },
      1001 + k,
    );
    captureAttemptOpened(call, 1001 + k, { status: 200 }, undefined, 1002 + k);
    captureEffects(call, [forcedEffect('required')]);
  }
  for (let e = 0; e < 4; e++)
    for (const [k, call] of calls.entries()) {
      captureRead(call, Buffer.from(`data: {"k":${k},"e":${e}}\n\n`), 1);
      if (e === 2 && k % 3 === 0) captureDecision(call, 'note', `a note ${k}`, { k });
    }
  for (const call of calls) {
    captureAttemptEnd(call);
    finishCapture(call, 200, true, undefined, undefined, harnessOf, undefined, 5000);
  }
}

/** A record as JSON with its clock readings (the hooks read the clock) left out. */
function withoutTimes(v: unknown): unknown {
  return JSON.parse(JSON.stringify(v), (k, x) => (k === 'at' || k.endsWith('Ms') ? undefined : x));
}

describe("the capture's journal (issue 28: capture's CPU)", () => {
  it('keeps the records a ring written at once keeps, and a read applies what it holds', () => {
    const limits = { maxBytes: 256 * 1024, textChars: 4096 };
    const batched = new CaptureRing(limits, true);
    const inline = new CaptureRing(limits);
    // Enough to evict: the records kept, and which, must agree too.
    for (let round = 0; round < 6; round++) {
      serve(batched, 40, round * 40);
      // Held, not yet applied: the batched ring's hooks went through the journal.
      expect(journal.ops).toBeGreaterThan(0);
      serve(inline, 40, round * 40);
    }
    const list = batched.list({ limit: 1000 });
    expect(journal.ops).toBe(0);
    expect(list.length).toBeGreaterThan(0);
    expect(withoutTimes(list)).toEqual(withoutTimes(inline.list({ limit: 1000 })));
    for (const s of list) expect(withoutTimes(batched.get(s.id))).toEqual(withoutTimes(inline.get(s.id)));
    expect(batched.bytes).toBe(inline.bytes);
  });

  it('holds at most OPS_MAX ops, whatever the load', () => {
    const ring = new CaptureRing({ maxBytes: 1024 * 1024, textChars: 4096 });
    let most = 0;
    for (let i = 0; i < 8; i++) {
      serve(ring, 64, i * 64);
      most = Math.max(most, journal.ops);
    }
    expect(most).toBeLessThanOrEqual(OPS_MAX);
    flushJournal();
    expect(ring.size).toBeGreaterThan(0);
  });

  it("holds a request's end without its call, so the call's parsed body dies with its request", () => {
    // Held until the journal is applied, the call kept the request's parsed body (an agent's
    // history) alive past young collections, promoted to die in the old generation (perf30).
    const ring = new CaptureRing({ maxBytes: 256 * 1024, textChars: 4096 }, true);
    const bytes = Buffer.from(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }));
    const request = {
      id: 'end',
      method: 'POST',
      url: '/v1/chat/completions',
      headers: {},
      body: JSON.parse(bytes.toString()),
      tpStart: 1000,
    };
    const call = {
      api: 'chat',
      original: request.body,
      trace: newTrace(),
      route: { client: { label: 'http://upstream' } },
      phase: { request: { stream: false } },
      discardedTokens: 7,
    } as unknown as ChatCall;
    beginCapture(ring, request as never, call, undefined, bytes);
    flushJournal();
    const w = call.capture!;
    call.trace.attempts = 1;
    finishCapture(call, 200, true, undefined, { cached: 0, prompt: 10 }, harnessOf, undefined, 1500);
    const held = journal.refs.slice(0, journal.nRefs);
    expect(held.length).toBeGreaterThan(0);
    expect(held).not.toContain(call);
    expect(held).not.toContain(request.body);
    // What the end reads of the call is still the record's: its summary (discarded tokens included).
    flushJournal();
    expect(w.outcome).toBe('clean');
    expect(w.harness?.discardedTokens).toBe(7);
    expect(w.harness?.promptTokens).toBe(10);
  });
});
