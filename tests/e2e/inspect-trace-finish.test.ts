/**
 * Issue 28's leftovers, as a user reads them: the inspector names each attempt's trace and span
 * (so a request found on the page finds its trace), and a cut answer says how it ended, in the
 * capture (the API's `finish`) and in the attempt span's gen_ai.response.finish_reasons alike:
 * the client left (`client_closed`), the upstream cut the stream (`error`, error.type saying
 * which), toolproof cut it off itself (`early_stop`), streamed and not. Before, the page had no
 * trace id, the capture read no finish reason at all, and a cut attempt's span had none.
 */
import type { Page } from 'playwright-core';
import { afterEach, describe, expect, it } from 'vitest';
import { chromiumAvailable, openPage } from '../support/browser.js';
import { otlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';
import { type Stack, startStack, waitFor, weatherTool } from '../server/stack.js';

let stack: Stack | undefined;
let receiver: OtlpReceiver | undefined;
afterEach(async () => {
  await stack?.close();
  await receiver?.close();
  stack = receiver = undefined;
});

const otelEnv = (r: OtlpReceiver, more: Record<string, string> = {}) => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: r.origin,
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  ...more,
});
const body = (stream: boolean) => ({
  model: 'sim',
  messages: [{ role: 'user', content: 'Weather in Paris?' }],
  tools: [weatherTool],
  stream,
});
const post = (s: Stack, stream: boolean, scenario: unknown, signal?: AbortSignal) =>
  fetch(`${s.url}/chat/completions`, {
    method: 'POST',
    signal,
    headers: { 'content-type': 'application/json', 'x-sim-scenario': JSON.stringify(scenario) },
    body: JSON.stringify(body(stream)),
  });

interface View {
  record: { id: string; status: unknown; inFlight: boolean; upstreamAttempts: Array<{ n: number }> };
  modelWrote: Array<{ finish: string[] }>;
  clientReceived: { finish: string[] };
  traces: Array<{ traceId: string; spanId: string } | null>;
}
const view = async (s: Stack, id: string): Promise<View> =>
  (await (await fetch(`${s.origin}/inspect/api/requests/${encodeURIComponent(id)}`)).json()) as View;
/** The request's view once it ended (a client that left ends its record a moment later). */
async function ended(s: Stack, id: string): Promise<View> {
  let v = await view(s, id);
  for (let i = 0; i < 100 && v.record.inFlight; i++) {
    await new Promise((ok) => setTimeout(ok, 20));
    v = await view(s, id);
  }
  return v;
}

/** The attempt spans of the request, in order (their server span's children). */
async function attemptSpans(s: Stack, r: OtlpReceiver, id: string): Promise<ReceivedSpan[]> {
  const server = () => r.spans.find((x) => x.kind === 2 && x.attributes['toolproof.request_id'] === id);
  for (let i = 0; i < 100 && !server(); i++) {
    await s.app.toolproof.tracing!.flush();
    if (!server()) await new Promise((ok) => setTimeout(ok, 20));
  }
  const parent = server();
  if (!parent) throw new Error(`no server span for ${id}`);
  return r.spans
    .filter((x) => x.parentSpanId === parent.spanId && x.kind === 3)
    .sort(
      (a, b) => (a.attributes['toolproof.attempt'] as number) - (b.attributes['toolproof.attempt'] as number),
    );
}
const reasons = (spans: ReceivedSpan[]) => spans.map((a) => a.attributes['gen_ai.response.finish_reasons']);

/** A stream the client reads two events of, then leaves; the request's id. */
async function leaveStream(s: Stack): Promise<string> {
  const ac = new AbortController();
  const res = await post(s, true, { say: 'word '.repeat(200), chunkDelayMs: 20 }, ac.signal);
  const reader = res.body!.getReader();
  await reader.read();
  await reader.read();
  ac.abort();
  await reader.read().catch(() => undefined);
  return res.headers.get('x-request-id')!;
}

/** A non-streamed request the client leaves while the upstream is still generating. */
async function leaveWaiting(s: Stack): Promise<string> {
  const ac = new AbortController();
  const res = post(s, false, { say: 'late', delayMs: 3_000 }, ac.signal).catch(() => undefined);
  await waitFor(() => s.sim.requests.length > 0);
  const list = (await (await fetch(`${s.origin}/inspect/api/requests`)).json()) as {
    requests: Array<{ id: string }>;
  };
  ac.abort();
  await res;
  return list.requests[0]!.id;
}

describe('how a cut answer ended, in the capture and in the trace', () => {
  it('the client left: client_closed on the attempt (streamed and not) and on what the client got', async () => {
    receiver = await otlpReceiver();
    stack = await startStack({ env: otelEnv(receiver) });
    for (const id of [await leaveStream(stack), await leaveWaiting(stack)]) {
      const v = await ended(stack, id);
      expect(v.record.status).toBe('aborted');
      expect(v.modelWrote.map((w) => w.finish)).toEqual([['client_closed']]);
      expect(v.clientReceived.finish).toEqual(['client_closed']);
      const spans = await attemptSpans(stack, receiver, id);
      expect(reasons(spans)).toEqual([['client_closed']]);
      expect(spans[0]!.attributes['error.type']).toBe('client_aborted');
    }
  });

  it('the upstream cut its stream: error on each cut attempt, error.type saying which', async () => {
    receiver = await otlpReceiver();
    stack = await startStack({ env: otelEnv(receiver) });
    const res = await post(stack, true, { say: 'word '.repeat(50), dieAfterChunks: 10 });
    await res.text();
    const id = res.headers.get('x-request-id')!;
    const v = await ended(stack, id);
    // Cut before any answer reached the client: sent again once, cut again.
    expect(v.modelWrote.map((w) => w.finish)).toEqual([['error'], ['error']]);
    const spans = await attemptSpans(stack, receiver, id);
    expect(reasons(spans)).toEqual([['error'], ['error']]);
    expect(spans.map((a) => a.attributes['error.type'])).toEqual([
      'TP_ERR_UPSTREAM_CUT_OFF',
      'TP_ERR_UPSTREAM_CUT_OFF',
    ]);
  });

  it("toolproof's own early stop: early_stop on the attempt it cut off; the retry's own reason after it", async () => {
    receiver = await otlpReceiver();
    const runaway = `<tool_call>{"name": "get_weather", "arguments": {"city": "${'y'.repeat(20_000)}`;
    stack = await startStack({
      env: otelEnv(receiver),
      sim: {
        scenario: [{ raw: runaway }, { call: [{ name: 'get_weather', arguments: { city: 'Paris' } }] }],
      },
      file: { defaults: { maxHeldBytes: 2048 } },
    });
    const res = await fetch(`${stack.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body(true)),
    });
    await res.text();
    const id = res.headers.get('x-request-id')!;
    const v = await ended(stack, id);
    expect(v.modelWrote.map((w) => w.finish)).toEqual([['early_stop'], ['tool_calls']]);
    expect(v.clientReceived.finish).toEqual(['tool_calls']);
    const spans = await attemptSpans(stack, receiver, id);
    expect(reasons(spans)).toEqual([['early_stop'], ['tool_calls']]);
  });

  it('an answer that ended by itself: the upstream’s own reasons, and the client’s', async () => {
    stack = await startStack({ sim: { scenario: 'prose' } });
    for (const stream of [true, false]) {
      const res = await post(stack, stream, { say: 'Sunny.' });
      await res.text();
      const v = await ended(stack, res.headers.get('x-request-id')!);
      // Forced to a tool: the model's prose came back through the final answer.
      expect(v.modelWrote.map((w) => w.finish)).toEqual([['tool_calls']]);
      expect(v.clientReceived.finish).toEqual(['stop']);
    }
  });
});

describe("each attempt's trace and span ids, in the API and on the page", () => {
  it('tracing on: the ids of the exported attempt spans; sampled out or tracing off: none', async () => {
    receiver = await otlpReceiver();
    stack = await startStack({ env: otelEnv(receiver) });
    const res = await post(stack, false, [{ say: 'It is sunny.' }]);
    await res.text();
    const id = res.headers.get('x-request-id')!;
    const v = await ended(stack, id);
    const spans = await attemptSpans(stack, receiver, id);
    expect(v.traces).toEqual(spans.map((s) => ({ traceId: s.traceId, spanId: s.spanId })));
    await stack.close();
    await receiver.close();

    receiver = await otlpReceiver();
    stack = await startStack({ env: otelEnv(receiver, { OTEL_TRACES_SAMPLER: 'always_off' }) });
    const out = await post(stack, false, { say: 'x' });
    await out.text();
    expect((await ended(stack, out.headers.get('x-request-id')!)).traces).toEqual([null]);
    await stack.close();

    stack = await startStack();
    // The client's own traceparent goes upstream as it came: no span of toolproof's to name.
    const off = await fetch(`${stack.url}/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      },
      body: JSON.stringify(body(false)),
    });
    await off.text();
    expect((await ended(stack, off.headers.get('x-request-id')!)).traces).toEqual([null]);
  });

  it.skipIf(!chromiumAvailable)('the page shows them, copyable, and how each answer ended', async () => {
    receiver = await otlpReceiver();
    stack = await startStack({ env: otelEnv(receiver) });
    const id = await leaveStream(stack);
    const v = await ended(stack, id);
    const trace = v.traces[0]!;
    expect(trace).not.toBeNull();
    const { page, close } = await openPage();
    try {
      await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: stack.origin });
      await page.goto(`${stack.origin}/inspect#/r/${encodeURIComponent(id)}`);
      await page.waitForSelector('#request-trace');
      expect(await page.textContent('#request-trace .trace-id')).toBe(trace.traceId);
      const attempt = page.locator('section.attempt[data-attempt="1"]');
      expect(await attempt.locator('.trace-id').textContent()).toBe(trace.traceId);
      expect(await attempt.locator('.span-id').textContent()).toBe(trace.spanId);
      // By keyboard: the span id's copy button, focused and pressed.
      await attempt.getByRole('button', { name: 'copy span id' }).focus();
      await page.keyboard.press('Enter');
      expect(await clipboard(page)).toBe(trace.spanId);
      expect(await page.textContent('#model-wrote .finish')).toContain('client_closed');
      expect(await page.textContent('#client-received .finish')).toContain('client_closed');
    } finally {
      await close();
    }
  });
});

const clipboard = (page: Page) => page.evaluate<string>('navigator.clipboard.readText()');
