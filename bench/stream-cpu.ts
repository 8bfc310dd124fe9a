/**
 * CPU per streamed request, everything in one process: an in-process upstream that writes a
 * whole stream in one write, toolproof (buildApp) or a bare node:http hop in front of it, and a
 * client reading every body to the end, `c` at a time. The process's CPU time (user + system,
 * process.cpuUsage) per request is load generator + upstream + proxy; the first two are the same
 * on both sides, so "toolproof - hop" is what toolproof costs beyond a bare Node hop. In one
 * process the upstream's write is done before the proxy reads, so each stream arrives in reads
 * of the same size run after run: a steadier figure than `npm run bench` on a shared machine,
 * for A/B runs of a change (run it from each tree, alternating).
 *
 * `npx tsx bench/stream-cpu.ts [--events=500] [--c=8] [--requests=400] [--rounds=6] [--cases=tools,plain,json,agent]`
 * (agent: a streamed tool turn with a 32 KB history)
 *
 * `--tracing[=http/json]`: a third side, toolproof with OpenTelemetry tracing on (docs/tracing.md),
 * every request sampled (the client sends a sampled traceparent), exporting OTLP (http/protobuf by
 * default) to an in-process sink that drains each POST unread; printed: what tracing adds per
 * request, over the whole process and over toolproof's own share (toolproof - hop).
 * `--sampler=always_off` (any OTEL_TRACES_SAMPLER): what a request the sampler leaves out costs.
 *
 * `--capture-ab`: a side with the capture ring off (TOOLPROOF_CAPTURE_MB=0; docs/inspect.md), the
 * "toolproof" side keeping the default ring; printed: what capture adds per request, over the
 * whole process and over toolproof's own share (toolproof - hop).
 */
import { Agent, createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
import { buildApp } from '../server/app.js';
import { loadConfig } from '../server/config.js';
import { historyBody } from './lib/fixtures.js';

const args = new Map(
  process.argv.slice(2).map((a) => {
    const [k, v] = a.replace(/^--/, '').split('=');
    return [k!, v ?? ''];
  }),
);
const EVENTS = Number(args.get('events') ?? 500);
const C = Number(args.get('c') ?? 8);
const REQUESTS = Number(args.get('requests') ?? 400);
const ROUNDS = Number(args.get('rounds') ?? 6);
const CASES = (args.get('cases') ?? 'tools,plain').split(',');
const TRACING = args.has('tracing');
const TRACING_PROTOCOL = args.get('tracing') || 'http/protobuf';
const CAPTURE_AB = args.has('capture-ab');

const base = { id: 'chatcmpl-cpu', object: 'chat.completion.chunk', created: 1, model: 'm1' };
const sse = (o: unknown) => `data: ${JSON.stringify(o)}\n\n`;

function toolStream(n: number): string {
  const words = Array.from({ length: n - 3 }, (_, i) => `w${i} `);
  let out = sse({
    ...base,
    choices: [
      {
        index: 0,
        delta: {
          role: 'assistant',
          content: null,
          tool_calls: [
            { index: 0, id: 'call_1', type: 'function', function: { name: 'final_answer', arguments: '' } },
          ],
        },
        finish_reason: null,
      },
    ],
  });
  const pieces = ['{"answer": "', ...words, '"}'];
  for (const p of pieces)
    out += sse({
      ...base,
      choices: [
        { index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: p } }] }, finish_reason: null },
      ],
    });
  out += sse({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] });
  return `${out}data: [DONE]\n\n`;
}

function plainStream(n: number): string {
  let out = '';
  for (let i = 0; i < n; i++)
    out += sse({
      ...base,
      choices: [
        {
          index: 0,
          delta: i === 0 ? { role: 'assistant', content: 'tok0 ' } : { content: `tok${i} ` },
          finish_reason: i === n - 1 ? 'stop' : null,
        },
      ],
    });
  return `${out}data: [DONE]\n\n`;
}

const TOOL_JSON = JSON.stringify({
  id: 'chatcmpl-cpu',
  object: 'chat.completion',
  created: 1,
  model: 'm1',
  choices: [
    {
      index: 0,
      message: {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_1',
            type: 'function',
            function: { name: 'final_answer', arguments: '{"answer":"The weather is fine."}' },
          },
        ],
      },
      finish_reason: 'tool_calls',
    },
  ],
  usage: { prompt_tokens: 20, completion_tokens: 9, total_tokens: 29 },
});

const TOOL_SSE = toolStream(EVENTS);
const PLAIN_SSE = plainStream(EVENTS);

const tool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather of a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};
const messages = [
  { role: 'system', content: 'You are a concise assistant.' },
  { role: 'user', content: 'What is the weather in Paris? Keep it short.' },
];
const BODIES: Record<string, string> = {
  tools: JSON.stringify({ model: 'm1', messages, tools: [tool], stream: true }),
  plain: JSON.stringify({ model: 'm1', messages, stream: true }),
  json: JSON.stringify({ model: 'm1', messages, tools: [tool] }),
  // An agent's turn: a 32 KB history, a tool, streamed (the tool stream's answer).
  agent: JSON.stringify({
    ...(JSON.parse(historyBody(32 * 1024).toString()) as object),
    model: 'm1',
    tools: [tool],
    stream: true,
  }),
};

function listen(server: Server): Promise<number> {
  return new Promise((r) => server.listen(0, '127.0.0.1', () => r((server.address() as AddressInfo).port)));
}

async function main(): Promise<void> {
  const upstream = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => {
      const body = Buffer.concat(parts).toString();
      if (!body.includes('"stream":true')) {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': TOOL_JSON.length });
        res.end(TOOL_JSON);
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(body.includes('"tools":[') ? TOOL_SSE : PLAIN_SSE);
    });
  });
  const upPort = await listen(upstream);

  const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });
  const hop = createServer((req, res) => {
    const up = httpRequest(
      { host: '127.0.0.1', port: upPort, method: req.method, path: req.url, headers: req.headers, agent },
      (upRes) => {
        res.writeHead(upRes.statusCode ?? 502, upRes.headers);
        upRes.pipe(res);
      },
    );
    // A reset upstream connection fails this request (the burst reports its status), not the run.
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  const hopPort = await listen(hop);

  const app = await buildApp(
    loadConfig({
      TOOLPROOF_UPSTREAM_URL: `http://127.0.0.1:${upPort}/v1`,
      TOOLPROOF_LOG_LEVEL: 'warn',
      ...(args.get('capture-mb') ? { TOOLPROOF_CAPTURE_MB: args.get('capture-mb')! } : {}),
    }),
    { logger: false },
  );
  app.toolproof.modelLabels.serve?.(['m1']);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const tpPort = (app.server.address() as AddressInfo).port;

  // --tracing: the same app with the OTEL_* variables set, exporting to a sink that only drains.
  let spans = 0;
  const sink = createServer((req, res) => {
    spans++;
    req.resume();
    req.on('end', () => res.end('{}'));
  });
  const sinkPort = TRACING ? await listen(sink) : 0;
  const traced = TRACING
    ? await buildApp(
        loadConfig({
          TOOLPROOF_UPSTREAM_URL: `http://127.0.0.1:${upPort}/v1`,
          TOOLPROOF_LOG_LEVEL: 'warn',
          OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${sinkPort}`,
          OTEL_EXPORTER_OTLP_PROTOCOL: TRACING_PROTOCOL,
          ...(args.get('sampler') ? { OTEL_TRACES_SAMPLER: args.get('sampler')! } : {}),
        }),
        { logger: false },
      )
    : undefined;
  let tracedPort = 0;
  if (traced) {
    traced.toolproof.modelLabels.serve?.(['m1']);
    await traced.listen({ host: '127.0.0.1', port: 0 });
    tracedPort = (traced.server.address() as AddressInfo).port;
  }

  const capOff = CAPTURE_AB
    ? await buildApp(
        loadConfig({
          TOOLPROOF_UPSTREAM_URL: `http://127.0.0.1:${upPort}/v1`,
          TOOLPROOF_LOG_LEVEL: 'warn',
          TOOLPROOF_CAPTURE_MB: '0',
        }),
        { logger: false },
      )
    : undefined;
  let capOffPort = 0;
  if (capOff) {
    capOff.toolproof.modelLabels.serve?.(['m1']);
    await capOff.listen({ host: '127.0.0.1', port: 0 });
    capOffPort = (capOff.server.address() as AddressInfo).port;
  }

  type SideName = 'toolproof' | 'hop' | 'traced' | 'capoff';
  const pools: Record<string, Pool> = {
    toolproof: new Pool(`http://127.0.0.1:${tpPort}`, { connections: C, pipelining: 1 }),
    hop: new Pool(`http://127.0.0.1:${hopPort}`, { connections: C, pipelining: 1 }),
    ...(traced
      ? { traced: new Pool(`http://127.0.0.1:${tracedPort}`, { connections: C, pipelining: 1 }) }
      : {}),
    ...(capOff
      ? { capoff: new Pool(`http://127.0.0.1:${capOffPort}`, { connections: C, pipelining: 1 }) }
      : {}),
  };
  const sides: SideName[] = ['toolproof', 'hop'];
  if (traced) sides.push('traced');
  if (capOff) sides.push('capoff');

  async function burst(side: SideName, body: string, n: number): Promise<void> {
    let left = n;
    const worker = async () => {
      while (left-- > 0) {
        const r = await pools[side]!.request({
          method: 'POST',
          path: '/v1/chat/completions',
          // Every side gets the same headers; a sampled traceparent makes the traced side record all.
          headers: {
            'content-type': 'application/json',
            traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
          },
          body,
        });
        if (r.statusCode !== 200) throw new Error(`${side}: status ${r.statusCode}: ${await r.body.text()}`);
        for await (const _ of r.body);
      }
    };
    await Promise.all(Array.from({ length: C }, worker));
  }

  for (const name of CASES) {
    const body = BODIES[name];
    if (!body) throw new Error(`unknown case ${name}`);
    // Warm-up: V8 optimizes for seconds.
    for (let i = 0; i < 4; i++) for (const side of sides) await burst(side, body, REQUESTS);
    const cpu: Record<string, number[]> = { toolproof: [], hop: [], traced: [], capoff: [] };
    for (let r = 0; r < ROUNDS; r++) {
      // Each round starts with another side: drift hits every side alike.
      const order = sides.map((_, i) => sides[(i + r) % sides.length]!);
      for (const side of order) {
        const t0 = process.cpuUsage();
        await burst(side, body, REQUESTS);
        const d = process.cpuUsage(t0);
        cpu[side]!.push((d.user + d.system) / REQUESTS);
      }
    }
    const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const tp = med(cpu.toolproof!);
    const hp = med(cpu.hop!);
    const per = name === 'json' ? 1 : EVENTS;
    console.log(
      `${name}: µs per request (median of ${ROUNDS}; load generator + upstream + proxy) toolproof ${tp.toFixed(0)} [${cpu.toolproof!.map((x) => x.toFixed(0)).join(' ')}], hop ${hp.toFixed(0)} [${cpu.hop!.map((x) => x.toFixed(0)).join(' ')}]; toolproof - hop ${(tp - hp).toFixed(0)} µs per request, ${((tp - hp) / per).toFixed(3)} µs per ${per === 1 ? 'request' : 'event'}`,
    );
    if (traced) {
      const tr = med(cpu.traced!);
      console.log(
        `${name}: tracing on (${TRACING_PROTOCOL}) ${tr.toFixed(0)} µs per request [${cpu.traced!.map((x) => x.toFixed(0)).join(' ')}]: +${(tr - tp).toFixed(0)} µs over tracing off; x${(tr / tp).toFixed(3)} of the whole process, x${((tr - hp) / (tp - hp)).toFixed(3)} of toolproof's own share (toolproof - hop)`,
      );
    }
    if (capOff) {
      const off = med(cpu.capoff!);
      console.log(
        `${name}: capture off ${off.toFixed(0)} µs per request [${cpu.capoff!.map((x) => x.toFixed(0)).join(' ')}]; capture on (toolproof) +${(tp - off).toFixed(0)} µs: x${(tp / off).toFixed(3)} of the whole process, x${((tp - hp) / (off - hp)).toFixed(3)} of toolproof's own share (toolproof - hop)`,
      );
    }
  }
  if (capOff) {
    await pools.capoff!.close();
    await capOff.close();
  }
  if (traced) {
    await traced.toolproof.tracing?.flush();
    console.log(`tracing sink: ${spans} OTLP export requests received`);
    await pools.traced!.close();
    await traced.close();
    sink.close();
  }
  await pools.toolproof!.close();
  await pools.hop!.close();
  await app.close();
  hop.close();
  upstream.close();
  agent.destroy();
}

await main();
