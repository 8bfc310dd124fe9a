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
 * - `"stream":true`: 50 SSE chunks written back-to-back, then `data: [DONE]`; with tools, a
 *   streamed final_answer call (its arguments one token per event); the markers of
 *   fixtures.ts (`BENCH-CHUNKS-<n>`, `BENCH-TRICKLE`, `BENCH-TICK-<ms>`, `BENCH-HOLD`) change the
 *   count and pace (back-to-back, the default, reaches the proxy in 1-2 reads a stream; trickled,
 *   each event is a write of its own a tick apart, as llama-server and vLLM write a token's
 *   event as it is decoded, and reaches it as about one read an event),
 *   `BENCH-CALL-<tool>.<param>` streams a call to that tool instead (fixtures.ts agentTurn);
 * - otherwise: a small fixed chat.completion.
 * GET /v1/models and /health answer too (readiness checks), GET /bench/release ends the held
 * streams; anything else is a 404.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import {
  FINAL_ANSWER_TEXT,
  finalAnswerPieces,
  PLAIN_ANSWER_TEXT,
  STREAM_CHUNKS,
  TRICKLE_MS,
} from './fixtures.js';
import { serveChild } from './child-server.js';

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

/** The SSE events of one stream plus the terminator, rendered once per shape. */
const rendered = new Map<string, readonly string[]>();
function streamEvents(
  chunks: number,
  tools: boolean,
  call?: { name: string; param: string },
): readonly string[] {
  const key = `${chunks}:${tools}:${call ? `${call.name}.${call.param}` : ''}`;
  let events = rendered.get(key);
  if (events) return events;
  const out: string[] = [];
  if (tools) {
    const { pieces } = finalAnswerPieces(chunks);
    // BENCH-CALL-<name>.<param>: a call to that tool, its tokens streamed into that argument.
    if (call) pieces[1] = `{${JSON.stringify(call.param)}:"`;
    pieces.forEach((args, i) => {
      const tc =
        i === 0
          ? {
              index: 0,
              id: 'call_bench0001',
              type: 'function',
              function: { name: call?.name ?? 'final_answer', arguments: '' },
            }
          : { index: 0, function: { arguments: args } };
      const delta = i === 0 ? { role: 'assistant', content: null, tool_calls: [tc] } : { tool_calls: [tc] };
      out.push(chunk(delta, i === pieces.length - 1 ? 'tool_calls' : null));
    });
  } else {
    for (let i = 0; i < chunks; i++) {
      const delta: Record<string, unknown> =
        i === 0 ? { role: 'assistant', content: 'tok0 ' } : { content: `tok${i} ` };
      out.push(chunk(delta, i === chunks - 1 ? 'stop' : null));
    }
  }
  out.push('data: [DONE]\n\n');
  events = out;
  rendered.set(key, events);
  return events;
}

/**
 * Streams being written one event per tick (a tick every TRICKLE_MS, or as BENCH-TICK-<ms> says:
 * one set and one interval per tick length, all its streams written in the same tick, as a
 * backend writes each sequence of a batch after each decode step), and streams held until
 * /bench/release.
 */
interface Open {
  res: ServerResponse;
  events: readonly string[];
  next: number;
}
const trickling = new Map<number, { streams: Set<Open>; ticker: NodeJS.Timeout }>();
const held = new Set<Open>();
const HELD_FIRST_EVENTS = 5;

function tick(ms: number): void {
  const t = trickling.get(ms);
  if (!t) return;
  for (const s of t.streams) {
    s.res.write(s.events[s.next++]!);
    if (s.next === s.events.length) {
      s.res.end();
      t.streams.delete(s);
    }
  }
  if (t.streams.size === 0) {
    clearInterval(t.ticker);
    trickling.delete(ms);
  }
}

/** The set of streams trickling every `ms`, its interval started if it was not running. */
function tricklingEvery(ms: number): Set<Open> {
  let t = trickling.get(ms);
  if (!t) {
    t = { streams: new Set(), ticker: setInterval(tick, ms, ms) };
    trickling.set(ms, t);
  }
  return t.streams;
}

function startStream(res: ServerResponse, body: Buffer): void {
  let chunks = STREAM_CHUNKS;
  let mode: 'burst' | 'trickle' | 'hold' = 'burst';
  let holdAfter = HELD_FIRST_EVENTS;
  let call: { name: string; param: string } | undefined;
  let tickMs = TRICKLE_MS;
  if (body.indexOf('BENCH-') !== -1) {
    const text = body.toString('utf8');
    const n = /BENCH-CHUNKS-(\d+)/.exec(text);
    if (n) chunks = Math.max(3, Number(n[1]));
    if (text.includes('BENCH-TRICKLE')) mode = 'trickle';
    if (text.includes('BENCH-HOLD')) mode = 'hold';
    const after = /BENCH-HOLD-AFTER-(\d+)/.exec(text);
    if (after) holdAfter = Number(after[1]);
    const named = /BENCH-CALL-(\w+)\.(\w+)/.exec(text);
    if (named) call = { name: named[1]!, param: named[2]! };
    const every = /BENCH-TICK-(\d+)/.exec(text);
    if (every) tickMs = Math.max(1, Number(every[1]));
  }
  const events = streamEvents(chunks, body.indexOf('"tools":[') !== -1, call);
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  if (mode === 'burst') {
    for (const event of events) res.write(event);
    res.end();
    return;
  }
  // A held stream gets a few events first, so that even the forced final_answer stream has
  // produced content (the client's first byte) before it waits.
  const first = mode === 'hold' ? Math.min(holdAfter, events.length - 1) : 1;
  const open: Open = { res, events, next: first };
  for (let i = 0; i < first; i++) res.write(events[i]!);
  const set = mode === 'hold' ? held : tricklingEvery(tickMs);
  set.add(open);
  res.once('close', () => set.delete(open));
}

function release(): number {
  const n = held.size;
  for (const s of held) {
    for (let i = s.next; i < s.events.length; i++) s.res.write(s.events[i]!);
    s.res.end();
  }
  held.clear();
  return n;
}

function sendJson(res: ServerResponse, status: number, body: Buffer): void {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': body.length });
  res.end(body);
}

function handle(req: IncomingMessage, res: ServerResponse, body: Buffer): void {
  const url = req.url ?? '/';
  if (req.method === 'POST' && url === '/v1/chat/completions') {
    if (body.indexOf('"stream":true') !== -1) {
      startStream(res, body);
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
  if (req.method === 'GET' && url === '/bench/held') {
    sendJson(res, 200, Buffer.from(JSON.stringify({ held: held.size })));
    return;
  }
  if (req.method === 'GET' && url === '/bench/release') {
    sendJson(res, 200, Buffer.from(JSON.stringify({ released: release() })));
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
  serveChild(server);
}

main();
