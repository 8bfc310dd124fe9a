/**
 * A front door's own stream replaces the default chat framing registered for its response, so
 * the shutdown deadline frames each stream by the code that wrote it (never by its URL).
 */
import { describe, expect, it } from 'vitest';
import { ToolproofError } from '../../protocol/errors.js';
import { OpenStreams } from '../../server/open-streams.js';

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
});
