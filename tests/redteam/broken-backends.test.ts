/**
 * Broken backends behind /v1/messages and /v1/responses, streamed and not: garbage, HTML, a 200
 * carrying an error, a truncated or reset stream, a huge SSE line, silence, upstream 4xx/5xx,
 * and completions shaped so that reading them would throw. Each ends in the API's own error
 * shape (an HTTP error before the stream opened, the API's error event after), never a 500 or
 * a hang, and no stream stays registered as open.
 */
import type { ServerResponse } from 'node:http';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { proxyInFrontOfChat } from '../support/fake-upstream.js';
import { turnChunks } from '../server/scripted-upstream.js';
import { waitFor } from '../server/stack.js';

type Handler = (body: Record<string, unknown>, res: ServerResponse) => void;
let handler: Handler = () => undefined;
const pair = proxyInFrontOfChat((b, r) => handler(b, r), {
  env: { TOOLPROOF_IDLE_TIMEOUT_MS: '1000', TOOLPROOF_FIRST_BYTE_TIMEOUT_MS: '1000' },
});

const sse = (events: unknown[]) =>
  events.map((e) => `data: ${typeof e === 'string' ? e : JSON.stringify(e)}\n\n`).join('');
const good = turnChunks({ content: 'hello there friend' });
const head = (res: ServerResponse, b: Record<string, unknown>, status = 200) =>
  res.writeHead(status, { 'content-type': b.stream === true ? 'text/event-stream' : 'application/json' });

/** Upstream behaviours that fail before anything reached the client. */
const before: Record<string, Handler> = {
  'a body that is not JSON': (_b, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('}{ not json');
  },
  'an HTML error page': (_b, res) => {
    res.writeHead(502, { 'content-type': 'text/html' });
    res.end('<html><body>Bad gateway</body></html>');
  },
  'a 200 HTML page': (_b, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<html><body>hi</body></html>');
  },
  'a 200 carrying an error object': (_b, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"error":{"message":"model crashed","type":"server_error"}}');
  },
  'an empty body': (_b, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('');
  },
  'an upstream 500': (_b, res) => {
    res.writeHead(500, { 'content-type': 'application/json' });
    res.end('{"error":{"message":"boom"}}');
  },
  silence: () => undefined,
};

/** Upstream behaviours that fail after the stream opened (streamed requests). */
const midStream: Record<string, Handler> = {
  'an error event': (b, res) => {
    head(res, b);
    res.end(sse([good[0], good[1], { error: { message: 'model crashed', code: 500 } }]));
  },
  'a cut event': (b, res) => {
    head(res, b);
    res.end(sse(good.slice(0, 3)).slice(0, -20));
  },
  'a reset connection': (b, res) => {
    head(res, b);
    res.write(sse(good.slice(0, 3)));
    setTimeout(() => res.socket?.destroy(), 30);
  },
  // A clean close in the middle of the answer: no finish_reason, no [DONE]. Not a whole answer.
  'a clean close before the answer finished': (b, res) => {
    head(res, b);
    res.end(sse(good.slice(0, 2)));
  },
  // A slow loris: bytes keep coming (so undici's byte idle timer never fires) but no event.
  'nothing but SSE comments after the first events': (b, res) => {
    head(res, b);
    res.write(sse(good.slice(0, 2)));
    const timer = setInterval(() => res.write(': ping\n\n'), 50);
    res.on('close', () => clearInterval(timer));
  },
  'a 20 MiB line': (b, res) => {
    head(res, b);
    const piece = 'x'.repeat(1 << 20);
    let n = 0;
    const pump = () => {
      while (n < 20) {
        n++;
        if (!res.write((n === 1 ? 'data: {"a":"' : '') + piece)) return void res.once('drain', pump);
      }
      res.end();
    };
    pump();
  },
};

/** Completions whose shape would make a reader throw: a 502 naming the field, not a 500. */
const malformed: Record<string, string> = {
  'a null choice': '{"id":"a","choices":[null]}',
  'a null message': '{"id":"a","choices":[{"message":null,"finish_reason":"stop"}]}',
  'tool_calls as a string':
    '{"id":"a","choices":[{"message":{"content":"hi","tool_calls":"x"},"finish_reason":"stop"}]}',
  'a tool call without a function':
    '{"id":"a","choices":[{"message":{"tool_calls":[{"id":"c","type":"function"}]},"finish_reason":"tool_calls"}]}',
};

const doors = {
  messages: (stream: boolean) => ({
    path: '/v1/messages',
    body: { model: 'm', max_tokens: 50, stream, messages: [{ role: 'user', content: 'hi' }] },
  }),
  responses: (stream: boolean) => ({ path: '/v1/responses', body: { model: 'm', stream, input: 'hi' } }),
  // With a tool, so that the chat request runs through the pipeline instead of being relayed.
  chat: (stream: boolean) => ({
    path: '/v1/chat/completions',
    body: {
      model: 'm',
      stream,
      messages: [{ role: 'user', content: 'hi' }],
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
    },
  }),
};

async function post(
  door: keyof typeof doors,
  stream: boolean,
  timeoutMs = 10_000,
  origin = pair.proxy.origin,
): Promise<{ status: number; text: string }> {
  const { path, body } = doors[door](stream);
  const res = await fetch(origin + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  return { status: res.status, text: await res.text() };
}

function expectErrorShape(door: keyof typeof doors, text: string): void {
  const body = JSON.parse(text) as Record<string, unknown>;
  if (door === 'messages') {
    expect(body).toEqual({ type: 'error', error: { type: expect.any(String), message: expect.any(String) } });
  } else {
    expect(body.error).toMatchObject({ message: expect.any(String), type: expect.any(String) });
    expect(Object.keys(body.error as object)).toEqual(expect.arrayContaining(['param', 'code']));
  }
}

/** The SSE events of a body, as [event name, data]. */
function events(text: string): Array<[string, Record<string, unknown>]> {
  return text
    .split('\n\n')
    .filter((e) => e.trim() !== '')
    .map((e) => {
      const name = /^event: (.*)$/m.exec(e)?.[1] ?? '';
      return [name, JSON.parse(/^data: (.*)$/m.exec(e)![1]!) as Record<string, unknown>];
    });
}

describe.each(['messages', 'responses'] as const)('/v1/%s', (door) => {
  for (const [name, h] of Object.entries(before)) {
    // Silence waits out the first-byte timeout (1 s): its two rows, the same handler, wait at once.
    const row = name === 'silence' ? it.concurrent : it;
    row.each([false, true])(`${name} (stream: %s): an HTTP error in the API's shape`, async (stream) => {
      handler = h;
      const { status, text } = await post(door, stream);
      expect(status).toBeGreaterThanOrEqual(400);
      // A 500 only relays the upstream's own 500, never toolproof failing.
      if (name !== 'an upstream 500') expect(status).not.toBe(500);
      expectErrorShape(door, text);
      await waitFor(() => pair.proxy.app.toolproof.openStreams.size === 0);
    });
  }

  for (const [name, h] of Object.entries(midStream)) {
    it(`${name} mid-stream: the API's own error event ends the stream`, async () => {
      handler = h;
      const { status, text } = await post(door, true);
      if (name === 'a 20 MiB line') {
        // Its first event is the line: nothing of the answer went out, so the stream's headers
        // had not either (sse-writer.ts open): the HTTP error in the API's shape, as not streamed.
        expect(status).toBe(502);
        expectErrorShape(door, text);
        await waitFor(() => pair.proxy.app.toolproof.openStreams.size === 0);
        return;
      }
      expect(status).toBe(200);
      const evs = events(text);
      if (door === 'messages') {
        expect(evs[0]![0]).toBe('message_start');
        expect(evs.at(-1)![0]).toBe('error');
        expect(evs.at(-1)![1]).toEqual({
          type: 'error',
          // timeout_error for the stalled upstream (a 504), api_error for the rest
          error: { type: expect.stringMatching(/^(api_error|timeout_error)$/), message: expect.any(String) },
        });
      } else {
        expect(evs[0]![0]).toBe('response.created');
        expect(evs.at(-2)![1]).toMatchObject({ type: 'error', code: expect.stringMatching(/^TP_ERR_/) });
        expect(evs.at(-1)![1]).toMatchObject({ type: 'response.failed', response: { status: 'failed' } });
        expect(evs.map(([, d]) => d.sequence_number)).toEqual(evs.map((_, i) => i));
      }
      expect(text).not.toContain('[DONE]');
      await waitFor(() => pair.proxy.app.toolproof.openStreams.size === 0);
    });
  }
});

describe('/v1/responses, an answer streamed without end', () => {
  // A backend that generates without end: the Responses door keeps the whole output for its
  // closing events, so it grew the heap until the process died (200 MB of text: +2.5 GB, the
  // loop held 22 s). A stream is refused past the size a whole body may be (64 MiB), with the
  // same 502 as a whole body past it.
  // A proxy of its own, with the default idle timeout: a 1 MiB event comes in many reads, none
  // of them a whole event, and the file's 1 s idle timeout (for the silences above) ended the
  // stream as stalled when those reads took longer than that on a loaded box (flakes19: once in
  // two loaded full runs). The test waits for the size bound, whatever the pace.
  const endless = proxyInFrontOfChat((b, r) => handler(b, r));
  it("ends with the API's error event past 64 MiB", async () => {
    handler = (b, res) => {
      head(res, b);
      const delta = sse([{ id: 'x', choices: [{ index: 0, delta: { content: 'x'.repeat(1 << 20) } }] }]);
      res.write(sse([good[0]]));
      let n = 0;
      const pump = () => {
        while (n < 70) {
          n++;
          if (!res.write(delta)) return void res.once('drain', pump);
        }
        res.end(sse([...good.slice(-1), '[DONE]']));
      };
      pump();
    };
    // 70 MiB through the proxy, ~1.6 s of CPU: at a load of 9 on the 2-core box it outlasted 10 s
    // in two full runs out of two. Without the bound the stream ends completed, not failed.
    const { status, text } = await post('responses', true, 25_000, endless.proxy.origin);
    expect(status).toBe(200);
    const evs = events(text);
    expect(evs.at(-2)![1]).toMatchObject({
      type: 'error',
      code: 'TP_ERR_UPSTREAM_BAD_RESPONSE',
      message: expect.stringContaining('larger than 67108864 bytes'),
    });
    expect(evs.at(-1)![1]).toMatchObject({ type: 'response.failed', response: { status: 'failed' } });
    expect(text.length).toBeLessThan(70 << 20);
    await waitFor(() => endless.proxy.app.toolproof.openStreams.size === 0);
  }, 30_000);
});

describe.each(['messages', 'responses', 'chat'] as const)('/v1/%s, a completion shaped to throw', (door) => {
  it.each(Object.entries(malformed))('%s: 502 naming the field, not toolproof 500', async (_name, body) => {
    handler = (_b, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body);
    };
    const { status, text } = await post(door, false);
    expect(status).toBe(502);
    expectErrorShape(door, text);
    expect(text).toMatch(/choices\[0\]/);
  });
});

/** Streamed chunks shaped so that reading them throws: the API's error event naming the field. */
const malformedChunks: Record<string, unknown> = {
  'a null choice': { id: 'x', choices: [null] },
  'a null tool-call delta': {
    id: 'x',
    choices: [{ index: 0, delta: { tool_calls: [null] }, finish_reason: null }],
  },
  'tool_calls as a string': {
    id: 'x',
    choices: [{ index: 0, delta: { tool_calls: 'xy' }, finish_reason: null }],
  },
  // Each read as "no choices" by the shape check, then iterated by a stream hook: a TypeError.
  'choices as an object': { id: 'x', choices: {} },
  'choices as a string': { id: 'x', choices: 'abc' },
};

describe.each(['messages', 'responses', 'chat'] as const)(
  '/v1/%s, a streamed chunk shaped to throw',
  (door) => {
    it.each(Object.entries(malformedChunks))(
      '%s: an upstream error event, not toolproof failing',
      async (_n, bad) => {
        handler = (b, res) => {
          head(res, b);
          res.end(sse([good[0], good[1], bad, ...good.slice(2), '[DONE]']));
        };
        const before = Number(/toolproof_internal_errors_total\S* (\d+)/.exec(await metricsText())?.[1] ?? 0);
        const { status, text } = await post(door, true);
        expect(status).toBe(200);
        expect(text).toMatch(/sent an event with choices/);
        expect(text).not.toContain('toolproof failed to handle');
        const after = Number(/toolproof_internal_errors_total\S* (\d+)/.exec(await metricsText())?.[1] ?? 0);
        expect(after).toBe(before);
      },
    );
  },
);

const metricsText = async () => (await fetch(`${pair.proxy.origin}/metrics`)).text();

describe.each(['messages', 'responses'] as const)('/v1/%s: toolproof_open_streams', (door) => {
  it('reads 1 while a stream is open and 0 once the client went away (the upstream request is cancelled)', async () => {
    let upstreamClosed = false;
    handler = (b, res) => {
      head(res, b);
      res.write(sse(good.slice(0, 2)));
      // Keeps the stream alive without finishing it (comments reset the idle timer).
      const timer = setInterval(() => res.write(': still here\n\n'), 100);
      res.on('close', () => {
        clearInterval(timer);
        upstreamClosed = true;
      });
    };
    const gauge = async () => Number(/^toolproof_open_streams (\d+)/m.exec(await metricsText())?.[1]);
    const controller = new AbortController();
    const { path, body } = doors[door](true);
    const res = await fetch(pair.proxy.origin + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    expect(await gauge()).toBe(1);
    controller.abort();
    await waitFor(() => upstreamClosed);
    await waitFor(() => pair.proxy.app.toolproof.openStreams.size === 0);
    expect(await gauge()).toBe(0);
  });
});

describe('the SDKs see these as their own errors', () => {
  it('@anthropic-ai/sdk: create rejects with a 502 APIError; stream().finalMessage() rejects on the error event', async () => {
    const client = new Anthropic({ baseURL: pair.proxy.origin, apiKey: 'x', maxRetries: 0, timeout: 10_000 });
    const params = { model: 'm', max_tokens: 50, messages: [{ role: 'user' as const, content: 'hi' }] };
    handler = before['an HTML error page']!;
    const err = await client.messages.create(params).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect((err as InstanceType<typeof Anthropic.APIError>).status).toBe(502);
    handler = midStream['a reset connection']!;
    await expect(client.messages.stream(params).finalMessage()).rejects.toThrow(/closed the stream/);
  });

  it('openai: responses.create rejects with a 502 APIError; responses.stream() rejects on the error event', async () => {
    const client = new OpenAI({
      baseURL: `${pair.proxy.origin}/v1`,
      apiKey: 'x',
      maxRetries: 0,
      timeout: 10_000,
    });
    handler = before['a body that is not JSON']!;
    const err = await client.responses.create({ model: 'm', input: 'hi' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
    handler = midStream['a reset connection']!;
    const stream = client.responses.stream({ model: 'm', input: 'hi' });
    await expect(stream.finalResponse()).rejects.toThrow(/closed the stream/);
  });
});

/**
 * `"error": null` is JSON for "no error" (typeof null is 'object'): as an upstream's 4xx body it
 * was read as an error object and threw (toolproof's own 500 on every door), and as a chunk of a
 * stream it ended the stream with TP_ERR_INTERNAL.
 */
describe.each(['messages', 'responses', 'chat'] as const)('/v1/%s, "error": null', (door) => {
  it('a 400 whose body is {"error": null}: the upstream status in the API shape, not a 500', async () => {
    handler = (_b, res) => {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end('{"error":null}');
    };
    const before = Number(/toolproof_internal_errors_total\S* (\d+)/.exec(await metricsText())?.[1] ?? 0);
    const { status, text } = await post(door, false);
    expect(status).toBe(400);
    expectErrorShape(door, text);
    const after = Number(/toolproof_internal_errors_total\S* (\d+)/.exec(await metricsText())?.[1] ?? 0);
    expect(after).toBe(before);
  });

  it('a chunk {"error": null} mid-stream is no error: the answer streams whole', async () => {
    handler = (b, res) => {
      head(res, b);
      res.end(sse([good[0], good[1], { id: 'x', error: null }, ...good.slice(2), '[DONE]']));
    };
    const { status, text } = await post(door, true);
    expect(status).toBe(200);
    expect(text).not.toContain('toolproof failed to handle');
    expect(text).not.toMatch(/"type":"error"|event: error|"error":\{/);
    // Ended as a whole answer does on each door.
    expect(text).toMatch(
      { messages: /event: message_stop/, responses: /"status":"completed"/, chat: /"finish_reason":"stop"/ }[
        door
      ],
    );
  });
});

/** A media type is case-insensitive: a gateway that writes `Text/Event-Stream` still sends a stream. */
describe.each(['messages', 'responses', 'chat'] as const)(
  '/v1/%s, an event stream typed in capitals',
  (door) => {
    it('streams the answer (it was refused as "not an event stream", a 502)', async () => {
      handler = (_b, res) => {
        res.writeHead(200, { 'content-type': 'Text/Event-Stream; Charset=UTF-8' });
        res.end(sse([...good, '[DONE]']));
      };
      const { status, text } = await post(door, true);
      expect(status).toBe(200);
      expect(text).not.toMatch(/not an event stream/);
      expect(text).toMatch(
        {
          messages: /event: message_stop/,
          responses: /"status":"completed"/,
          chat: /"finish_reason":"stop"/,
        }[door],
      );
    });
  },
);

/**
 * JSON.parse takes 100k nested arrays; writing the completion back out (JSON.stringify) then
 * overflowed the stack: toolproof's own 500 on chat, TP_ERR_INTERNAL in its stream.
 */
const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
describe.each(['messages', 'responses', 'chat'] as const)(
  '/v1/%s, an upstream value 100k levels deep',
  (door) => {
    it('not streamed: a 502 naming the depth, not a 500', async () => {
      handler = (_b, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          `{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":"hi","extra":${deep}},"finish_reason":"stop"}]}`,
        );
      };
      const { status, text } = await post(door, false);
      expect(status).toBe(502);
      expectErrorShape(door, text);
      expect(text).toMatch(/nested deeper than 512 levels/);
    });

    it("streamed: the API's error event naming the depth, not toolproof failing", async () => {
      handler = (b, res) => {
        head(res, b);
        const bad = `{"id":"x","choices":[{"index":0,"delta":{"content":"x"},"extra":${deep}}]}`;
        res.end(`${sse([good[0], good[1]])}data: ${bad}\n\n${sse([...good.slice(2), '[DONE]'])}`);
      };
      const before = Number(/toolproof_internal_errors_total\S* (\d+)/.exec(await metricsText())?.[1] ?? 0);
      const { status, text } = await post(door, true);
      expect(status).toBe(200);
      expect(text).toMatch(/nested deeper than 512 levels/);
      expect(text).not.toContain('toolproof failed to handle');
      const after = Number(/toolproof_internal_errors_total\S* (\d+)/.exec(await metricsText())?.[1] ?? 0);
      expect(after).toBe(before);
    });
  },
);

/** An event after `[DONE]` is not part of the answer (a whole completion could not carry it). */
describe.each(['messages', 'responses', 'chat'] as const)('/v1/%s, an event after [DONE]', (door) => {
  it('is left out of what the client receives', async () => {
    handler = (b, res) => {
      head(res, b);
      const after = {
        id: 'x',
        choices: [{ index: 0, delta: { content: 'AFTER-DONE' }, finish_reason: null }],
      };
      res.end(sse([...good, '[DONE]', after]));
    };
    const { status, text } = await post(door, true);
    expect(status).toBe(200);
    expect(text).not.toContain('AFTER-DONE');
    expect(text).toMatch(
      { messages: /event: message_stop/, responses: /"status":"completed"/, chat: /"finish_reason":"stop"/ }[
        door
      ],
    );
  });
});
