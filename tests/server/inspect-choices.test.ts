/**
 * A request of `n` choices on llama-server (which answers one a request) is asked one request per
 * choice (server/chat/pipeline.ts); the inspector's view and the trace say which attempt served
 * which choice, and what the client received as each choice, not the choices run together.
 * Through the real server, the openai SDK and the loopback OTLP receiver.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Reassembled } from '../../server/capture/reassemble.js';
import type { TurnAction } from '../../simulator/types.js';
import { otlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';
import { collectStream, type Stack, startStack, weatherTool } from './stack.js';

let stack: Stack;
let receiver: OtlpReceiver;
beforeAll(async () => {
  receiver = await otlpReceiver();
  stack = await startStack({
    sim: { personality: 'llama-server' },
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.origin, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' },
  });
});
afterAll(async () => {
  await stack.close();
  await receiver.close();
});

const messages = [{ role: 'user' as const, content: 'What is the weather in Paris?' }];
const leaked = { raw: '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>' };
const invalid = { call: [{ name: 'get_weather', arguments: { days: 2 } }] }; // no city: re-asked
const valid = { call: [{ name: 'get_weather', arguments: { city: 'Rome' } }] };

function inTurn(actions: TurnAction[]): void {
  let k = 0;
  stack.sim.setScenario(() => actions[Math.min(k++, actions.length - 1)]!);
}

interface View {
  record: {
    kinds: string[];
    decisions: Array<{ kind: string; reason: string }>;
    upstreamAttempts: unknown[];
  };
  modelWrote: Reassembled[];
  clientReceived: Reassembled;
  attemptChoice: Array<number | null>;
}

async function view(id: string): Promise<View> {
  return (await (await fetch(`${stack.origin}/inspect/api/requests/${id}`)).json()) as View;
}

/** The request's spans once its server span has arrived. */
async function spansOf(id: string): Promise<{ server: ReceivedSpan; attempts: ReceivedSpan[] }> {
  const find = () => receiver.spans.find((s) => s.kind === 2 && s.attributes['toolproof.request_id'] === id);
  for (let i = 0; i < 100 && !find(); i++) {
    await stack.app.toolproof.tracing!.flush();
    if (!find()) await new Promise((ok) => setTimeout(ok, 20));
  }
  const server = find()!;
  const attempts = receiver.spans.filter((s) => s.parentSpanId === server.spanId && s.kind === 3);
  return { server, attempts };
}

const brief = (r: Reassembled) => ({
  content: r.content,
  calls: r.calls.map((c) => JSON.parse(c.arguments)),
});

describe('n choices asked one request each, in the inspector and the trace', () => {
  it('non-streamed: each attempt names its choice; each choice as the client received it', async () => {
    inTurn([leaked, invalid, valid, { say: 'It is sunny.' }]);
    const res = await stack.client.chat.completions
      .create({ model: 'sim', n: 3, messages, tools: [weatherTool] })
      .withResponse();
    const id = res.response.headers.get('x-request-id')!;
    const v = await view(id);
    // attempt 1 asked all three (refused), 2 served choice 0, 3-4 choice 1 (a retry), 5 choice 2
    expect(v.attemptChoice).toEqual([null, 0, 1, 1, 2]);
    expect(v.record.decisions.filter((d) => d.kind === 'choice-asked').map((d) => d.reason)).toEqual([
      'choice 0 (of 3: indexes 0-2) asked by a request of its own, from attempt 2',
      'choice 1 (of 3: indexes 0-2) asked by a request of its own, from attempt 3',
      'choice 2 (of 3: indexes 0-2) asked by a request of its own, from attempt 5',
    ]);
    // what the client received, choice by choice (all three run together would read as one answer)
    expect(v.clientReceived.choices?.map(brief)).toEqual([
      { content: '', calls: [{ city: 'Paris' }] },
      { content: '', calls: [{ city: 'Rome' }] },
      { content: 'It is sunny.', calls: [] },
    ]);
    expect(res.data.choices.map((c) => c.message.content ?? '')).toEqual(
      v.clientReceived.choices?.map((c) => c.content),
    );

    // one attempt span per upstream request, the choices as events on the request's span
    const { server, attempts } = await spansOf(id);
    expect(attempts.map((a) => a.attributes['toolproof.attempt'])).toEqual([1, 2, 3, 4, 5]);
    expect(
      server.events
        .filter((e) => e.name === 'toolproof.choice')
        .map((e) => [e.attributes['toolproof.choice.index'], e.attributes['toolproof.attempt']]),
    ).toEqual([
      [0, 2],
      [1, 3],
      [2, 5],
    ]);
    expect(server.events.some((e) => e.name === 'toolproof.choices_refused')).toBe(true);
  });

  it('streamed, the refusal remembered: choice 0 from attempt 1, each choice on its own', async () => {
    inTurn([{ say: 'Sunny.' }, valid]);
    const res = await stack.client.chat.completions
      .create({ model: 'sim', n: 2, messages, tools: [weatherTool], stream: true })
      .withResponse();
    await collectStream(res.data);
    const v = await view(res.response.headers.get('x-request-id')!);
    expect(v.attemptChoice).toEqual([0, 1]);
    // choice 0 came through final_answer: so did the request, whatever the last choice was
    expect(v.record.kinds).toEqual(['final_answer']);
    expect(v.clientReceived.choices?.map(brief)).toEqual([
      { content: 'Sunny.', calls: [] },
      { content: '', calls: [{ city: 'Rome' }] },
    ]);
    // each attempt's own answer is one choice (index 0 upstream): not split
    expect(v.modelWrote.every((m) => m.choices === undefined)).toBe(true);
  });

  it("a choice returned invalid after its retry marks the request failed, though a later choice's retry fixed it", async () => {
    inTurn([invalid, invalid, invalid, valid]);
    const res = await stack.client.chat.completions
      .create({ model: 'sim', n: 2, messages, tools: [weatherTool] })
      .withResponse();
    const v = await view(res.response.headers.get('x-request-id')!);
    expect(v.attemptChoice).toEqual([0, 0, 1, 1]); // each choice re-asked once
    expect(v.clientReceived.choices?.map(brief)).toEqual([
      { content: '', calls: [{ days: 2 }] }, // choice 0: still invalid, as received
      { content: '', calls: [{ city: 'Rome' }] },
    ]);
    expect(v.record.kinds).toEqual(['failed', 'retried']);
  });
});
