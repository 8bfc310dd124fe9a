/**
 * A front door's own stream replaces the default chat framing registered for its response, so
 * the shutdown deadline frames each stream by the code that wrote it (never by its URL).
 */
import { describe, expect, it } from 'vitest';
import { ToolproofError } from '../../protocol/errors.js';
import { OpenStreams } from '../../server/open-streams.js';
import { seededRng } from './test-utils.js';

describe('OpenStreams', () => {
  it("a front door's claim replaces the default registered for the same response", async () => {
    const streams = new OpenStreams();
    const ended: string[] = [];
    const res = {};
    streams.add(res, { abortWithError: async () => void ended.push('default') });
    streams.claim(res, { abortWithError: async () => void ended.push('front door') });
    streams.add({}, { abortWithError: async () => void ended.push('other') });
    expect(streams.size).toBe(2);
    await streams.abortAll(new ToolproofError('TP_ERR_SHUTTING_DOWN'));
    expect(ended.sort()).toEqual(['front door', 'other']);
    streams.delete(res);
    expect(streams.size).toBe(1);
  });

  it('a claim after the response closed (its entry dropped) registers nothing', () => {
    const streams = new OpenStreams();
    const res = {};
    streams.add(res, { abortWithError: async () => undefined });
    streams.delete(res);
    streams.claim(res, { abortWithError: async () => undefined });
    expect(streams.size).toBe(0);
  });

  it('one stream that never flushes does not hold the others past the wait', async () => {
    const streams = new OpenStreams();
    streams.add({}, { abortWithError: () => new Promise<void>(() => undefined) });
    let ended = false;
    streams.add({}, { abortWithError: async () => void (ended = true) });
    await streams.abortAll(new ToolproofError('TP_ERR_SHUTTING_DOWN'), 50);
    expect(ended).toBe(true);
  });

  it('stays exact under any order of registrations, claims and deletions (against a Map)', async () => {
    const rng = seededRng(12);
    for (let run = 0; run < 50; run++) {
      const streams = new OpenStreams();
      const ended: string[] = [];
      const reference = new Map<object, string>();
      const keys = Array.from({ length: 12 }, () => ({}));
      for (let step = 0; step < 200; step++) {
        const key = keys[Math.floor(rng() * keys.length)]!;
        const label = `s${step}`;
        const op = rng();
        const stream = { abortWithError: async () => void ended.push(label) };
        if (op < 0.45) {
          streams.add(key, stream);
          reference.set(key, label);
        } else if (op < 0.6) {
          streams.claim(key, stream);
          if (reference.has(key)) reference.set(key, label);
        } else {
          streams.delete(key);
          reference.delete(key);
        }
        expect(streams.size).toBe(reference.size);
      }
      await streams.abortAll(new ToolproofError('TP_ERR_SHUTTING_DOWN'));
      expect(ended.sort()).toEqual([...reference.values()].sort());
      for (const key of keys) streams.delete(key);
      expect(streams.size).toBe(0);
    }
  });
});
