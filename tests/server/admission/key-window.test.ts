/**
 * The per-key sliding minute (server/keys.ts KeyLimits) on a clock the test moves: no 60 s span
 * holds more requests than requestsPerMinute. With one bucket per second over only 60 of them,
 * a request counted late in second 0 had left the window at the start of second 60, 59 s later:
 * a key limited to 30 a minute was measured admitting 32 within 60 s (11:35, the walk's log).
 */
import { describe, expect, it, vi } from 'vitest';
import { retryAfterOf, type ToolproofError } from '../../../protocol/errors.js';
import { RequestAbort } from '../../../server/abort.js';
import { KeyLimits } from '../../../server/keys.js';

describe('KeyLimits: requests per minute', () => {
  it('counts a request for a full 60 s, whatever part of its second it came in', () => {
    let now = 999; // late in second 0
    const limits = new KeyLimits(() => now);
    const key = { name: 'k', key: 'sk-k', requestsPerMinute: 2 };
    limits.admit(key)(true);
    now = 59_000;
    limits.admit(key)(true);
    now = 60_000; // the first is 59.001 s old: still in the minute
    let err: ToolproofError | undefined;
    try {
      limits.admit(key);
    } catch (e) {
      err = e as ToolproofError;
    }
    expect(err?.code).toBe('TP_ERR_RATE_LIMITED');
    expect(retryAfterOf(err!)).toBe('1');
    now = 61_000; // 60.001 s after the first: its place is free
    expect(() => limits.admit(key)(true)).not.toThrow();
  });
});

describe("KeyLimits: the concurrency 429 after the key's queue", () => {
  it('says how long it waited to the tenth of a second (1.5 s read "waited 2s")', async () => {
    vi.useFakeTimers();
    try {
      const limits = new KeyLimits();
      const key = { name: 'k', key: 'sk-k', concurrency: 1, queueTimeoutMs: 1_500 };
      limits.admit(key);
      const waiting = limits.enter(key, new RequestAbort(), () => {});
      const refused = waiting?.then(
        () => undefined,
        (e: ToolproofError) => e.message,
      );
      await vi.advanceTimersByTimeAsync(1_500);
      expect(await refused).toMatch(
        /In flight 1 \(waited 1\.5s for one to end\)\. Please try again in 1s\.$/,
      );
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('KeyLimits: Retry-After of a per-minute limit', () => {
  it('is at most 60: the openai SDK ignores a longer one and retries at once (0.5 s, 1 s), into the same 429', () => {
    // Both in second 10: the first leaves the window at the start of second 71, 60.5 s from the
    // second request; the header said 61, openai-node (client.js retryRequest: over 60 s, its own
    // backoff) retried twice within 1.5 s and failed where waiting 60 s (then 1) succeeds.
    let now = 10_200;
    const limits = new KeyLimits(() => now);
    for (const key of [
      { name: 'r', key: 'sk-r', requestsPerMinute: 1 },
      { name: 't', key: 'sk-t', tokensPerMinute: 10 },
    ]) {
      now = 10_200;
      limits.admit(key)(true);
      if (key.name === 't') limits.addTokens('t', 50);
      now = 10_500;
      let err: ToolproofError | undefined;
      try {
        limits.admit(key);
      } catch (e) {
        err = e as ToolproofError;
      }
      expect(retryAfterOf(err!)).toBe('60');
      expect(err!.message).toMatch(/Please try again in 60s\.$/);
      // Sent again after the 60 s it said: in second 70 the first is still counted (second
      // granularity), so one more 429 saying 1, then admitted.
      now = 70_600;
      try {
        limits.admit(key);
        err = undefined;
      } catch (e) {
        err = e as ToolproofError;
      }
      expect(retryAfterOf(err!)).toBe('1');
      now = 71_600;
      expect(() => limits.admit(key)(true)).not.toThrow();
    }
  });
});
