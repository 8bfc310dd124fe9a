/**
 * A scripted upstream for the tests through real HTTP: a real HTTP server on loopback whose
 * /v1/chat/completions answer is whatever the test's handler writes (a tool call with hostile
 * arguments, an endless SSE line...), given the request's parsed body. Other routes answer an
 * empty model list.
 */
import type { ServerResponse } from 'node:http';
import {
  chunkEvent,
  fakeUpstream,
  type ProxyInFront,
  type ProxyOptions,
  proxyInFrontOfUpstream,
} from './harness.js';

export type ChatHandler = (body: Record<string, unknown>, res: ServerResponse) => void;

export interface FakeUpstream {
  url: string;
  requests: Array<Record<string, unknown>>;
  close(): Promise<void>;
}

/** harness.ts's recording upstream, seen through the parsed chat bodies it received. */
export async function startFakeUpstream(handler: ChatHandler): Promise<FakeUpstream> {
  const requests: Array<Record<string, unknown>> = [];
  const upstream = await fakeUpstream((req, res) => {
    if (req.url.endsWith('/chat/completions')) {
      const body = JSON.parse(req.body.toString('utf8')) as Record<string, unknown>;
      requests.push(body);
      handler(body, res);
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ object: 'list', data: [] }));
  });
  return { url: upstream.url, requests, close: () => upstream.close() };
}

/** harness.ts's proxyInFrontOf, in front of a startFakeUpstream answering with `handler`. */
export function proxyInFrontOfChat(
  handler: ChatHandler,
  options: ProxyOptions = {},
): ProxyInFront<FakeUpstream> {
  return proxyInFrontOfUpstream(() => startFakeUpstream(handler), options);
}

/** A non-streamed completion whose only choice calls `name` with `args` (already a JSON string). */
export function toolCallCompletion(model: string, name: string, args: string): string {
  return JSON.stringify({
    id: 'chatcmpl-fake',
    object: 'chat.completion',
    created: 1,
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name, arguments: args } }],
        },
        finish_reason: 'tool_calls',
      },
    ],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  });
}

/** The same call as a vLLM-style event stream (role, one tool-call delta, finish, [DONE]). */
export function toolCallStream(model: string, name: string, args: string): string {
  const chunk = (delta: unknown, finish: string | null) => chunkEvent(delta, finish, 'chatcmpl-fake', model);
  return (
    chunk({ role: 'assistant', content: null }, null) +
    chunk(
      { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name, arguments: args } }] },
      null,
    ) +
    chunk({}, 'tool_calls') +
    'data: [DONE]\n\n'
  );
}
