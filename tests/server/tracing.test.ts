/**
 * OpenTelemetry tracing (server/tracing/, docs/tracing.md) through the real server on loopback,
 * exporting to a loopback OTLP/HTTP receiver: one trace from the client's traceparent through
 * toolproof's server span and each upstream attempt's client span, the traceparent sent
 * upstream naming the attempt, GenAI attributes, the harness's decisions as events, and the
 * server span ending with the stream. Configured through loadConfig's env (process.env untouched).
 */
import { afterEach, describe, expect, it, type MockInstance, vi } from 'vitest';
import { otlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';
import { chunkEvent, fakeUpstream, type FakeUpstream } from '../support/harness.js';
import { type Stack, startStack, waitFor, weatherTool } from './stack.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';
const TRACEPARENT = `00-${TRACE_ID}-${CLIENT_SPAN}-01`;

let stack: Stack | undefined;
let receiver: OtlpReceiver | undefined;
let upstream: FakeUpstream | undefined;
afterEach(async () => {
  await stack?.close();
  await receiver?.close();
  await upstream?.close();
  stack = receiver = upstream = undefined;
});

function otelEnv(r: OtlpReceiver, more: Record<string, string> = {}): Record<string, string> {
  return { OTEL_EXPORTER_OTLP_ENDPOINT: r.origin, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', ...more };
}

/** Flushes the app's spans until the request's server span has arrived. */
async function serverSpan(s: Stack, r: OtlpReceiver, traceId = TRACE_ID): Promise<ReceivedSpan> {
  const find = () => r.spans.find((x) => x.traceId === traceId && x.kind === 2);
  for (let i = 0; i < 100 && !find(); i++) {
    await s.app.toolproof.tracing!.flush();
    if (!find()) await new Promise((ok) => setTimeout(ok, 20));
  }
  const span = find();
  if (!span) throw new Error('no server span exported');
  return span;
}

const attempts = (r: OtlpReceiver, server: ReceivedSpan) =>
  r.spans
    .filter((x) => x.parentSpanId === server.spanId && x.kind === 3)
    .sort(
      (a, b) => (a.attributes['toolproof.attempt'] as number) - (b.attributes['toolproof.attempt'] as number),
    );
const chatRequests = (s: Stack) => s.sim.requests.filter((q) => q.path.endsWith('/chat/completions'));
const eventNames = (span: ReceivedSpan) => span.events.map((e) => e.name);

async function post(
  s: Stack,
  body: unknown,
  headers: Record<string, string> = {},
  signal?: AbortSignal,
): Promise<Response> {
  return fetch(`${s.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', traceparent: TRACEPARENT, ...headers },
    body: JSON.stringify(body),
    signal,
  });
}

describe('tracing on (OTEL_EXPORTER_OTLP_ENDPOINT)', () => {
  it('a streamed leak: one trace id from the client through the server span and its attempt span', async () => {
    receiver = await otlpReceiver();
    stack = await startStack({
      sim: { scenario: 'leak-hermes', ignoreRequired: true },
      env: otelEnv(receiver),
    });
    const res = await post(stack, {
      model: 'sim',
      messages: [{ role: 'user', content: 'weather in Paris?' }],
      tools: [weatherTool],
      stream: true,
    });
    expect(res.status).toBe(200);
    const reqId = res.headers.get('x-request-id');
    await res.text();
    const server = await serverSpan(stack, receiver);
    expect(server.parentSpanId).toBe(CLIENT_SPAN);
    expect(server.name).toBe('POST /v1/chat/completions');
    expect(server.attributes).toMatchObject({
      'toolproof.request.model': 'sim',
      'http.response.status_code': 200,
      'toolproof.request_id': reqId,
      'toolproof.attempts': 1,
      // Required on an HTTP server span, with the method and the path.
      'http.request.method': 'POST',
      'url.path': '/v1/chat/completions',
      'url.scheme': 'http',
      'toolproof.stream': true,
    });
    // An HTTP server span: the GenAI conventions' attributes are the attempts' (below).
    expect(Object.keys(server.attributes).filter((k) => k.startsWith('gen_ai.'))).toEqual([]);
    expect(server.attributes['toolproof.usage.input_tokens']).toBeGreaterThan(0);
    expect(server.attributes['toolproof.usage.output_tokens']).toBeGreaterThan(0);
    const leak = server.events.find((e) => e.name === 'toolproof.leak');
    expect(leak?.attributes).toMatchObject({ 'toolproof.leak.format': 'hermes', 'toolproof.attempt': 1 });
    const [attempt, ...more] = attempts(receiver, server);
    expect(more).toHaveLength(0);
    expect(attempt!.traceId).toBe(TRACE_ID);
    expect(attempt!.name).toBe('chat sim');
    expect(attempt!.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'sim',
      'gen_ai.provider.name': 'openai',
      'server.address': '127.0.0.1',
      'http.response.status_code': 200,
      'gen_ai.request.stream': true,
    });
    expect(attempt!.attributes['gen_ai.response.finish_reasons']).toEqual(['stop']);
    // The provider by its current name only: gen_ai.system is deprecated for it.
    expect(attempt!.attributes['gen_ai.system']).toBeUndefined();
    expect(server.attributes['gen_ai.system']).toBeUndefined();
    expect(attempt!.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
    expect(attempt!.attributes['gen_ai.input.messages']).toBeUndefined(); // no content without the opt-in
    // The upstream got the attempt's traceparent, not the client's.
    expect(chatRequests(stack)[0]!.headers.traceparent).toBe(`00-${TRACE_ID}-${attempt!.spanId}-01`);
    // Every span of the trace ended within the server span.
    expect(attempt!.endNs).toBeLessThanOrEqual(server.endNs);
  });

  it('a forced final answer: said once (attribute or event), and the server span under 20 attributes', async () => {
    receiver = await otlpReceiver();
    stack = await startStack({ sim: { scenario: 'prose' }, env: otelEnv(receiver) });
    const res = await post(stack, {
      model: 'sim',
      messages: [{ role: 'user', content: 'hi' }],
      tools: [weatherTool],
      stream: true,
    });
    expect(res.status).toBe(200);
    await res.text();
    const server = await serverSpan(stack, receiver);
    expect(server.attributes).toMatchObject({
      'toolproof.tool_choice': 'required',
      'toolproof.final_kind': 'final_answer',
    });
    expect(eventNames(server)).toEqual(
      expect.arrayContaining(['toolproof.forced', 'toolproof.final_answer']),
    );
    // What the events and the attempt span say is not repeated on the server span.
    for (const name of ['toolproof.forced', 'toolproof.final_answer', 'gen_ai.response.model'])
      expect(server.attributes[name]).toBeUndefined();
    const [attempt] = attempts(receiver, server);
    expect(attempt!.attributes['gen_ai.response.model']).toBeTypeOf('string');
    // Every attribute is paid for in each export: the server span stays small (bench/README.md,
    // tracing).
    expect(Object.keys(server.attributes).length).toBeLessThanOrEqual(19);
  });

  it('a backend rejecting "required": the failed attempt, the fallback event, the second attempt', async () => {
    receiver = await otlpReceiver();
    stack = await startStack({ sim: { scenario: 'prose', rejectRequired: true }, env: otelEnv(receiver) });
    const res = await post(stack, {
      model: 'sim',
      messages: [{ role: 'user', content: 'hi' }],
      tools: [weatherTool],
    });
    expect(res.status).toBe(200);
    await res.text();
    const server = await serverSpan(stack, receiver);
    expect(eventNames(server)).toContain('toolproof.fallback');
    // The attempt it came from and the policy that decided, as every event carries
    // (docs/tracing.md): the rejected first one, and the policy whose "required" it rejected.
    expect(server.events.find((e) => e.name === 'toolproof.fallback')?.attributes).toMatchObject({
      'toolproof.policy': 'force-tool-use',
      'toolproof.attempt': 1,
      'toolproof.upstream': expect.any(String),
      'http.response.status_code': 400,
    });
    expect(server.attributes).toMatchObject({ 'toolproof.fallback': true, 'toolproof.attempts': 2 });
    // Not streamed: the flag is absent (as the conventions' "If unset, the request is assumed to be non-streaming").
    expect(server.attributes['toolproof.stream']).toBeUndefined();
    const [first, second] = attempts(receiver, server);
    expect(first!.attributes['gen_ai.request.stream']).toBeUndefined();
    expect(first!.attributes).toMatchObject({ 'toolproof.tool_choice': 'required', 'error.type': '400' });
    expect(first!.status.code).toBe(2); // ERROR
    expect(second!.attributes).toMatchObject({
      'toolproof.tool_choice': 'auto',
      'http.response.status_code': 200,
    });
    expect(second!.status.code ?? 0).not.toBe(2);
    const sent = chatRequests(stack).map((q) => q.headers.traceparent);
    expect(sent).toEqual([`00-${TRACE_ID}-${first!.spanId}-01`, `00-${TRACE_ID}-${second!.spanId}-01`]);
  });

  it('a schema keyword the upstream refused: the failed attempt, the event with its policy, the rewritten attempt', async () => {
    receiver = await otlpReceiver();
    stack = await startStack({
      sim: { personality: 'vllm', scenario: 'tools', guidedBackend: 'xgrammar' },
      env: otelEnv(receiver),
    });
    const tool = {
      type: 'function',
      function: {
        name: 'tag_file',
        parameters: {
          type: 'object',
          properties: { tags: { type: 'array', items: { type: 'string' }, uniqueItems: true } },
        },
      },
    };
    const res = await post(
      stack,
      {
        model: 'sim',
        messages: [{ role: 'user', content: 'tag it' }],
        tools: [tool],
        tool_choice: 'required',
      },
      { 'x-sim-scenario': JSON.stringify({ call: [{ name: 'tag_file', arguments: { tags: ['a'] } }] }) },
    );
    expect(res.status).toBe(200);
    await res.text();
    const server = await serverSpan(stack, receiver);
    const event = server.events.find((e) => e.name === 'toolproof.schema_keywords_refused');
    expect(event?.attributes).toMatchObject({
      'toolproof.policy': 'guided-schema',
      'toolproof.attempt': 1,
      'http.response.status_code': 400,
    });
    expect(eventNames(server)).not.toContain('toolproof.fallback');
    expect(server.attributes).toMatchObject({ 'toolproof.attempts': 2 });
    const [first, second] = attempts(receiver, server);
    expect(first!.attributes).toMatchObject({ 'error.type': '400' });
    expect(second!.attributes).toMatchObject({ 'http.response.status_code': 200 });
  });

  it('a stream the upstream cut before any answer went out: the cut attempt, the event, the attempt sent again', async () => {
    receiver = await otlpReceiver();
    let cuts = 1;
    stack = await startStack({
      sim: {
        scenario: () => (cuts-- > 0 ? { say: 'hello there', dieAfterChunks: 1 } : { say: 'hello there' }),
      },
      env: otelEnv(receiver),
    });
    const res = await post(stack, {
      model: 'sim',
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
      tools: [weatherTool],
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('[DONE]');
    const server = await serverSpan(stack, receiver);
    const event = server.events.find((e) => e.name === 'toolproof.resent_after_cut');
    expect(event?.attributes).toMatchObject({ 'toolproof.attempt': 1 });
    expect(eventNames(server).filter((n) => n === 'toolproof.resent_after_cut')).toHaveLength(1);
    expect(eventNames(server)).not.toContain('toolproof.retry');
    expect(server.attributes).toMatchObject({ 'toolproof.attempts': 2 });
    const [first, second] = attempts(receiver, server);
    expect(first!.attributes['error.type']).toBe('TP_ERR_UPSTREAM_CUT_OFF');
    expect(second!.status.code ?? 0).not.toBe(2);
  });

  it('a corrective retry: its cause as an event, then whether it fixed the call', async () => {
    receiver = await otlpReceiver();
    stack = await startStack({ env: otelEnv(receiver) });
    const badThenGood = JSON.stringify([
      { call: [{ name: 'get_weather', arguments: { city: 'Paris', days: 'three' } }] },
      { call: [{ name: 'get_weather', arguments: { city: 'Paris', days: 3 } }] },
    ]);
    const res = await post(
      stack,
      {
        model: 'sim',
        messages: [{ role: 'user', content: 'Paris, 3 days' }],
        tools: [weatherTool],
        stream: true,
      },
      { 'x-sim-scenario': badThenGood },
    );
    await res.text();
    const server = await serverSpan(stack, receiver);
    const retry = server.events.find((e) => e.name === 'toolproof.retry');
    expect(retry?.attributes['toolproof.retry.reason']).toEqual(expect.any(String));
    expect(eventNames(server)).toContain('toolproof.validation_failed');
    const settled = server.events.find((e) => e.name === 'toolproof.retry_settled');
    expect(settled?.attributes['toolproof.retry.outcome']).toBe('fixed');
    expect(attempts(receiver, server)).toHaveLength(2);
    expect(server.attributes['toolproof.retries']).toBe(1);
    // A GenAI backend (Langfuse, Dash0, Phoenix) sums gen_ai.usage.* over a trace's spans: the
    // attempts' tokens, each counted once. The server span's total (its attempts' sum) went under
    // the same names, and every token of a request was counted twice.
    const upstreamTokens = stack.sim.requests
      .filter((q) => q.path.endsWith('/chat/completions'))
      .reduce((n, q) => n + (q.promptTokens ?? 0), 0);
    const sum = (key: string) =>
      receiver!.spans
        .filter((x) => x.traceId === TRACE_ID)
        .reduce((n, x) => n + ((x.attributes[key] as number | undefined) ?? 0), 0);
    expect(upstreamTokens).toBeGreaterThan(0);
    expect(sum('gen_ai.usage.input_tokens')).toBe(upstreamTokens);
    expect(server.attributes['gen_ai.usage.input_tokens']).toBeUndefined();
    // The request's total stays on its server span, under toolproof's own names.
    expect(server.attributes['toolproof.usage.input_tokens']).toBe(upstreamTokens);
    expect(server.attributes['toolproof.usage.output_tokens']).toBe(sum('gen_ai.usage.output_tokens'));
  });

  it('a request the sampler leaves out: no span, and the upstream is told it is not sampled', async () => {
    receiver = await otlpReceiver();
    stack = await startStack({ env: otelEnv(receiver, { OTEL_TRACES_SAMPLER: 'always_off' }) });
    const res = await post(stack, {
      model: 'sim',
      messages: [{ role: 'user', content: 'hi' }],
      tools: [weatherTool],
    });
    expect(res.status).toBe(200);
    await res.text();
    await stack.app.toolproof.tracing!.flush();
    expect(receiver.spans).toHaveLength(0);
    expect(String(chatRequests(stack)[0]!.headers.traceparent)).toMatch(
      new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-00$`),
    );
  });

  it("a request left out by the sampler: the upstream gets the client's ids with flags 00, the client's own header when it says so", async () => {
    receiver = await otlpReceiver();
    upstream = await fakeUpstream();
    stack = await startStack({
      env: {
        TOOLPROOF_UPSTREAM_URL: upstream.url,
        ...otelEnv(receiver, { OTEL_TRACES_SAMPLER: 'always_off' }),
      },
    });
    const chat = (headers: Record<string, string>) =>
      fetch(`${stack!.url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({
          model: 'm1',
          messages: [{ role: 'user', content: 'hi' }],
          tools: [weatherTool],
        }),
      }).then((r) => r.text());
    const sent = () => upstream!.requests.at(-1)!.headers;
    // Sampled by the client, left out here: the client's trace and span ids, not sampled.
    await chat({ traceparent: TRACEPARENT, tracestate: 'vendor=1' });
    expect([sent().traceparent, sent().tracestate]).toEqual([`00-${TRACE_ID}-${CLIENT_SPAN}-00`, 'vendor=1']);
    // Already not sampled: as the client sent it.
    await chat({ traceparent: `00-${TRACE_ID}-${CLIENT_SPAN}-00` });
    expect([sent().traceparent, sent().tracestate]).toEqual([`00-${TRACE_ID}-${CLIENT_SPAN}-00`, undefined]);
    // No traceparent: a trace of its own, not sampled.
    await chat({});
    expect(sent().traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
    expect(sent().traceparent).not.toContain(TRACE_ID);
    // A relayed route too.
    const res = await fetch(`${stack.url}/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: TRACEPARENT },
      body: JSON.stringify({ model: 'm1', input: 'hi' }),
    });
    await res.text();
    expect(sent().traceparent).toBe(`00-${TRACE_ID}-${CLIENT_SPAN}-00`);
    await stack.app.toolproof.tracing!.flush();
    expect(receiver.spans).toHaveLength(0);
  });

  it('a history repair is an event, with what was repaired', async () => {
    receiver = await otlpReceiver();
    stack = await startStack({ env: otelEnv(receiver) });
    const res = await post(stack, {
      model: 'sim',
      tools: [weatherTool],
      messages: [
        { role: 'user', content: 'weather in Paris?' },
        // A call without "type": history repair adds it.
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '{"temp_c": 18}' },
      ],
    });
    expect(res.status).toBe(200);
    await res.text();
    const server = await serverSpan(stack, receiver);
    const repair = server.events.find((e) => e.name === 'toolproof.history_repair');
    expect(repair?.attributes).toMatchObject({ 'toolproof.kind': 'missing-type', 'toolproof.count': 1 });
  });

  it('content only under OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true', async () => {
    receiver = await otlpReceiver();
    stack = await startStack({
      sim: { scenario: 'leak-hermes', ignoreRequired: true },
      env: otelEnv(receiver, { OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true' }),
    });
    const res = await post(stack, {
      model: 'sim',
      messages: [{ role: 'user', content: 'weather in Paris?' }],
      tools: [weatherTool],
      stream: true,
    });
    await res.text();
    const server = await serverSpan(stack, receiver);
    // The client's messages on the server span, under toolproof's name (not a GenAI span); the
    // messages as sent on the attempt, under the conventions'.
    const input = JSON.parse(server.attributes['toolproof.input.messages'] as string);
    expect(input).toEqual([{ role: 'user', parts: [{ type: 'text', content: 'weather in Paris?' }] }]);
    expect(server.attributes['gen_ai.input.messages']).toBeUndefined();
    const [attempt] = attempts(receiver, server);
    expect(JSON.parse(attempt!.attributes['gen_ai.input.messages'] as string)[0]).toEqual(input[0]);
    const output = JSON.parse(attempt!.attributes['gen_ai.output.messages'] as string) as Array<{
      parts: Array<{ type: string; content?: string }>;
    }>;
    // What the model wrote, the leaked call's text included (the client got a tool call).
    expect(output[0]!.parts.map((p) => p.content ?? '').join('')).toContain('<tool_call>');
    // The tools offered, by type and name (the conventions' gen_ai.tool.definitions): the
    // client's, and the final_answer tool toolproof adds when it forces.
    const tools = JSON.parse(attempt!.attributes['gen_ai.tool.definitions'] as string) as unknown[];
    expect(tools).toContainEqual({ type: 'function', name: 'get_weather' });
    expect(server.attributes['gen_ai.tool.definitions']).toBeUndefined();
  });

  it('the server span ends when the stream ends, not before', async () => {
    receiver = await otlpReceiver();
    let release: () => void = () => undefined;
    upstream = await fakeUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(chunkEvent({ role: 'assistant', content: 'Hel' }));
      release = () => res.end(`${chunkEvent({ content: 'lo' }, 'stop')}data: [DONE]\n\n`);
    });
    stack = await startStack({ env: { TOOLPROOF_UPSTREAM_URL: upstream.url, ...otelEnv(receiver) } });
    const res = await post(stack, { model: 'm1', messages: [{ role: 'user', content: 'hi' }], stream: true });
    const reader = res.body!.getReader();
    await reader.read(); // the first chunk went out: the stream is open
    await stack.app.toolproof.tracing!.flush();
    expect(receiver.spans.filter((s) => s.traceId === TRACE_ID)).toHaveLength(0);
    const releasedAt = BigInt(Date.now()) * 1_000_000n;
    release();
    while (!(await reader.read()).done);
    const server = await serverSpan(stack, receiver);
    expect(server.endNs).toBeGreaterThanOrEqual(releasedAt - 5_000_000n);
    const [attempt] = attempts(receiver, server);
    expect(attempt!.endNs).toBeGreaterThanOrEqual(releasedAt - 5_000_000n);
    expect(upstream.requests[0]!.headers.traceparent).toBe(`00-${TRACE_ID}-${attempt!.spanId}-01`);
  });

  it('a streamed attempt says its time to first chunk (gen_ai.response.time_to_first_chunk, seconds)', async () => {
    // The GenAI conventions' inference span: recommended on a streaming request, a double in
    // seconds from the request to the stream's first chunk. Here the headers come at once and
    // the first event ~300 ms later (a backend's prefill): the headers' time is not the answer's.
    receiver = await otlpReceiver();
    upstream = await fakeUpstream((req, res) => {
      if (!req.body.toString().includes('"stream":true')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id: 'c2',
            object: 'chat.completion',
            created: 1,
            model: 'm1',
            choices: [{ index: 0, message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' }],
          }),
        );
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
      setTimeout(() => {
        res.write(chunkEvent({ role: 'assistant', content: 'Hel' }));
        res.end(`${chunkEvent({ content: 'lo' }, 'stop')}data: [DONE]\n\n`);
      }, 300);
    });
    stack = await startStack({ env: { TOOLPROOF_UPSTREAM_URL: upstream.url, ...otelEnv(receiver) } });
    // With tools (read through the policies' stream chain) and without (relayed as it came).
    for (const [i, more] of [
      [2, { tools: [weatherTool] }],
      [3, {}],
    ] as const) {
      const traceId = String(i).repeat(32);
      const res = await post(
        stack,
        { model: 'm1', messages: [{ role: 'user', content: 'hi' }], stream: true, ...more },
        { traceparent: `00-${traceId}-${CLIENT_SPAN}-01` },
      );
      await res.text();
      const [attempt] = attempts(receiver, await serverSpan(stack, receiver, traceId));
      const ttfc = attempt!.attributes['gen_ai.response.time_to_first_chunk'] as number;
      expect(typeof ttfc).toBe('number');
      expect(ttfc).toBeGreaterThanOrEqual(0.25);
      expect(ttfc * 1e9).toBeLessThanOrEqual(Number(attempt!.endNs - attempt!.startNs));
      expect(attempt!.attributes['toolproof.upstream.headers_ms'] as number).toBeLessThan(ttfc * 1000);
    }
    // Not streamed: no chunk, no attribute (the conventions: only on a streaming request).
    const whole = await post(
      stack,
      { model: 'm1', messages: [{ role: 'user', content: 'hi' }] },
      {
        traceparent: `00-${'1'.repeat(32)}-${CLIENT_SPAN}-01`,
      },
    );
    expect(whole.status).toBe(200);
    await whole.text();
    const second = await serverSpan(stack, receiver, '1'.repeat(32));
    expect(attempts(receiver, second)[0]!.attributes).not.toHaveProperty(
      'gen_ai.response.time_to_first_chunk',
    );
  });

  it("an attempt's tokens as the conventions name them: cached and reasoning ones too", async () => {
    receiver = await otlpReceiver();
    upstream = await fakeUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'c4',
          object: 'chat.completion',
          created: 1,
          model: 'm1',
          choices: [{ index: 0, message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' }],
          usage: {
            prompt_tokens: 10,
            completion_tokens: 30,
            total_tokens: 40,
            prompt_tokens_details: { cached_tokens: 4 },
            completion_tokens_details: { reasoning_tokens: 20 },
          },
        }),
      );
    });
    stack = await startStack({ env: { TOOLPROOF_UPSTREAM_URL: upstream.url, ...otelEnv(receiver) } });
    const res = await post(stack, {
      model: 'm1',
      messages: [{ role: 'user', content: 'hi' }],
      tools: [weatherTool],
      tool_choice: 'auto',
    });
    expect(res.status).toBe(200);
    await res.text();
    const server = await serverSpan(stack, receiver);
    const [attempt] = attempts(receiver, server);
    expect(attempt!.attributes).toMatchObject({
      'gen_ai.usage.input_tokens': 10,
      'gen_ai.usage.output_tokens': 30,
      'gen_ai.usage.cache_read.input_tokens': 4,
      'gen_ai.usage.reasoning.output_tokens': 20,
    });
    // Not repeated on the server span (a GenAI backend sums a trace's gen_ai.usage.*).
    expect(Object.keys(server.attributes).filter((k) => k.startsWith('gen_ai.'))).toEqual([]);
  });

  it('a client that leaves mid-stream: the spans end, marked as aborted', async () => {
    receiver = await otlpReceiver();
    upstream = await fakeUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(chunkEvent({ role: 'assistant', content: 'Hel' }));
      // never ends: the client leaves first
    });
    stack = await startStack({ env: { TOOLPROOF_UPSTREAM_URL: upstream.url, ...otelEnv(receiver) } });
    const res = await post(stack, { model: 'm1', messages: [{ role: 'user', content: 'hi' }], stream: true });
    const reader = res.body!.getReader();
    await reader.read();
    await reader.cancel();
    const server = await serverSpan(stack, receiver);
    expect(server.attributes['error.type']).toBe('client_aborted');
    expect(server.status.code).toBe(2);
    const [attempt] = attempts(receiver, server);
    expect(attempt!.attributes['error.type']).toBe('client_aborted');
  });

  it('a corrective retry, then the client leaves during the second attempt: both attempts in the trace, each ended', async () => {
    receiver = await otlpReceiver();
    upstream = await fakeUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (upstream!.requests.length === 1) {
        // A call whose arguments fail the schema (days: a string): toolproof asks again.
        const call = { city: 'Paris', days: 'three' };
        res.end(
          chunkEvent({
            role: 'assistant',
            tool_calls: [
              {
                index: 0,
                id: 'call_1',
                type: 'function',
                function: { name: 'get_weather', arguments: JSON.stringify(call) },
              },
            ],
          }) +
            chunkEvent({}, 'tool_calls') +
            'data: [DONE]\n\n',
        );
        return;
      }
      res.write(chunkEvent({ role: 'assistant', content: '' }));
      // never ends: the client leaves first
    });
    stack = await startStack({ env: { TOOLPROOF_UPSTREAM_URL: upstream.url, ...otelEnv(receiver) } });
    const aborter = new AbortController();
    const res = post(
      stack,
      {
        model: 'm1',
        messages: [{ role: 'user', content: 'Paris, 3 days' }],
        tools: [weatherTool],
        stream: true,
      },
      {},
      aborter.signal,
    );
    await waitFor(() => upstream!.requests.length === 2);
    await new Promise((r) => setTimeout(r, 50));
    aborter.abort();
    await res.then((r) => r.text()).catch(() => undefined);
    const server = await serverSpan(stack, receiver);
    expect(server.attributes['error.type']).toBe('client_aborted');
    expect(eventNames(server)).toEqual(
      expect.arrayContaining(['toolproof.retry', 'toolproof.client_aborted']),
    );
    let both = attempts(receiver, server);
    for (let i = 0; i < 100 && both.length < 2; i++) {
      await stack.app.toolproof.tracing!.flush();
      await new Promise((r) => setTimeout(r, 20));
      both = attempts(receiver, server);
    }
    expect(both.map((a) => a.attributes['toolproof.attempt'])).toEqual([1, 2]);
    expect(both[0]!.attributes['error.type']).toBeUndefined();
    expect(both[1]!.attributes['error.type']).toBe('client_aborted');
    // One trace; each upstream request named its own attempt span.
    for (let i = 0; i < 2; i++) {
      expect(both[i]!.traceId).toBe(TRACE_ID);
      expect(String(upstream.requests[i]!.headers.traceparent)).toBe(`00-${TRACE_ID}-${both[i]!.spanId}-01`);
    }
  });

  /**
   * Every span of a request's trace, flushed until `count` of them arrived (its server span and
   * attempts): an attempt span ends before its server span, but may be exported after it.
   */
  async function traceSpans(s: Stack, r: OtlpReceiver, count: number): Promise<ReceivedSpan[]> {
    const mine = () => r.spans.filter((x) => x.traceId === TRACE_ID);
    for (let i = 0; i < 100 && mine().length < count; i++) {
      await s.app.toolproof.tracing!.flush();
      if (mine().length < count) await new Promise((ok) => setTimeout(ok, 20));
    }
    return mine();
  }

  // The Messages and Responses doors (Claude Code's streamed turn, a Responses `background`
  // request): their spans end with the stream, or when the client leaves, each with a status.
  const doors = [
    {
      name: 'a Messages stream',
      path: '/v1/messages',
      body: { model: 'm1', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }], stream: true },
      done: 'message_stop',
    },
    {
      name: 'a Responses background stream',
      path: '/v1/responses',
      body: { model: 'm1', input: 'hi', background: true, stream: true },
      done: 'response.completed',
    },
  ] as const;

  for (const door of doors) {
    it(`${door.name}: the spans end when the stream ends, not before`, async () => {
      receiver = await otlpReceiver();
      let release: () => void = () => undefined;
      upstream = await fakeUpstream((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(chunkEvent({ role: 'assistant', content: 'Hel' }));
        release = () => res.end(`${chunkEvent({ content: 'lo' }, 'stop')}data: [DONE]\n\n`);
      });
      stack = await startStack({ env: { TOOLPROOF_UPSTREAM_URL: upstream.url, ...otelEnv(receiver) } });
      const res = await fetch(`${stack.origin}${door.path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', traceparent: TRACEPARENT },
        body: JSON.stringify(door.body),
      });
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let text = '';
      while (!text.includes('Hel')) text += decoder.decode((await reader.read()).value, { stream: true });
      await stack.app.toolproof.tracing!.flush();
      expect(receiver.spans.filter((x) => x.traceId === TRACE_ID)).toHaveLength(0);
      const releasedAt = BigInt(Date.now()) * 1_000_000n;
      release();
      for (let r = await reader.read(); !r.done; r = await reader.read()) text += decoder.decode(r.value);
      expect(text).toContain(door.done);
      const spans = await traceSpans(stack, receiver, 2);
      const server = spans.find((x) => x.kind === 2)!;
      const [attempt] = attempts(receiver, server);
      expect(attempt).toBeDefined();
      for (const span of [server, attempt!]) {
        expect(span.endNs).toBeGreaterThanOrEqual(releasedAt - 5_000_000n);
        expect(span.status.code ?? 0).not.toBe(2);
        expect(span.attributes['error.type']).toBeUndefined();
      }
      expect(server.endNs).toBeGreaterThanOrEqual(attempt!.endNs);
      expect(upstream.requests[0]!.headers.traceparent).toBe(`00-${TRACE_ID}-${attempt!.spanId}-01`);
    });

    it(`${door.name}: a client that leaves mid-stream ends every span, each with an error status`, async () => {
      receiver = await otlpReceiver();
      upstream = await fakeUpstream((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(chunkEvent({ role: 'assistant', content: 'Hel' }));
        // never ends: the client leaves first
      });
      stack = await startStack({ env: { TOOLPROOF_UPSTREAM_URL: upstream.url, ...otelEnv(receiver) } });
      const res = await fetch(`${stack.origin}${door.path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', traceparent: TRACEPARENT },
        body: JSON.stringify(door.body),
      });
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let text = '';
      while (!text.includes('Hel')) text += decoder.decode((await reader.read()).value, { stream: true });
      const leftAt = BigInt(Date.now()) * 1_000_000n;
      await reader.cancel();
      const spans = await traceSpans(stack, receiver, 2);
      const server = spans.find((x) => x.kind === 2);
      expect(server).toBeDefined();
      const all = [server!, ...attempts(receiver, server!)];
      expect(all).toHaveLength(2);
      for (const span of all) {
        expect(span.endNs).toBeGreaterThanOrEqual(leftAt - 5_000_000n);
        expect(span.attributes['error.type']).toBe('client_aborted');
        expect(span.status.code).toBe(2);
      }
      expect(eventNames(server!)).toContain('toolproof.client_aborted');
    });
  }

  it('a Responses background request not streamed: the client that leaves before its answer ends every span', async () => {
    receiver = await otlpReceiver();
    upstream = await fakeUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(chunkEvent({ role: 'assistant', content: 'Hel' }));
      // never ends: the client leaves first
    });
    stack = await startStack({ env: { TOOLPROOF_UPSTREAM_URL: upstream.url, ...otelEnv(receiver) } });
    const aborter = new AbortController();
    const res = fetch(`${stack.origin}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: TRACEPARENT },
      body: JSON.stringify({ model: 'm1', input: 'hi', background: true }),
      signal: aborter.signal,
    }).catch(() => undefined);
    await waitFor(() => upstream!.requests.length === 1);
    await new Promise((r) => setTimeout(r, 50));
    aborter.abort();
    await res;
    const spans = await traceSpans(stack, receiver, 2);
    const server = spans.find((x) => x.kind === 2);
    expect(server).toBeDefined();
    const all = [server!, ...attempts(receiver, server!)];
    expect(all).toHaveLength(2);
    for (const span of all) {
      expect(span.attributes['error.type']).toBe('client_aborted');
      expect(span.status.code).toBe(2);
    }
  });

  it('a request without traceparent starts its own trace; health probes and the inspector get no span', async () => {
    receiver = await otlpReceiver();
    stack = await startStack({ env: otelEnv(receiver) });
    await (await fetch(`${stack.origin}/health`)).text();
    // The inspector's page and what it polls every 1-2 s while open.
    for (const path of ['/inspect', '/inspect/inspect.js', '/inspect/api/requests', '/inspect/api/sessions'])
      expect((await fetch(`${stack.origin}${path}`)).status).toBe(200);
    const res = await fetch(`${stack.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim', messages: [{ role: 'user', content: 'hi' }] }),
    });
    await res.text();
    await waitFor(() => chatRequests(stack!).length === 1);
    const sent = String(chatRequests(stack)[0]!.headers.traceparent);
    const traceId = sent.split('-')[1]!;
    const server = await serverSpan(stack, receiver, traceId);
    expect(server.parentSpanId).toBe('');
    expect(receiver.spans.some((s) => s.attributes['http.route'] === '/health')).toBe(false);
    // Only the chat request's two spans: none of the inspector's.
    expect(
      receiver.spans.filter((s) => String(s.attributes['url.path'] ?? '').startsWith('/inspect')),
    ).toEqual([]);
    expect(receiver.spans.map((s) => s.traceId)).toEqual([traceId, traceId]);
  });
  it('relayed completions and embeddings: an HTTP server span, a GenAI client span under it with the tokens, its traceparent sent upstream', async () => {
    receiver = await otlpReceiver();
    stack = await startStack({ env: otelEnv(receiver) });
    const cases = [
      {
        path: '/completions',
        body: { model: 'sim', prompt: 'Once upon a time', max_tokens: 8 },
        op: 'text_completion',
      },
      { path: '/embeddings', body: { model: 'sim', input: 'hello there' }, op: 'embeddings' },
      {
        path: '/completions',
        body: { model: 'sim', prompt: 'Once', stream: true, stream_options: { include_usage: true } },
        op: 'text_completion',
      },
    ];
    for (const [i, c] of cases.entries()) {
      const traceId = `${TRACE_ID.slice(0, 30)}${String(i).padStart(2, '0')}`;
      const res = await fetch(`${stack.url}${c.path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', traceparent: `00-${traceId}-${CLIENT_SPAN}-01` },
        body: JSON.stringify(c.body),
      });
      expect(res.status).toBe(200);
      const reply = await res.text();
      const server = await serverSpan(stack, receiver, traceId);
      expect(server.name).toBe(`POST /v1${c.path}`);
      expect(server.parentSpanId).toBe(CLIENT_SPAN);
      // An HTTP server span: none of the GenAI names (a GenAI backend would list it as a
      // generation of its own beside the client span's); its tokens under toolproof's names.
      expect(Object.keys(server.attributes).filter((k) => k.startsWith('gen_ai.'))).toEqual([]);
      const [client, ...more] = receiver.spans.filter((x) => x.traceId === traceId && x.kind === 3);
      expect(more).toEqual([]);
      expect(client!.parentSpanId).toBe(server.spanId);
      expect(client!.name).toBe(`${c.op} sim`);
      expect(client!.attributes).toMatchObject({
        'gen_ai.operation.name': c.op,
        'gen_ai.request.model': 'sim',
        'gen_ai.provider.name': 'openai',
        'server.address': '127.0.0.1',
        'http.response.status_code': 200,
      });
      const usage = (
        c.body.stream
          ? JSON.parse(
              reply
                .split('\n')
                .filter((l) => l.includes('"usage"'))
                .at(-1)!
                .slice(6),
            )
          : JSON.parse(reply)
      ).usage as { prompt_tokens: number };
      expect(usage.prompt_tokens).toBeGreaterThan(0);
      expect(client!.attributes['gen_ai.usage.input_tokens']).toBe(usage.prompt_tokens);
      expect(server.attributes['toolproof.usage.input_tokens']).toBe(usage.prompt_tokens);
      // The backend's span nests under the client span.
      const sent = stack.sim.requests.at(-1)!;
      expect(sent.path).toBe(`/v1${c.path}`);
      expect(sent.headers.traceparent).toBe(`00-${traceId}-${client!.spanId}-01`);
    }
  });

  it('a relayed stream the upstream cuts: its client span says so', async () => {
    receiver = await otlpReceiver();
    stack = await startStack({ env: otelEnv(receiver) });
    stack.sim.setScenario(() => ({ say: 'Once upon a time there was a long story.', dieAfterChunks: 1 }));
    const res = await fetch(`${stack.url}/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: TRACEPARENT },
      body: JSON.stringify({ model: 'sim', prompt: 'Once', stream: true }),
    });
    expect(await res.text()).toContain('TP_ERR_UPSTREAM_CUT_OFF');
    const server = await serverSpan(stack, receiver);
    const client = receiver.spans.find((x) => x.traceId === TRACE_ID && x.kind === 3);
    expect(client?.parentSpanId).toBe(server.spanId);
    expect(client!.attributes['error.type']).toBe('TP_ERR_UPSTREAM_CUT_OFF');
    expect(client!.status.code).toBe(2);
  });

  it('pass-through requests: the upstream gets the server span as its parent', async () => {
    receiver = await otlpReceiver();
    upstream = await fakeUpstream();
    stack = await startStack({ env: { TOOLPROOF_UPSTREAM_URL: upstream.url, ...otelEnv(receiver) } });
    for (const path of ['/rerank']) {
      const res = await fetch(`${stack.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', traceparent: TRACEPARENT, tracestate: 'vendor=1' },
        body: JSON.stringify({ model: 'm1', input: 'hi' }),
      });
      expect(res.status).toBe(200);
      await res.text();
      const sent = upstream.requests.find((q) => q.url.endsWith(path))!;
      const find = () =>
        receiver!.spans.find((x) => x.kind === 2 && x.attributes['url.path'] === `/v1${path}`);
      await waitFor(() => {
        void stack!.app.toolproof.tracing!.flush();
        return find() !== undefined;
      });
      const server = find()!;
      expect(server.traceId).toBe(TRACE_ID);
      expect(sent.headers.traceparent).toBe(`00-${TRACE_ID}-${server.spanId}-01`);
      expect(sent.headers.tracestate).toBe('vendor=1');
    }
  });

  it('a GenAI backend lists one generation per attempt: the server span is an HTTP server span, each attempt an inference span', async () => {
    receiver = await otlpReceiver();
    stack = await startStack({ env: otelEnv(receiver) });
    const badThenGood = JSON.stringify([
      { call: [{ name: 'get_weather', arguments: { city: 'Paris', days: 'three' } }] },
      { call: [{ name: 'get_weather', arguments: { city: 'Paris', days: 3 } }] },
    ]);
    const res = await post(
      stack,
      {
        model: 'sim',
        messages: [{ role: 'user', content: 'Paris, 3 days' }],
        tools: [weatherTool],
        temperature: 0.2,
      },
      { 'x-sim-scenario': badThenGood, 'x-conversation-id': 'conv-42' },
    );
    expect(res.status).toBe(200);
    await res.text();
    const server = await serverSpan(stack, receiver);
    const trace = receiver.spans.filter((x) => x.traceId === TRACE_ID);
    // How Langfuse tells a generation from a span (its ObservationTypeMapper): the GenAI
    // operation, else any model name attribute. Each attempt is one; the server span was one too,
    // listed beside them with no tokens.
    const generations = trace.filter(
      (x) =>
        ['chat', 'completion', 'text_completion', 'generate_content'].includes(
          x.attributes['gen_ai.operation.name'] as string,
        ) ||
        x.attributes['gen_ai.request.model'] !== undefined ||
        x.attributes['gen_ai.response.model'] !== undefined,
    );
    const tried = attempts(receiver, server);
    expect(tried).toHaveLength(2);
    expect(generations.map((x) => x.spanId).sort()).toEqual(tried.map((x) => x.spanId).sort());
    // The server span says what an HTTP server span says, and toolproof's own.
    expect(server.kind).toBe(2);
    expect(Object.keys(server.attributes).filter((k) => k.startsWith('gen_ai.'))).toEqual([]);
    expect(server.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/v1/chat/completions',
      'toolproof.request.model': 'sim',
      'toolproof.retries': 1,
    });
    // Each attempt, what the conventions' inference span (gen_ai.client.inference) carries.
    for (const a of tried) {
      expect(a.kind).toBe(3);
      expect(a.name).toBe('chat sim');
      expect(a.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'sim',
        'gen_ai.request.temperature': 0.2,
        // Conditionally required when available.
        'gen_ai.conversation.id': 'conv-42',
        'server.address': '127.0.0.1',
        'server.port': expect.any(Number),
      });
      expect(a.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
      expect(a.attributes['gen_ai.response.finish_reasons']).toEqual(expect.any(Array));
    }
  });

  it("gen_ai.conversation.id: the session the agent names (its affinity header, Codex's prompt_cache_key), X-Conversation-Id first", async () => {
    // opencode and Qwen Code (through the launcher) name their session in x-session-affinity,
    // Claude Code in x-claude-code-session-id, Codex in prompt_cache_key: a GenAI backend groups
    // an agent's turns by gen_ai.conversation.id, which only X-Conversation-Id set before.
    receiver = await otlpReceiver();
    stack = await startStack({ env: otelEnv(receiver) });
    const cases: Array<[string, Record<string, string>, Record<string, unknown>, string | undefined]> = [
      ['1', { 'x-session-affinity': 'ses_opencode_7' }, {}, 'ses_opencode_7'],
      ['2', { 'x-claude-code-session-id': 'b9c1-claude' }, {}, 'b9c1-claude'],
      ['3', {}, { prompt_cache_key: 'codex-thread-3' }, 'codex-thread-3'],
      ['4', { 'x-conversation-id': 'conv-9', 'x-session-affinity': 'other' }, {}, 'conv-9'],
      // Keyed by its opening messages only: no conversation id of the client's.
      ['5', {}, {}, undefined],
      // A metadata.user_id keys the inspector's session, but names a user: no conversation id.
      ['6', {}, { metadata: { user_id: 'user-7' } }, undefined],
    ];
    for (const [digit, headers, more, expected] of cases) {
      const traceId = digit.repeat(32);
      const res = await post(
        stack,
        { model: 'sim', messages: [{ role: 'user', content: 'hi' }], tools: [weatherTool], ...more },
        { ...headers, traceparent: `00-${traceId}-${CLIENT_SPAN}-01` },
      );
      expect(res.status).toBe(200);
      await res.text();
      const server = await serverSpan(stack, receiver, traceId);
      const [attempt] = attempts(receiver, server);
      expect(attempt!.attributes['gen_ai.conversation.id'], digit).toBe(expected);
      expect(server.attributes['gen_ai.conversation.id'], digit).toBeUndefined();
    }
  });

  it("the request's settings as the GenAI conventions name them, on the attempt span (the inference span) only", async () => {
    receiver = await otlpReceiver();
    stack = await startStack({ env: otelEnv(receiver) });
    const res = await post(stack, {
      model: 'sim',
      messages: [{ role: 'user', content: 'Answer in JSON.' }],
      max_tokens: 64,
      temperature: 0.2,
      top_p: 0.9,
      top_k: 20,
      seed: 7,
      frequency_penalty: 0.5,
      presence_penalty: 0.25,
      stop: ['END', 'x'.repeat(300)],
      response_format: { type: 'json_object' },
    });
    expect(res.status).toBe(200);
    await res.text();
    const server = await serverSpan(stack, receiver);
    const expected = {
      'gen_ai.request.max_tokens': 64,
      'gen_ai.request.temperature': 0.2,
      'gen_ai.request.top_p': 0.9,
      'gen_ai.request.top_k': 20,
      'gen_ai.request.seed': 7,
      'gen_ai.request.frequency_penalty': 0.5,
      'gen_ai.request.presence_penalty': 0.25,
      // The client's strings, each cut at 256 characters.
      'gen_ai.request.stop_sequences': ['END', 'x'.repeat(256)],
      // Conditionally required when the request names an output format.
      'gen_ai.output.type': 'json',
    };
    for (const key of Object.keys(expected)) expect(server.attributes[key], key).toBeUndefined();
    expect(attempts(receiver, server)[0]!.attributes).toMatchObject(expected);
  });

  it('the default protocol: protobuf export (server/tracing/otlp-proto.ts) of the request and attempt spans', async () => {
    receiver = await otlpReceiver();
    // No OTEL_EXPORTER_OTLP_PROTOCOL: http/protobuf, the spec's default.
    stack = await startStack({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.origin } });
    const res = await post(stack, {
      model: 'sim',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    });
    const reqId = res.headers.get('x-request-id')!;
    await res.text();
    await waitFor(() => chatRequests(stack!).length === 1);
    const attemptSpanId = String(chatRequests(stack)[0]!.headers.traceparent).split('-')[2]!;
    const exported = () => Buffer.concat(receiver!.raw.map((r) => r.body));
    await waitFor(() => {
      void stack!.app.toolproof.tracing!.flush();
      return exported().includes(Buffer.from(reqId));
    });
    expect(receiver.spans).toHaveLength(0); // nothing in JSON
    expect(
      receiver.raw.every((r) => r.path === '/v1/traces' && r.contentType === 'application/x-protobuf'),
    ).toBe(true);
    const body = exported();
    // The trace id, the attempt span's id (the traceparent sent upstream) and GenAI attributes, as bytes.
    expect(body.includes(Buffer.from(TRACE_ID, 'hex'))).toBe(true);
    expect(body.includes(Buffer.from(attemptSpanId, 'hex'))).toBe(true);
    for (const text of [
      'POST /v1/chat/completions',
      'chat sim',
      'gen_ai.request.model',
      'gen_ai.operation.name',
    ])
      expect(body.includes(Buffer.from(text)), text).toBe(true);
  });
});

describe("OTEL_TRACES_EXPORTER=console (the spec's standard output exporter)", () => {
  const printed = (dir: MockInstance<typeof console.dir>) =>
    dir.mock.calls.map(([span]) => span as { name: string; traceId: string; kind: number });

  it('alone: each span printed, nothing posted to the endpoint also set', async () => {
    receiver = await otlpReceiver();
    const dir = vi.spyOn(console, 'dir').mockImplementation(() => {});
    try {
      stack = await startStack({ env: { ...otelEnv(receiver), OTEL_TRACES_EXPORTER: 'console' } });
      const res = await post(stack, {
        model: 'sim',
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      });
      await res.text();
      await waitFor(() => {
        void stack!.app.toolproof.tracing!.flush();
        return printed(dir).some((x) => x.kind === 1);
      });
      const server = printed(dir).find((x) => x.kind === 1)!;
      expect(server).toMatchObject({ name: 'POST /v1/chat/completions', traceId: TRACE_ID });
      expect(printed(dir).some((x) => x.kind === 2 && x.name === 'chat sim')).toBe(true);
      expect(receiver.raw).toHaveLength(0);
    } finally {
      dir.mockRestore();
    }
  });

  it('beside otlp: printed and posted, protobuf included', async () => {
    receiver = await otlpReceiver();
    const dir = vi.spyOn(console, 'dir').mockImplementation(() => {});
    try {
      stack = await startStack({
        env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.origin, OTEL_TRACES_EXPORTER: 'otlp,console' },
      });
      const res = await post(stack, { model: 'sim', messages: [{ role: 'user', content: 'hi' }] });
      const reqId = res.headers.get('x-request-id')!;
      await res.text();
      const posted = () => Buffer.concat(receiver!.raw.map((r) => r.body));
      await waitFor(() => {
        void stack!.app.toolproof.tracing!.flush();
        return posted().includes(Buffer.from(reqId)) && printed(dir).some((x) => x.kind === 1);
      });
      expect(receiver.raw.every((r) => r.contentType === 'application/x-protobuf')).toBe(true);
      expect(posted().includes(Buffer.from(TRACE_ID, 'hex'))).toBe(true);
      expect(printed(dir).find((x) => x.kind === 1)?.traceId).toBe(TRACE_ID);
    } finally {
      dir.mockRestore();
    }
  });
});

describe('tracing off (no OTEL_* variables)', () => {
  it('no tracer, and the client traceparent goes upstream as it came', async () => {
    stack = await startStack();
    expect(stack.app.toolproof.tracing).toBeUndefined();
    const res = await post(stack, {
      model: 'sim',
      messages: [{ role: 'user', content: 'hi' }],
      tools: [weatherTool],
    });
    await res.text();
    expect(chatRequests(stack)[0]!.headers.traceparent).toBe(TRACEPARENT);
  });
});
