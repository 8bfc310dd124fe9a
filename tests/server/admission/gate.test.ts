/**
 * The admission gate alone (server/admission.ts): order by class then arrival, the slots kept for
 * interactive requests, the queue bound that sheds the least urgent, the queue timeout, a client
 * that leaves, and an 'auto' limit read from the backend.
 */
import { describe, expect, it } from 'vitest';
import { RequestAbort } from '../../../server/abort.js';
import { AdmissionGate, type PriorityClass, type Ticket } from '../../../server/admission.js';
import { retryAfterOf, ToolproofError } from '../../../protocol/errors.js';

const settings = (over: Partial<ConstructorParameters<typeof AdmissionGate>[0]> = {}) => ({
  concurrency: 1,
  reserved: 0,
  queueSize: 10,
  queueTimeoutMs: 0,
  ...over,
});

async function enter(gate: AdmissionGate, cls: PriorityClass, signal = new RequestAbort()): Promise<Ticket> {
  return await gate.enter(cls, signal);
}

describe('AdmissionGate', () => {
  it('remembers owners that left ahead of the clock, at most 1,024 of them (one per client address is untrusted)', async () => {
    const owner = (id: string) => ({ id, named: false });
    const LONG = 90_000;
    /** `a` leaves with the charge of a long prompt, then `between` other owners do; who goes first after? */
    const firstAfter = async (between: number): Promise<string> => {
      const gate = new AdmissionGate(settings());
      (gate.enter('normal', new RequestAbort(), owner('a'), LONG) as Ticket).release();
      for (let i = 0; i < between; i++)
        (gate.enter('normal', new RequestAbort(), owner(`address ${i}`), LONG) as Ticket).release();
      const holder = gate.enter('normal', new RequestAbort(), owner('h')) as Ticket;
      const order: string[] = [];
      const waits = ['a', 'b'].map((id) =>
        Promise.resolve(gate.enter('normal', new RequestAbort(), owner(id), 100)).then((t) => {
          order.push(id);
          t.release();
        }),
      );
      holder.release();
      await Promise.all(waits);
      return order[0]!;
    };
    // Remembered: a's charge holds, the fresh owner b goes first though a came first.
    expect(await firstAfter(10)).toBe('b');
    // Forgotten once 1,024 others left after it: a starts at the clock again, first by arrival.
    expect(await firstAfter(1_100)).toBe('a');
  });

  it('charges a request the tokens it generates while it still holds its slot (Ticket.charge)', async () => {
    // Three slots: `l` streams a long answer in one, `s` holds two. Both then queue a request, l's
    // first; one of s's slots frees. In flight they are even (one each), so the work served
    // decides: l's answer so far (640 tokens, 10 units) puts its next request behind s's.
    const who = (id: string) => ({ id, named: true, key: id });
    const run = async (charged: boolean) => {
      const gate = new AdmissionGate(settings({ concurrency: 3 }));
      const l = gate.enter('normal', new RequestAbort(), who('l')) as Ticket;
      const s1 = gate.enter('normal', new RequestAbort(), who('s')) as Ticket;
      gate.enter('normal', new RequestAbort(), who('s'));
      const order: string[] = [];
      const queued = ['l', 's'].map((id) =>
        Promise.resolve(gate.enter('normal', new RequestAbort(), who(id))).then(() => order.push(id)),
      );
      if (charged) l.charge?.(640);
      s1.release();
      await Promise.race(queued);
      return order[0];
    };
    expect(await run(false)).toBe('l');
    expect(await run(true)).toBe('s');
  });

  it('admits at once below the limit, then by class and arrival', async () => {
    const gate = new AdmissionGate(settings());
    const first = gate.enter('low', new RequestAbort());
    expect(first).not.toBeInstanceOf(Promise); // a free slot costs no promise
    const order: string[] = [];
    const waits = (
      [
        ['bg1', 'background'],
        ['low1', 'low'],
        ['high1', 'high'],
        ['low2', 'low'],
        ['normal1', 'normal'],
      ] as const
    ).map(([name, cls]) =>
      enter(gate, cls).then((t) => {
        order.push(name);
        t.release();
      }),
    );
    expect(gate.load).toEqual({ active: 1, queued: 5, limit: 1 });
    (first as Ticket).release();
    await Promise.all(waits);
    expect(order).toEqual(['high1', 'normal1', 'low1', 'low2', 'bg1']);
    expect(gate.load.active).toBe(0);
  });

  it('keeps reserved slots for normal and high: background work waits while an interactive turn starts', async () => {
    const gate = new AdmissionGate(settings({ concurrency: 2, reserved: 1 }));
    const bg = await enter(gate, 'background');
    let second = false;
    const bg2 = enter(gate, 'background').then((t) => {
      second = true;
      return t;
    });
    await new Promise((r) => setTimeout(r, 5));
    expect(second).toBe(false); // the last slot is kept
    const main = gate.enter('normal', new RequestAbort());
    expect(main).not.toBeInstanceOf(Promise);
    (main as Ticket).release();
    bg.release();
    (await bg2).release();
    expect(second).toBe(true);
  });

  it('a full queue sheds its least urgent request for a more urgent one, else refuses the newcomer (429, Retry-After)', async () => {
    const gate = new AdmissionGate(settings({ queueSize: 1 }));
    const held = await enter(gate, 'normal');
    const low = enter(gate, 'low');
    const high = enter(gate, 'high');
    await expect(low).rejects.toMatchObject({ code: 'TP_ERR_QUEUE_FULL', status: 429 });
    const refused = enter(gate, 'high').catch((e: unknown) => e);
    const err = (await refused) as ToolproofError;
    expect(err.code).toBe('TP_ERR_QUEUE_FULL');
    expect(Number(retryAfterOf(err))).toBeGreaterThanOrEqual(1);
    held.release();
    (await high).release();
  });

  it('a full queue sheds, within a class, the newest of a key using at least two more of the replica; a request that left no longer counts', async () => {
    const gate = new AdmissionGate(settings({ queueSize: 1 }));
    const a1 = (await gate.enter('normal', new RequestAbort(), 'a')) as Ticket;
    const gone = new RequestAbort();
    const a2 = gate.enter('normal', gone, 'a') as Promise<Ticket>;
    gone.abort(new Error('client gone'));
    await expect(a2).rejects.toThrow('client gone');
    const b = gate.enter('normal', new RequestAbort(), 'b') as Promise<Ticket>; // queued: a uses 1
    a1.release();
    (await b).release();
    const b2 = (await gate.enter('normal', new RequestAbort(), 'b')) as Ticket;
    const a3 = gate.enter('normal', new RequestAbort(), 'a') as Promise<Ticket>; // a: 1, b: 1
    // c uses nothing, a one: not two more, so c is the one refused (and a stays queued).
    await expect(gate.enter('normal', new RequestAbort(), 'c')).rejects.toMatchObject({
      code: 'TP_ERR_QUEUE_FULL',
    });
    // Nor b (one in flight, as a has one queued); a's own newcomer never sheds a's.
    await expect(gate.enter('normal', new RequestAbort(), 'b')).rejects.toMatchObject({
      code: 'TP_ERR_QUEUE_FULL',
    });
    await expect(gate.enter('normal', new RequestAbort(), 'a')).rejects.toMatchObject({
      code: 'TP_ERR_QUEUE_FULL',
    });
    b2.release();
    (await a3).release();
    expect(gate.load).toMatchObject({ active: 0, queued: 0 });
  });

  it('a request queued past the timeout leaves with 503 and Retry-After', async () => {
    const shed: string[] = [];
    const gate = new AdmissionGate(settings({ queueTimeoutMs: 30 }), {
      shed: (c, r) => shed.push(`${c}:${r}`),
    });
    const held = await enter(gate, 'normal');
    const err = (await enter(gate, 'low').catch((e: unknown) => e)) as ToolproofError;
    expect(err).toBeInstanceOf(ToolproofError);
    expect(err.code).toBe('TP_ERR_QUEUE_TIMEOUT');
    expect(err.status).toBe(503);
    expect(retryAfterOf(err)).toMatch(/^\d+$/);
    expect(shed).toEqual(['low:timeout']);
    expect(gate.load.queued).toBe(0);
    held.release();
  });

  it('a client that leaves while queued leaves the queue and never takes a slot', async () => {
    const depth: number[] = [];
    let n = 0;
    const gate = new AdmissionGate(settings(), { queued: (_c, d) => depth.push((n += d)) });
    const held = await enter(gate, 'normal');
    const abort = new RequestAbort();
    const waiting = enter(gate, 'normal', abort);
    abort.abort(new Error('client gone'));
    await expect(waiting).rejects.toThrow('client gone');
    expect(depth).toEqual([1, 0]);
    held.release();
    expect(gate.load).toEqual({ active: 0, queued: 0, limit: 1 });
  });

  it("'auto' asks the backend for its slots once, holding requests until it answers", async () => {
    let answer: (n: number | undefined) => void = () => {};
    let asked = 0;
    const gate = new AdmissionGate(settings({ concurrency: 'auto' }), {
      probeLimit: () => {
        asked++;
        return new Promise((r) => (answer = r));
      },
    });
    const a = enter(gate, 'normal');
    const b = enter(gate, 'normal');
    const c = enter(gate, 'normal');
    expect(asked).toBe(1);
    answer(2);
    const [ta, tb] = await Promise.all([a, b]);
    expect(gate.load).toEqual({ active: 2, queued: 1, limit: 2 });
    ta!.release();
    (await c).release();
    tb!.release();
  });

  it('a reload that raises the limit admits the queued at once; one that lowers it lets the running finish', async () => {
    const gate = new AdmissionGate(settings());
    const a = await enter(gate, 'normal');
    const b = enter(gate, 'normal');
    expect(gate.load.queued).toBe(1);
    gate.configure(settings({ concurrency: 2 }));
    const tb = await b;
    expect(gate.load).toEqual({ active: 2, queued: 0, limit: 2 });
    gate.configure(settings({ concurrency: 1 }));
    const c = enter(gate, 'normal');
    a.release();
    expect(gate.load.queued).toBe(1); // still one running: at the new limit
    tb.release();
    (await c).release();
    expect(gate.load.active).toBe(0);
  });

  it("an 'auto' backend that does not say runs unlimited", async () => {
    const gate = new AdmissionGate(settings({ concurrency: 'auto' }), { probeLimit: async () => undefined });
    const a = await enter(gate, 'normal');
    const b = await enter(gate, 'normal');
    expect(gate.load.limit).toBeUndefined();
    a.release();
    b.release();
  });
});

describe("vLLM's priority field", () => {
  it('schedulingPriority sends each request its class as `priority` (lower first), the prompt untouched', async () => {
    const { startStack } = await import('../stack.js');
    const stack = await startStack({
      file: { admission: { concurrency: 4, schedulingPriority: true }, defaults: { forceToolUse: false } },
    });
    try {
      for (const [header, rank] of [
        ['high', 0],
        ['background', 3],
      ] as const) {
        const res = await fetch(`${stack.url}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-toolproof-priority': header },
          body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
        });
        expect(res.status).toBe(200);
        const sent = stack.sim.requests.at(-1)!.body as { priority?: number; messages: unknown };
        expect(sent.priority).toBe(rank);
        expect(sent.messages).toEqual([{ role: 'user', content: 'hi' }]);
      }
      // The header itself never goes upstream.
      expect(stack.sim.requests.at(-1)!.headers['x-toolproof-priority']).toBeUndefined();
    } finally {
      await stack.close();
    }
  });
});
