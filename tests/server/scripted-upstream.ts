/**
 * A fake chat-completions upstream that misbehaves on purpose: each request gets the reply the
 * test's script returns for it (the nth request, its parsed body). Replies are whole JSON bodies,
 * SSE streams cut into chosen pieces, raw bytes, or a socket destroyed mid-way.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { closeApp, TEST_MODELS } from './stack.js';
import { buildApp, type BuildOptions, type ToolproofApp } from '../../server/app.js';
import { type Config, loadConfig } from '../../server/config.js';
import type { ChatCompletionChunk } from '../../protocol/openai.js';

export type ScriptedReply =
  | { json: unknown; status?: number }
  /** SSE payloads (objects are JSON-encoded); `pieces` cuts the byte stream at these sizes. */
  | {
      sse: Array<object | string>;
      pieces?: number[];
      status?: number;
      endWithoutDone?: boolean;
      /** After the pieces, the rest waits for this (a turn the backend holds open). */
      hold?: Promise<unknown>;
    }
  | { raw: string; status?: number; contentType?: string; destroyAfter?: boolean };

export interface RecordedRequest {
  body: Record<string, unknown>;
  headers: IncomingMessage['headers'];
}

export interface ScriptedUpstream {
  url: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

function sseText(reply: Extract<ScriptedReply, { sse: unknown }>): string {
  let text = '';
  for (const p of reply.sse) text += `data: ${typeof p === 'string' ? p : JSON.stringify(p)}\n\n`;
  if (!reply.endWithoutDone) text += 'data: [DONE]\n\n';
  return text;
}

async function write(res: ServerResponse, reply: ScriptedReply): Promise<void> {
  if ('json' in reply) {
    res.writeHead(reply.status ?? 200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(reply.json));
    return;
  }
  if ('raw' in reply) {
    res.writeHead(reply.status ?? 200, { 'content-type': reply.contentType ?? 'application/json' });
    if (reply.destroyAfter) {
      res.write(reply.raw);
      setTimeout(() => res.socket?.destroy(), 20);
      return;
    }
    res.end(reply.raw);
    return;
  }
  res.writeHead(reply.status ?? 200, { 'content-type': 'text/event-stream' });
  const bytes = Buffer.from(sseText(reply));
  let at = 0;
  for (const size of reply.pieces ?? []) {
    if (at >= bytes.length) break;
    res.write(bytes.subarray(at, at + size));
    at += size;
    await new Promise((r) => setImmediate(r));
  }
  if (reply.hold) await reply.hold;
  res.end(bytes.subarray(at));
}

export async function startScriptedUpstream(
  script: (body: Record<string, unknown>, n: number) => ScriptedReply,
): Promise<ScriptedUpstream> {
  const requests: RecordedRequest[] = [];
  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(Buffer.concat(parts).toString('utf8')) as Record<string, unknown>;
      } catch {
        // not JSON: recorded empty
      }
      requests.push({ body, headers: req.headers });
      void write(res, script(body, requests.length - 1));
    });
  });
  server.keepAliveTimeout = 100;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export interface ScriptedStack {
  upstream: ScriptedUpstream;
  app: ToolproofApp;
  url: string;
  client: OpenAI;
  close(): Promise<void>;
}

/** toolproof on loopback in front of a scripted upstream, with a real `openai` client. */
export async function startScriptedStack(
  script: (body: Record<string, unknown>, n: number) => ScriptedReply,
  options: { env?: Record<string, string>; config?: Partial<Config>; build?: BuildOptions } = {},
): Promise<ScriptedStack> {
  const upstream = await startScriptedUpstream(script);
  const config: Config = Object.freeze({
    ...loadConfig({ TOOLPROOF_UPSTREAM_URL: upstream.url, ...options.env }),
    ...options.config,
  });
  const app = await buildApp(config, { logger: false, ...options.build });
  app.toolproof.modelLabels.serve(TEST_MODELS); // as /ready would learn them (see stack.ts)
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}/v1`;
  return {
    upstream,
    app,
    url,
    client: new OpenAI({ baseURL: url, apiKey: 'unused', maxRetries: 0, timeout: 15_000 }),
    async close() {
      await closeApp(app);
      await upstream.close();
    },
  };
}

/** What a model "said" in one turn, as an upstream would send it. */
export interface Turn {
  content?: string;
  calls?: Array<{ id?: string; name: string; arguments: string }>;
  finish?: string;
}

const BASE = { id: 'chatcmpl-scripted', created: 1_700_000_000, model: 'm' };

export function turnCompletion(turn: Turn): object {
  const calls = turn.calls ?? [];
  return {
    ...BASE,
    object: 'chat.completion',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: turn.content ?? null,
          ...(calls.length > 0
            ? {
                tool_calls: calls.map((c, i) => ({
                  id: c.id ?? `call_${i}`,
                  type: 'function',
                  function: { name: c.name, arguments: c.arguments },
                })),
              }
            : {}),
        },
        finish_reason: turn.finish ?? (calls.length > 0 ? 'tool_calls' : 'stop'),
      },
    ],
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
  };
}

/** The same turn as chat-completion chunks, its text and arguments cut every `step` characters. */
export function turnChunks(turn: Turn, step = 3): ChatCompletionChunk[] {
  const chunk = (delta: object, finish: string | null = null): ChatCompletionChunk =>
    ({
      ...BASE,
      object: 'chat.completion.chunk',
      choices: [{ index: 0, delta, finish_reason: finish }],
    }) as ChatCompletionChunk;
  const out: ChatCompletionChunk[] = [chunk({ role: 'assistant', content: '' })];
  const text = turn.content ?? '';
  for (let i = 0; i < text.length; i += step) out.push(chunk({ content: text.slice(i, i + step) }));
  (turn.calls ?? []).forEach((c, i) => {
    out.push(
      chunk({
        tool_calls: [
          { index: i, id: c.id ?? `call_${i}`, type: 'function', function: { name: c.name, arguments: '' } },
        ],
      }),
    );
    for (let j = 0; j < c.arguments.length; j += step)
      out.push(
        chunk({ tool_calls: [{ index: i, function: { arguments: c.arguments.slice(j, j + step) } }] }),
      );
  });
  out.push(chunk({}, turn.finish ?? ((turn.calls ?? []).length > 0 ? 'tool_calls' : 'stop')));
  return out;
}

/** Assembles what a streaming client received (choice 0). */
export function assemble(chunks: ChatCompletionChunk[]): {
  content: string | null;
  calls: Array<{ id: string; name: string; arguments: string }>;
  finish: string | null;
} {
  let content = '';
  let sawContent = false;
  const calls: Array<{ id: string; name: string; arguments: string }> = [];
  let finish: string | null = null;
  for (const c of chunks) {
    const ch = c.choices?.[0];
    if (!ch) continue;
    if (typeof ch.delta?.content === 'string' && ch.delta.content !== '') {
      content += ch.delta.content;
      sawContent = true;
    }
    for (const td of ch.delta?.tool_calls ?? []) {
      calls[td.index] ??= { id: '', name: '', arguments: '' };
      const call = calls[td.index]!;
      if (td.id) call.id = td.id;
      if (td.function?.name) call.name += td.function.name;
      if (td.function?.arguments) call.arguments += td.function.arguments;
    }
    if (ch.finish_reason) finish = ch.finish_reason;
  }
  return { content: sawContent ? content : null, calls, finish };
}
