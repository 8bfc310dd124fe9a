/**
 * Unit tests of the attempt loop (server/chat/pipeline.ts) with a fake upstream client: no
 * sockets, every upstream reply scripted. What the loop decides once for both drivers: the
 * fallback once (and only on a rejection of tool_choice), retries, usage, outcomes.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import type { ToolproofError } from '../../../protocol/errors.js';
import type { ChatCompletionChunk, ChatCompletionRequest } from '../../../protocol/openai.js';
import { POLICIES } from '../../../policies/registry.js';
import { RequestAbort } from '../../../server/abort.js';
import { newEffects } from '../../../server/chat/attempt.js';
import { ChatCall, type ChatDeps } from '../../../server/chat/context.js';
import type { StreamOutput, StreamSummary } from '../../../server/chat/output.js';
import { completeChat, streamChat } from '../../../server/chat/pipeline.js';
import { activePolicies } from '../../../policies/composition.js';
import { classifyFinal, newTrace } from '../../../server/chat/trace.js';
import { loadConfig } from '../../../server/config.js';
import { FallbackMemory, memoryModel } from '../../../server/fallback-memory.js';
import { createMetrics } from '../../../server/metrics.js';
import { ToolLabels } from '../../../server/tool-labels.js';
import type { UpstreamClient, UpstreamRequest, UpstreamResponse } from '../../../server/upstream.js';
import { UpstreamBody } from '../../../server/upstream-body.js';
import { type Turn, turnChunks, turnCompletion } from '../scripted-upstream.js';

type Reply = { status: number; json?: unknown; sse?: object[]; body?: UpstreamBody };

function fakeClient(replies: Reply[]): { client: UpstreamClient; sent: ChatCompletionRequest[] } {
  const sent: ChatCompletionRequest[] = [];
  const client = {
    label: 'fake',
    async request(req: UpstreamRequest): Promise<UpstreamResponse> {
      sent.push(JSON.parse(String(req.body)) as ChatCompletionRequest);
      const r = replies[Math.min(sent.length - 1, replies.length - 1)]!;
      const sse = r.sse !== undefined;
      const text = sse
        ? `${r.sse!.map((p) => `data: ${JSON.stringify(p)}\n\n`).join('')}data: [DONE]\n\n`
        : JSON.stringify(r.json);
      return {
        status: r.status,
        headers: { 'content-type': sse ? 'text/event-stream' : 'application/json' },
        body: r.body ?? UpstreamBody.of(text),
        upstream: 'fake',
      };
    },
  } as unknown as UpstreamClient;
  return { client, sent };
}

const weather = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

function setup(replies: Reply[], request: Partial<ChatCompletionRequest> = {}) {
  const config = loadConfig({ TOOLPROOF_UPSTREAM_URL: 'http://127.0.0.1:9/v1' });
  const metrics = createMetrics({ defaultMetrics: false });
  const memory = new FallbackMemory();
  const deps: ChatDeps = { config, metrics, memory, policies: POLICIES, toolLabels: new ToolLabels() };
  const { client, sent } = fakeClient(replies);
  const body: ChatCompletionRequest = {
    model: 'm',
    messages: [{ role: 'user', content: 'Weather in Paris?' }],
    tools: [weather],
    ...request,
  };
  const settings = config.defaults;
  const call = new ChatCall(
    'req-1',
    body,
    Buffer.from(JSON.stringify(body)),
    { name: 'm', settings, client },
    activePolicies(POLICIES, settings),
    new RequestAbort(),
    newTrace(),
    {},
    false,
  );
  return { call, deps, sent, memory, metrics };
}

async function counter(metrics: ReturnType<typeof createMetrics>, name: string): Promise<number> {
  const text = await metrics.registry.metrics();
  let total = 0;
  for (const line of text.split('\n')) if (line.startsWith(name)) total += Number(line.split(' ').at(-1));
  return total;
}

const ok = (turn: Turn): Reply => ({ status: 200, json: turnCompletion(turn) });

describe('the fallback once', () => {
  it('a rejection of "required" is retried once with "auto" and remembered', async () => {
    const { call, deps, sent, memory } = setup([
      { status: 400, json: { error: { message: '"required" tool_choice is not supported' } } },
      ok({ calls: [{ name: 'get_weather', arguments: '{"city":"Paris"}' }] }),
    ]);
    const result = await completeChat(call, deps);
    expect(result.kind).toBe('completion');
    expect(sent.map((r) => r.tool_choice)).toEqual(['required', 'auto']);
    expect(sent[1]!.tools?.map((t) => t.function.name)).toContain('final_answer');
    expect(memory.isActive('fake', memoryModel('m', undefined))).toBe(true);
    expect(call.trace.fallback).toBe(true);
    expect(call.trace.attempts).toBe(2);
  });

  it('an unrelated 5xx (out of memory) is relayed as it is, never retried nor remembered', async () => {
    const { call, deps, sent, memory } = setup([
      { status: 500, json: { error: { message: 'CUDA out of memory. Tried to allocate 2.00 GiB' } } },
      ok({ content: 'never sent' }),
    ]);
    await expect(completeChat(call, deps)).rejects.toMatchObject({ status: 500 });
    expect(sent).toHaveLength(1);
    expect(memory.isActive('fake', memoryModel('m', undefined))).toBe(false);
  });
});

describe('corrective retry in the loop', () => {
  it('usage is summed over attempts and the retry outcome is fixed', async () => {
    const { call, deps, sent, metrics } = setup([
      ok({ calls: [{ name: 'get_forecast', arguments: '{}' }] }),
      ok({ calls: [{ name: 'get_weather', arguments: '{"city":"Paris"}' }] }),
    ]);
    const result = await completeChat(call, deps);
    expect(sent).toHaveLength(2);
    if (result.kind !== 'completion') throw new Error('expected a completion');
    expect(result.completion.usage?.total_tokens).toBe(30);
    expect(call.trace.retries).toEqual([expect.objectContaining({ outcome: 'fixed' })]);
    expect(await counter(metrics, 'toolproof_retries_total{')).toBe(1);
  });

  it('a retry answered invalid again is failed, and the invalid turn goes back as it is', async () => {
    const { call, deps } = setup([ok({ calls: [{ name: 'get_forecast', arguments: '{}' }] })]);
    const result = await completeChat(call, deps);
    if (result.kind !== 'completion') throw new Error('expected a completion');
    expect(result.completion.choices[0]!.message.tool_calls?.[0]?.function.name).toBe('get_forecast');
    expect(call.trace.retries).toEqual([expect.objectContaining({ outcome: 'failed' })]);
  });

  it('a retry cut short by the client is settled aborted', async () => {
    const { call, deps } = setup([ok({ calls: [{ name: 'get_forecast', arguments: '{}' }] })]);
    const client = call.route.client;
    const original = client.request.bind(client);
    let n = 0;
    (client as { request: UpstreamClient['request'] }).request = async (req) => {
      if (n++ === 1) {
        (call.signal as RequestAbort).abort(new Error('client disconnected'));
        throw new Error('aborted');
      }
      return original(req);
    };
    await expect(completeChat(call, deps)).rejects.toThrow();
    expect(call.trace.retries).toEqual([expect.objectContaining({ outcome: 'aborted' })]);
  });
});

class CollectingOutput implements StreamOutput {
  opened = false;
  chunks_: ChatCompletionChunk[] = [];
  ended?: StreamSummary;
  failed?: ToolproofError;
  open(): void {
    this.opened = true;
  }
  async chunks(chunks: readonly ChatCompletionChunk[]): Promise<void> {
    if (chunks.length > 0) this.opened = true; // as SseWriter: the first write opens
    this.chunks_.push(...chunks);
  }
  async end(summary: StreamSummary): Promise<void> {
    this.ended = summary;
  }
  async fail(err: ToolproofError): Promise<void> {
    this.failed = err;
  }
}

describe('the streamed driver', () => {
  it('ends with the summed usage of every attempt', async () => {
    const usage = { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 };
    const chunksOf = (turn: Turn) => [
      ...turnChunks(turn),
      {
        id: 'chatcmpl-scripted',
        object: 'chat.completion.chunk',
        created: 1,
        model: 'm',
        choices: [],
        usage,
      },
    ];
    const { call, deps } = setup(
      [
        { status: 200, sse: chunksOf({ calls: [{ name: 'get_forecast', arguments: '{}' }] }) },
        { status: 200, sse: chunksOf({ calls: [{ name: 'get_weather', arguments: '{"city":"Oslo"}' }] }) },
      ],
      { stream: true },
    );
    const out = new CollectingOutput();
    await streamChat(call, deps, out);
    expect(out.failed).toBeUndefined();
    expect(out.ended?.usage?.total_tokens).toBe(10);
    expect(call.trace.finalKind).toBe('tool_calls');
  });

  it('an upstream error after the headers is the output failure, not a throw', async () => {
    const { call, deps } = setup(
      [{ status: 200, sse: [...turnChunks({ content: 'hi' }).slice(0, 2), { error: { message: 'boom' } }] }],
      { stream: true, tools: undefined },
    );
    const out = new CollectingOutput();
    await streamChat(call, deps, out);
    expect(out.failed?.message).toContain('boom');
    expect(call.streamError).toBe(out.failed);
  });
});

describe('what a waiting stream keeps', () => {
  it('the read loop keeps nothing of the last read while it waits for the next one', async () => {
    // An open stream waits on its upstream most of its life: a read (bytes, decoded text,
    // payloads) held across that wait is paid by every open stream (bench/heap-streams.ts).
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const events = turnChunks({
      calls: [{ name: 'final_answer', arguments: '{"answer":"Sunny in Paris."}' }],
    });
    const frame = (cs: object[]) => Buffer.from(cs.map((c) => `data: ${JSON.stringify(c)}\n\n`).join(''));
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let firstRead: WeakRef<Buffer> | undefined;
    let reads = 0;
    const body = {
      [Symbol.asyncIterator]: () => ({
        async next(): Promise<IteratorResult<Buffer>> {
          reads++;
          if (reads === 1) {
            const buf = frame(events.slice(0, 4));
            firstRead = new WeakRef(buf);
            return { done: false, value: buf };
          }
          if (reads === 2) {
            await gate;
            return { done: false, value: Buffer.from(`${frame(events.slice(4))}data: [DONE]\n\n`) };
          }
          return { done: true, value: undefined };
        },
      }),
      destroy() {},
      // What follows the [DONE] is dropped (stream-read.ts dropAfterDone): nothing here.
      async dump() {},
    } as unknown as UpstreamBody;
    const { call, deps } = setup([{ status: 200, sse: [], body }], { stream: true });
    const out = new CollectingOutput();
    const done = streamChat(call, deps, out);
    while (reads < 2) await new Promise((resolve) => setTimeout(resolve, 1));
    await new Promise((resolve) => setTimeout(resolve, 0));
    gc();
    gc();
    expect(firstRead?.deref()).toBeUndefined();
    release();
    await done;
    expect(out.failed).toBeUndefined();
    const text = out.chunks_.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(text).toBe('Sunny in Paris.');
  });
});

describe('helpers', () => {
  it('newEffects: only what a re-run did differently', () => {
    const a = { policy: 'history-repair', kind: 'synthesized-result', count: 1 };
    const b = { policy: 'force-tool-use', kind: 'forced', detail: { toolChoice: 'auto' } };
    expect(newEffects([a, { ...b }], [a, b, a])).toEqual([a]);
  });

  it('classifyFinal', () => {
    expect(classifyFinal({ calls: true, content: true }, false)).toBe('both');
    expect(classifyFinal({ calls: true, content: false }, true)).toBe('tool_calls');
    expect(classifyFinal({ calls: false, content: true }, true)).toBe('final_answer');
    expect(classifyFinal({ calls: false, content: false }, false)).toBe('content');
  });
});
