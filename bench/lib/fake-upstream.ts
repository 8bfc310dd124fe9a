/**
 * The fake upstream: a minimal node:http server that answers /v1/chat/completions at once, so
 * the bench measures the proxy, not a model. Run as its own child process by bench/run.ts:
 *
 *   node --import tsx bench/lib/fake-upstream.ts
 *
 * It listens on 127.0.0.1 on a free port and prints one line `PORT <n>` on stdout.
 *
 * Answers (the request body is read completely, then looked at with two substring searches, no
 * JSON.parse, so a 200 KB body costs the upstream almost nothing and the same on both sides):
 * - `"tools":[` in the body: a chat.completion with one tool call to `final_answer`
 *   (`{"answer":"..."}`), as a tool-forced model answers; toolproof unwraps it into content;
 * - `"stream":true`: 50 SSE chunks written back-to-back, then `data: [DONE]`;
 * - otherwise: a small fixed chat.completion.
 * GET /v1/models and /health answer too (readiness checks); anything else is a 404.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { FINAL_ANSWER_TEXT, PLAIN_ANSWER_TEXT, STREAM_CHUNKS } from './fixtures.js';

const CREATED = 1_760_000_000;

const PLAIN_BODY = Buffer.from(
  JSON.stringify({
    id: 'chatcmpl-bench',
    object: 'chat.completion',
    created: CREATED,
    model: 'bench-model',
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: PLAIN_ANSWER_TEXT },
        logprobs: null,
        finish_reason: 'stop',
      },
    ],
    usage: { prompt_tokens: 20, completion_tokens: 9, total_tokens: 29 },
  }),
);

const TOOL_BODY = Buffer.from(
  JSON.stringify({
    id: 'chatcmpl-bench-tool',
    object: 'chat.completion',
    created: CREATED,
    model: 'bench-model',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'call_bench0001',
              type: 'function',
              function: { name: 'final_answer', arguments: JSON.stringify({ answer: FINAL_ANSWER_TEXT }) },
            },
          ],
        },
        logprobs: null,
        finish_reason: 'tool_calls',
      },
    ],
    usage: { prompt_tokens: 120, completion_tokens: 20, total_tokens: 140 },
  }),
);

function chunk(delta: Record<string, unknown>, finish: string | null): string {
  return `data: ${JSON.stringify({
    id: 'chatcmpl-bench-stream',
    object: 'chat.completion.chunk',
    created: CREATED,
    model: 'bench-model',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  })}\n\n`;
}

/** The 50 SSE events plus the terminator, pre-rendered once. */
const STREAM_EVENTS: readonly string[] = (() => {
  const events: string[] = [];
  for (let i = 0; i < STREAM_CHUNKS; i++) {
    const delta: Record<string, unknown> =
      i === 0 ? { role: 'assistant', content: 'tok0 ' } : { content: `tok${i} ` };
    events.push(chunk(delta, i === STREAM_CHUNKS - 1 ? 'stop' : null));
  }
  events.push('data: [DONE]\n\n');
  return events;
})();

function sendJson(res: ServerResponse, status: number, body: Buffer): void {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': body.length });
  res.end(body);
}

function handle(req: IncomingMessage, res: ServerResponse, body: Buffer): void {
  const url = req.url ?? '/';
  if (req.method === 'POST' && url === '/v1/chat/completions') {
    if (body.indexOf('"stream":true') !== -1) {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      for (const event of STREAM_EVENTS) res.write(event);
      res.end();
      return;
    }
    sendJson(res, 200, body.indexOf('"tools":[') !== -1 ? TOOL_BODY : PLAIN_BODY);
    return;
  }
  if (req.method === 'GET' && url === '/v1/models') {
    sendJson(
      res,
      200,
      Buffer.from('{"object":"list","data":[{"id":"bench-model","object":"model","owned_by":"bench"}]}'),
    );
    return;
  }
  if (req.method === 'GET' && url === '/health') {
    sendJson(res, 200, Buffer.from('{"status":"ok"}'));
    return;
  }
  sendJson(res, 404, Buffer.from('{"error":{"message":"not found","type":"not_found"}}'));
}

function main(): void {
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => handle(req, res, parts.length === 1 ? parts[0]! : Buffer.concat(parts)));
  });
  // Keep-alive connections must survive the pauses between rounds (node's default is 5 s).
  server.keepAliveTimeout = 120_000;
  server.headersTimeout = 130_000;
  server.requestTimeout = 0;
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    process.stdout.write(`PORT ${port}\n`);
  });
  const stop = () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  // stdin is a pipe from the parent: when it closes, the parent is gone (even kill -9); do not linger.
  process.stdin.on('end', stop);
  process.stdin.on('error', stop);
  process.stdin.resume();
}

main();
