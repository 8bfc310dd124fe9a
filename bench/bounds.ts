/**
 * Hostile single requests (issue 18 items 2, 3, 4, 6, 7): how long each blocks the event loop,
 * how long /health waits meanwhile, and what a held stream keeps in memory. In-process: the real
 * app (buildApp) on loopback in front of a scripted upstream, node --expose-gc for the heap
 * figures. Only public entry points (buildApp, loadConfig), so the same script measures an older
 * checkout for the before column.
 *
 *   node --expose-gc --import tsx bench/bounds.ts [--only=schemas,responses,...]
 */
import { completion, during as duringAt, scriptedApp } from './lib/scripted-app.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');
const only = process.argv
  .find((a) => a.startsWith('--only='))
  ?.slice(7)
  .split(',');

const pair = await scriptedApp(
  { TOOLPROOF_STREAM_KEEPALIVE_MS: '1000' },
  { defaults: { forceToolUse: false, maxRetries: 1 } },
);
const { origin } = pair;

const sse = (choices: unknown[]) =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm1', choices })}\n\n`;

/** Runs `work`, polling /health meanwhile: wall time, the loop's longest delay, /health's longest wait. */
const during = <T>(work: () => Promise<T>) => duringAt(origin, work);

/** Bytes the client has received so far on the latest post (the held-stream probes read it). */
let received = 0;

/** Posts `body` (already serialized: that work is the client's, not measured) and drains the answer. */
const post = (path: string, body: string) =>
  fetch(`${origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body,
  }).then(async (r) => {
    let bytes = 0;
    let head = '';
    for await (const c of r.body as unknown as AsyncIterable<Uint8Array>) {
      if (head.length < 2000) head += Buffer.from(c).toString();
      bytes += c.length;
      received = bytes;
    }
    return { status: r.status, bytes, head: head.slice(0, 300) };
  });

const rows: Array<Record<string, unknown>> = [];
const report = (name: string, r: Record<string, unknown>) => {
  const row = { case: name, ...r };
  rows.push(row);
  process.stdout.write(`${JSON.stringify(row)}\n`);
};
const ms = (n: number) => Math.round(n);
const want = (name: string) => !only || only.includes(name);

// Item 2: 20 called tools, each a distinct schema of 90 pattern properties (1,800 patterns).
if (want('schemas')) {
  let seed = 0;
  const measure = async () => {
    const tools: unknown[] = [];
    const calls: unknown[] = [];
    const s = seed++;
    for (let t = 0; t < 20; t++) {
      const properties: Record<string, unknown> = {};
      const args: Record<string, string> = {};
      for (let j = 0; j < 90; j++) {
        properties[`p${j}`] = {
          type: 'string',
          pattern: `^[a-z]{1,${8 + (j % 9)}}-${s}-${t}-${j}(foo|bar)[0-9]+$`,
        };
        args[`p${j}`] = `abc-${s}-${t}-${j}foo1`;
      }
      tools.push({
        type: 'function',
        function: { name: `t${t}`, parameters: { type: 'object', properties } },
      });
      calls.push({
        id: `c${t}`,
        type: 'function',
        function: { name: `t${t}`, arguments: JSON.stringify(args) },
      });
    }
    pair.handler = (_b, res) => res.end(completion({ role: 'assistant', content: null, tool_calls: calls }));
    const body = JSON.stringify({ model: 'm1', messages: [{ role: 'user', content: 'go' }], tools });
    return during(() => post('/v1/chat/completions', body));
  };
  await measure(); // warm-up (JIT)
  const r = await measure();
  report('schemas: 20 called tools x 90 patterns, distinct', {
    wallMs: ms(r.wallMs),
    loopMs: ms(r.loopMs),
    healthMs: ms(r.healthMs),
  });
}

// Item 3a: /v1/responses with 30k consecutive function_call items.
if (want('responses')) {
  pair.handler = (_b, res) => res.end(completion({ role: 'assistant', content: 'ok' }));
  const input = [
    { type: 'message', role: 'user', content: 'go' },
    ...Array.from({ length: 30_000 }, (_, i) => ({
      type: 'function_call',
      call_id: `c${i}`,
      name: 'f',
      arguments: '{}',
    })),
  ];
  const tools = [{ type: 'function', name: 'f', parameters: { type: 'object' } }];
  const body = JSON.stringify({ model: 'm1', input, tools });
  const r = await during(() => post('/v1/responses', body));
  report('responses: 30k function_call items', {
    wallMs: ms(r.wallMs),
    loopMs: ms(r.loopMs),
    healthMs: ms(r.healthMs),
    status: (r.result as { status: number }).status,
  });
}

// Item 3b: one upstream chunk with 40k choices, each with an unparseable tool-call leak.
if (want('choices')) {
  const n = 40_000;
  const choices = Array.from({ length: n }, (_, i) => ({
    index: i,
    delta: { role: 'assistant', content: `a${i} <tool_call>{"name": "nope", "arguments": {}}</tool_call>` },
    finish_reason: 'stop',
  }));
  const text = `${sse(choices)}data: [DONE]\n\n`;
  pair.handler = (_b, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(text);
  };
  const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }];
  const body = JSON.stringify({
    model: 'm1',
    stream: true,
    n: 128, // the most a request may ask for: the other 39,872 choices are dropped
    messages: [{ role: 'user', content: 'go' }],
    tools,
  });
  const r = await during(() => post('/v1/chat/completions', body));
  report('choices: one chunk with 40k choices', {
    wallMs: ms(r.wallMs),
    loopMs: ms(r.loopMs),
    healthMs: ms(r.healthMs),
  });
}

// Item 4: a history turn with 130k tool calls, a Messages turn with 170k tool_result blocks.
if (want('spread')) {
  pair.handler = (_b, res) => res.end(completion({ role: 'assistant', content: 'done' }));
  const calls = Array.from({ length: 130_000 }, (_, i) => ({
    id: `c${i}`,
    type: 'function',
    function: { name: 'f', arguments: '{}' },
  }));
  const chat = await post(
    '/v1/chat/completions',
    JSON.stringify({
      model: 'm1',
      messages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: null, tool_calls: calls },
        ...calls.map((c) => ({ role: 'tool', tool_call_id: c.id, content: 'ok' })),
      ],
    }),
  );
  const uses = Array.from({ length: 170_000 }, (_, i) => ({
    type: 'tool_use',
    id: `t${i}`,
    name: 'f',
    input: {},
  }));
  const messages = await post(
    '/v1/messages',
    JSON.stringify({
      model: 'm1',
      max_tokens: 8,
      messages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: uses },
        {
          role: 'user',
          content: uses.map((u) => ({ type: 'tool_result', tool_use_id: u.id, content: 'ok' })),
        },
      ],
    }),
  );
  report('spread: 130k history calls / 170k tool_result blocks', {
    chat: chat.status,
    messages: messages.status,
  });
}

/**
 * Heap and RSS growth while one stream is held open after `send` wrote its body (then released).
 * Measured once the upstream's writes are flushed and toolproof has read everything (the
 * upstream runs in this process: its unsent buffers would count otherwise).
 */
async function heldStream(send: (write: (text: string) => Promise<void>) => Promise<void>) {
  let release = () => {};
  let sent: Promise<void> = Promise.resolve();
  pair.handler = (_b, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const write = (text: string) => new Promise<void>((r) => res.write(text, () => r()));
    sent = send(write);
    release = () => res.end(`${sse([{ index: 0, delta: {}, finish_reason: 'stop' }])}data: [DONE]\n\n`);
  };
  received = 0;
  gc!();
  const heap0 = process.memoryUsage().heapUsed;
  const rss0 = process.memoryUsage().rss;
  const reading = post(
    '/v1/chat/completions',
    JSON.stringify({
      model: 'm1',
      stream: true,
      messages: [{ role: 'user', content: 'go' }],
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
    }),
  );
  await new Promise((r) => setTimeout(r, 100));
  await sent;
  // toolproof has read what was flushed once the client's byte count stops moving.
  for (let last = -1; last !== received; ) {
    last = received;
    await new Promise((r) => setTimeout(r, 500));
  }
  gc!();
  const heapMb = (process.memoryUsage().heapUsed - heap0) / 1e6;
  const rssMb = (process.memoryUsage().rss - rss0) / 1e6;
  const beforeRelease = received;
  release();
  const { bytes } = await reading;
  return {
    heapMb: Math.round(heapMb * 10) / 10,
    rssMb: Math.round(rssMb),
    clientBytesWhileHeld: beforeRelease,
    bytes,
  };
}

// Item 6: 4 MB of prose in 9-character deltas, then the stream waits (held for a possible retry).
if (want('held-prose')) {
  const r = await heldStream(async (write) => {
    let text = sse([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]);
    for (let i = 0; i < (4 * 1024 * 1024) / 9; i++) {
      text += sse([
        { index: 0, delta: { content: `w${String(i % 1e6).padStart(6, '0')} ` }, finish_reason: null },
      ]);
      if (text.length > 1 << 20) {
        await write(text);
        text = '';
      }
    }
    await write(text);
  });
  report('held prose: 4 MB in 9-char deltas, held open', r);
}

// Item 6: 16 MB of call arguments in 1 KB fragments, held open.
if (want('held-args')) {
  const r = await heldStream(async (write) => {
    let text = sse([{ index: 0, delta: { role: 'assistant', content: null }, finish_reason: null }]);
    text += sse([
      {
        index: 0,
        delta: {
          tool_calls: [
            { index: 0, id: 'c1', type: 'function', function: { name: 'f', arguments: '{"a": "' } },
          ],
        },
        finish_reason: null,
      },
    ]);
    for (let i = 0; i < 16 * 1024; i++) {
      text += sse([
        {
          index: 0,
          delta: { tool_calls: [{ index: 0, function: { arguments: 'x'.repeat(1024) } }] },
          finish_reason: null,
        },
      ]);
      if (text.length > 1 << 20) {
        await write(text);
        text = '';
      }
    }
    await write(text);
  });
  report('held args: 16 MB in 1 KB fragments, held open', r);
}

// Item 7: a held stream whose upstream takes 3 s to answer: when do the first bytes arrive?
if (want('silence')) {
  pair.handler = (_b, res) => {
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(
        `${sse([{ index: 0, delta: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }])}data: [DONE]\n\n`,
      );
    }, 3000);
  };
  const firstByte = async (path: string, body: unknown) => {
    const start = performance.now();
    const res = await fetch(`${origin}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify(body),
    });
    const headersMs = performance.now() - start;
    await res.text();
    return ms(headersMs);
  };
  const msgs = [{ role: 'user', content: 'hi' }];
  report('silence: ms to headers (upstream answers at 3 s; keep-alive 1 s)', {
    chat: await firstByte('/v1/chat/completions', { model: 'm1', stream: true, messages: msgs }),
  });
}

await pair.close();
