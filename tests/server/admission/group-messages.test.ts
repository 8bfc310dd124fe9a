/**
 * What one request costs on the channel between a worker and the cluster primary
 * (server/group-admission.ts, TOOLPROOF_WORKERS > 1): each message is a write and a wake-up on
 * both sides, on a loaded box most of what the group's admission costs (bench/HISTORY.md). The
 * worker's side (GroupChannel, GroupKeyLimits, GroupGate) and the primary's
 * (groupAdmissionPrimary) talk here as they do over node:cluster's IPC: every message through
 * JSON, delivered on a later turn of the event loop. A request that holds a key slot and a
 * replica slot asks twice and tells once (its two ends, in one turn, in one message); the primary
 * answers twice. Counted, not timed: a new message per request fails here.
 */
import { describe, expect, it } from 'vitest';
import { RequestAbort } from '../../../server/abort.js';
import type { AdmissionSettings } from '../../../server/admission.js';
import type { ApiKeyEntry } from '../../../server/config-keys.js';
import { GroupGate, GroupKeyLimits } from '../../../server/group-admission.js';
import type { KeyEnd } from '../../../server/keys.js';
import { inProcessGroup as group, turn } from '../../support/group-channel.js';

const settings: AdmissionSettings = { concurrency: 1, reserved: 0, queueSize: 8, queueTimeoutMs: 5_000 };
const entry: ApiKeyEntry = { name: 'k', key: 'sk-k-0123456789', concurrency: 1, requestsPerMinute: 1_000 };

describe("the group admission's messages per request", () => {
  it('asks twice, tells once and is answered twice; every slot goes back (concurrency 1, 5 in a row)', async () => {
    const { ch, toPrimary, toWorker } = group();
    const limits = new GroupKeyLimits(ch);
    const gate = new GroupGate(ch, 'm#0', settings, {});
    await turn();
    await turn();
    const before = { toPrimary: toPrimary.length, toWorker: toWorker.length };
    const REQUESTS = 5;
    for (let i = 0; i < REQUESTS; i++) {
      const signal = new RequestAbort();
      let end: KeyEnd | undefined;
      await limits.enter(entry, signal, (e) => {
        end = e;
      });
      const ticket = await gate.enter('normal', signal, { id: 'key k', named: true, key: 'k' });
      expect(ticket.queuedMs).toBe(0); // the slot the request before gave back
      ticket.release();
      end?.(true);
      await turn();
      await turn();
    }
    expect(ch.pending.size).toBe(0);
    const sent = toPrimary.slice(before.toPrimary);
    expect(sent.length / REQUESTS).toBe(3);
    // The two ends as one message, in the order they were said.
    expect(sent[2]).toEqual({
      tp: 'adm:batch',
      ms: [
        { tp: 'adm:release', id: 1 },
        { tp: 'key:end', id: 0, sent: true },
      ],
    });
    expect((toWorker.length - before.toWorker) / REQUESTS).toBe(2);
  });

  it('a question sent in the same turn as an end carries it, first', async () => {
    const { ch, toPrimary } = group();
    const limits = new GroupKeyLimits(ch);
    const signal = new RequestAbort();
    let end: KeyEnd | undefined;
    await limits.enter(entry, signal, (e) => {
      end = e;
    });
    end?.(true);
    // The key's one slot, given back in this turn: the next request's question must find it free.
    const next = limits.enter(entry, new RequestAbort(), () => {});
    await next;
    expect(toPrimary.slice(1)).toEqual([
      {
        tp: 'adm:batch',
        ms: [{ tp: 'key:end', id: 0, sent: true }, expect.objectContaining({ tp: 'key:enter', id: 1 })],
      },
    ]);
  });
});
