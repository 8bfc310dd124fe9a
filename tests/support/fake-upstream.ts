/**
 * A scripted upstream for the hardening tests: a real HTTP server on loopback whose
 * /v1/chat/completions answer is whatever the test's handler writes (a tool call with hostile
 * arguments, an endless SSE line...). Other routes answer an empty model list.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type ChatHandler = (body: Record<string, unknown>, res: ServerResponse) => void;

export interface FakeUpstream {
  url: string;
  requests: Array<Record<string, unknown>>;
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  return Buffer.concat(parts).toString('utf8');
}

export async function startFakeUpstream(handler: ChatHandler): Promise<FakeUpstream> {
  const requests: Array<Record<string, unknown>> = [];
  const server: Server = createServer((req, res) => {
    void readBody(req).then((text) => {
      if (req.url?.endsWith('/chat/completions')) {
        const body = JSON.parse(text) as Record<string, unknown>;
        requests.push(body);
        handler(body, res);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data: [] }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    requests,
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
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
  const chunk = (delta: unknown, finish: string | null) =>
    `data: ${JSON.stringify({
      id: 'chatcmpl-fake',
      object: 'chat.completion.chunk',
      created: 1,
      model,
      choices: [{ index: 0, delta, finish_reason: finish }],
    })}\n\n`;
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
