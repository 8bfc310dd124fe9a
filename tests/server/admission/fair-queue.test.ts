/**
 * A full admission queue between keys of one class, over real HTTP with the `openai` client:
 * one key's retry loop filled the queue as each place freed, and another key's agent got nothing
 * but 429s (Claude Code, on the built-in simulator with queueSize 1: seven 429s and 79 s for its
 * first answer while the other key's five workers were answered 31 times). The newest queued
 * request of the key using far more of the replica now leaves for the newcomer.
 */
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { type Stack, startStack, waitFor } from '../stack.js';

let stack: Stack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

const keys = { bob: 'sk-bob-fair-0000000000001', alice: 'sk-alice-fair-00000000001' };

describe('a full queue between keys of one class', () => {
  it("sheds the busiest key's newest queued request for another key's, and never the other way round", async () => {
    stack = await startStack({
      sim: { scenario: 'prose' },
      file: {
        admission: { concurrency: 1, queueSize: 1, queueTimeoutMs: 10_000 },
        keys: [
          { name: 'bob', key: keys.bob },
          { name: 'alice', key: keys.alice },
        ],
      },
    });
    const s = stack;
    const client = (key: string) =>
      new OpenAI({ baseURL: s.url, apiKey: key, maxRetries: 0, timeout: 15_000 });
    const ask = (key: string, delayMs: number) =>
      client(key)
        .chat.completions.create(
          { model: 'sim', messages: [{ role: 'user', content: `hi ${delayMs}` }] },
          { headers: { 'x-sim-scenario': JSON.stringify({ say: 'ok', delayMs }) } },
        )
        .then(
          () => 'ok',
          (e: { status?: number; code?: string }) => `${e.status} ${e.code}`,
        );
    const queued = async () => {
      for (let i = 0; i < 200; i++) {
        const metrics = await (await fetch(`${s.origin}/metrics`)).text();
        if (/toolproof_admission_queue_depth\{[^}]*class="normal"\} 1\b/.test(metrics)) return;
        await new Promise((r) => setTimeout(r, 10));
      }
      throw new Error('nothing queued');
    };
    const held = ask(keys.bob, 600); // bob's first takes the slot
    await waitFor(() => s.sim.requests.length === 1);
    const bobQueued = ask(keys.bob, 0); // bob's second fills the queue
    await queued();
    const alice = ask(keys.alice, 0); // alice's takes bob's place in the queue
    expect(await bobQueued).toBe('429 TP_ERR_QUEUE_FULL');
    // bob again: alice uses no more of the replica than bob, so bob is the one refused.
    expect(await ask(keys.bob, 0)).toBe('429 TP_ERR_QUEUE_FULL');
    expect(await held).toBe('ok');
    expect(await alice).toBe('ok');
  });
});
