/**
 * Tracing with TOOLPROOF_WORKERS=2: a Responses turn relayed to the worker that holds its state
 * (server/worker-relay.ts) is one request in the trace. The owner's server span is a child of the
 * receiving worker's (the relay sends that span's traceparent), not a second server span beside it
 * under the client's. The real process (two workers, one simulator), a loopback OTLP receiver.
 * So is a worker's question for the items of the other (gather.ts): its span a child of the
 * request's server span, not a trace of its own.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSimulator, type Simulator } from '../../simulator/index.js';
import { otlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.js';
import { freshRequest, type Proc, startWorkers, stopWorkers } from '../support/toolproof-process.js';
import { workerOf } from '../support/worker-clients.js';

const CLIENT_SPAN = '00f067aa0ba902b7';
const traceOf = (turn: number) => `4bf92f3577b34da6a3ce929d0e0e47${String(turn).padStart(2, '0')}`;

describe('a relayed Responses turn in the trace', () => {
  let sim: Simulator;
  let receiver: OtlpReceiver;
  let proc: Proc;
  let origin: string;

  beforeAll(async () => {
    sim = await createSimulator({ personality: 'vllm', scenario: () => ({ say: 'noted' }) });
    receiver = await otlpReceiver();
    ({ proc, origin } = await startWorkers(undefined, 2, {
      TOOLPROOF_UPSTREAM_URL: sim.url,
      TOOLPROOF_SHUTDOWN_GRACE_MS: '1000',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.origin,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '50',
    }));
  }, 90_000);

  afterAll(async () => {
    await stopWorkers(proc);
    await sim?.close();
    await receiver?.close();
  });

  it("the owner's server span is a child of the receiving worker's", async () => {
    // Each turn on a connection of its own: the primary hands them to the workers in turn, so
    // some of the turns reach the worker that does not hold the chain and are relayed.
    let previous: string | undefined;
    for (let turn = 1; turn <= 6; turn++) {
      const res = await freshRequest(origin, {
        path: '/v1/responses',
        headers: { traceparent: `00-${traceOf(turn)}-${CLIENT_SPAN}-01` },
        body: JSON.stringify({
          model: 'm',
          input: `turn ${turn}`,
          ...(previous ? { previous_response_id: previous } : {}),
        }),
      });
      expect(res.status).toBe(200);
      previous = (JSON.parse(res.text) as { id: string }).id;
    }
    const serverSpans = (turn: number) =>
      receiver.spans.filter((s) => s.traceId === traceOf(turn) && s.kind === 2);
    // Every turn's server spans exported (one, or two when relayed).
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline && [1, 2, 3, 4, 5, 6].some((t) => serverSpans(t).length === 0))
      await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 300)); // a relayed turn's second span, if late
    const relayed = [2, 3, 4, 5, 6].filter((t) => serverSpans(t).length === 2);
    expect(relayed.length).toBeGreaterThan(0);
    for (const turn of relayed) {
      const spans = serverSpans(turn);
      const receiving = spans.find((s) => s.parentSpanId === CLIENT_SPAN);
      expect(receiving).toBeDefined();
      const owner = spans.find((s) => s !== receiving)!;
      expect(owner.parentSpanId).toBe(receiving!.spanId);
      // The owner ran it: its attempt span (the inference) is under the owner's server span.
      const attempt = receiver.spans.find((s) => s.traceId === traceOf(turn) && s.kind === 3);
      expect(attempt?.parentSpanId).toBe(owner.spanId);
    }
    for (const turn of [1, 2, 3, 4, 5, 6].filter((t) => !relayed.includes(t)))
      expect(serverSpans(turn).map((s) => s.parentSpanId)).toEqual([CLIENT_SPAN]);
  }, 60_000);

  it("a question for the other worker's items is a child of the request's server span", async () => {
    // An assistant item made on each worker (connections go to the workers in turn).
    const items = new Map<number, string>();
    while (items.size < 2) {
      const res = await freshRequest(origin, {
        path: '/v1/responses',
        body: JSON.stringify({ model: 'm', input: 'x' }),
      });
      const made = JSON.parse(res.text) as { id: string; output: { id: string }[] };
      items.set(workerOf(made.id), made.output[0]!.id);
    }
    const [a, b] = [...items.values()];
    // Twice on fresh connections: one reaches the worker holding `a`, serves it and asks the other
    // for `b`; the other, relayed, reaches the owner (both spans under the receiving one either way).
    for (const turn of [11, 12]) {
      const res = await freshRequest(origin, {
        path: '/v1/responses',
        headers: { traceparent: `00-${traceOf(turn)}-${CLIENT_SPAN}-01` },
        body: JSON.stringify({
          model: 'm',
          input: [
            { type: 'item_reference', id: a },
            { type: 'item_reference', id: b },
            { role: 'user', content: 'go on' },
          ],
        }),
      });
      expect(res.status).toBe(200);
    }
    const serverSpans = (turn: number) =>
      receiver.spans.filter((s) => s.traceId === traceOf(turn) && s.kind === 2);
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline && [11, 12].some((t) => serverSpans(t).length < 2))
      await new Promise((r) => setTimeout(r, 50));
    for (const turn of [11, 12]) {
      const spans = serverSpans(turn);
      expect(spans).toHaveLength(2);
      const receiving = spans.find((s) => s.parentSpanId === CLIENT_SPAN)!;
      expect(spans.find((s) => s !== receiving)?.parentSpanId).toBe(receiving.spanId);
    }
  }, 60_000);
});
