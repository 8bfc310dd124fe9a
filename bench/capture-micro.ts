/**
 * Capture's own CPU per request, without the rest of toolproof: the recorder's calls of one
 * request (server/capture/recorder.ts, in the order the server makes them) replayed against a
 * 10 MB ring, with the inputs a request hands them made fresh each time (the client's bytes, the
 * body as sent, the upstream's reads, the client's frames, the headers), so what the ring keeps
 * is young memory the garbage collector copies and promotes as in a server. Each side is a
 * process of its own (`node --max-semi-space-size=8`, as `npm start`), the rounds alternate,
 * the order rotating, and CPU is the process's own (`process.cpuUsage`, collections included):
 * - `none`: the same inputs made and the same calls, no record (capture off: every call returns);
 * - `after`: this tree's build (bench/results/.build, compiled as `npm run bench` does);
 * - `before`: `--before=DIR`, another build (a copy of bench/results/.build made before a change).
 * Capture's cost is a side's figure minus `none`'s. What it leaves out: the response hook's
 * own call (CapturingResponse; the frames go to the writer directly). What it counts as capture's
 * as the bench's server pays it (one replica, logs above info): the session key (a build that
 * works it out per request, the hash of the opening messages; one that defers it to the first
 * read, none) and the harness summary (made for the capture alone at those log levels; a build
 * that finds a plain trace's copy makes none). A figure steady enough to compare changes of a few µs on a loaded
 * machine, where a whole server's A/B (bench/capture-cpu.ts) spreads by ±20%.
 *
 *   npx tsx bench/capture-micro.ts [--before=DIR] [--cases=short,long,agent] [--rounds=12] [--requests=4000]
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { affinityKey } from '../server/affinity.js';
import { harnessOf } from '../server/chat/harness-summary.js';
import { newTrace } from '../server/chat/trace.js';
import { BUILD_DIR, prepareServer } from './lib/build.js';
import { agentTurn, toolsStreamBody } from './lib/fixtures.js';
import { median } from './lib/overhead-ab.js';

/** What a chat attempt sends beside its body (chat/start.ts forwardHeaders). */
const SENT_HEADERS = {
  'x-request-id': 'bench-request-0001',
  traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
  'content-type': 'application/json',
};

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = new Map(
  process.argv.slice(2).map((a) => {
    const [k, v] = a.replace(/^--/, '').split('=');
    return [k!, v ?? ''];
  }),
);

/** One case's inputs: what a request hands the recorder. */
interface Shape {
  headers: Record<string, string>;
  body: Buffer;
  /** The body parsed (the request's `body`, the call's `original`). */
  parsed: Record<string, unknown>;
  /** Reads of the upstream's stream (bytes) and the events each completed. */
  reads: { bytes: Buffer; events: number }[];
  /** The client's frames, as objects toolproof serializes. */
  frames: object[];
}

function sseEvent(delta: object, finish: string | null): string {
  return `data: ${JSON.stringify({
    id: 'chatcmpl-bench-stream',
    object: 'chat.completion.chunk',
    created: 1_760_000_000,
    model: 'bench-model',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  })}\n\n`;
}

function shapeOf(name: string): Shape {
  const events = name === 'short' ? 8 : name === 'long' ? 500 : 100;
  const agent = name === 'agent' ? agentTurn(events) : undefined;
  const headers: Record<string, string> = {
    host: '127.0.0.1:8080',
    connection: 'keep-alive',
    ...(agent?.headers ?? { authorization: 'Bearer sk-bench' }),
    'content-type': 'application/json',
  };
  const body = agent?.body ?? toolsStreamBody({ chunks: events });
  headers['content-length'] = String(body.length);
  const upstream: string[] = [];
  const frames: object[] = [];
  for (let i = 0; i < events; i++) {
    const args = i === 0 ? '' : `tok${i} `;
    upstream.push(
      sseEvent(
        {
          tool_calls: [
            i === 0
              ? {
                  index: 0,
                  id: 'call_1',
                  type: 'function',
                  function: { name: 'run_shell_command', arguments: '' },
                }
              : { index: 0, function: { arguments: args } },
          ],
        },
        i === events - 1 ? 'tool_calls' : null,
      ),
    );
    frames.push({
      id: 'chatcmpl-bench-stream',
      object: 'chat.completion.chunk',
      created: 1_760_000_000,
      model: 'bench-model',
      choices: [
        {
          index: 0,
          delta: agent ? { tool_calls: [{ index: 0, function: { arguments: args } }] } : { content: args },
          logprobs: null,
          finish_reason: null,
        },
      ],
    });
  }
  upstream.push('data: [DONE]\n\n');
  // The upstream's bytes in reads of up to 16 KB (a socket's), each with the events it ended.
  const reads: Shape['reads'] = [];
  let cur = '';
  let n = 0;
  for (const e of upstream) {
    cur += e;
    n++;
    if (cur.length >= 16 * 1024) {
      reads.push({ bytes: Buffer.from(cur), events: n });
      cur = '';
      n = 0;
    }
  }
  if (cur) reads.push({ bytes: Buffer.from(cur), events: n });
  return { headers, body, parsed: JSON.parse(body.toString()) as Record<string, unknown>, reads, frames };
}

type Recorder = typeof import('../server/capture/recorder.js');
type Ring = typeof import('../server/capture/ring.js');
type EffectMakers = Pick<
  typeof import('../policies/force-tool-use/effects.js'),
  'forcedEffect' | 'finalAnswerEffect' | 'schemaAnswerEffect'
>;

/** A child: runs `<case> <n>` lines from stdin, prints CPU µs per request for each. */
async function child(dir: string | undefined): Promise<void> {
  const rec: Recorder | undefined = dir
    ? await import(pathToFileURL(join(dir, 'server/capture/recorder.js')).href)
    : undefined;
  const ringMod: Ring | undefined = dir
    ? await import(pathToFileURL(join(dir, 'server/capture/ring.js')).href)
    : undefined;
  // The build's own effects where it makes them once (policies' constantEffect): as its server
  // hands them to the capture; else made fresh per request, as a build before that made them.
  const effectsJs = dir ? join(dir, 'policies/force-tool-use/effects.js') : '';
  const fx: EffectMakers | undefined =
    dir && readFileSync(effectsJs, 'utf8').includes('forcedEffect')
      ? await import(pathToFileURL(effectsJs).href)
      : undefined;
  const ring = ringMod
    ? new ringMod.CaptureRing({ maxBytes: 10 * 1024 * 1024, textChars: 256 * 1024 })
    : undefined;
  // Whether this build's attempt.ts sends (and hands the capture) the body as bytes.
  const recorderJs = dir ? readFileSync(join(dir, 'server/capture/recorder.js'), 'utf8') : '';
  // Whether this build works a session of the opening messages out when read, not per request.
  const sessionWhenRead = recorderJs.includes('namedSessionKey');
  // Whether this build takes harnessOf itself (a plain trace's summary then found, not made).
  const harnessFn = recorderJs.includes('plainHarness');
  const sentAsBytes =
    dir !== undefined &&
    readFileSync(join(dir, 'server/chat/attempt.js'), 'utf8').includes('Buffer.from(stringifyJson(');
  const shapes = new Map<string, Shape>();
  let seq = 0;
  const one = (s: Shape): void => {
    const id = `req-${(seq++).toString(36)}`;
    const headers = { ...s.headers };
    const request = {
      id,
      method: 'POST',
      url: '/v1/chat/completions',
      headers,
      body: s.parsed,
      tpStart: performance.now(),
      tpCapture: undefined,
    };
    const call = {
      api: 'chat',
      original: s.parsed,
      trace: newTrace(),
      discardedTokens: 0,
      route: { client: { label: 'http://127.0.0.1:8000/v1' } },
      phase: { request: { stream: true } },
      capture: undefined,
    } as unknown as Parameters<Recorder['captureEffects']>[0];
    // A fresh copy of the client's bytes (the body parser's), of the body as sent (a string of
    // its own, encoded as the transport sends it: every side), of each read and frame. The
    // capture is handed what the build's attempt.ts hands it: the encoded bytes since it sends
    // those (a Buffer), the string before.
    const clientBytes = Buffer.from(s.body);
    const sentText = s.body.toString('utf8');
    const sentBytes = Buffer.from(sentText);
    const sent = sentAsBytes ? sentBytes : sentText;
    if (rec && ring)
      rec.beginCapture(
        ring,
        request as never,
        call,
        sessionWhenRead ? undefined : affinityKey(headers, s.parsed, s.parsed as never),
        clientBytes,
      );
    const forced = fx
      ? [fx.forcedEffect('required')]
      : [{ policy: 'force-tool-use', kind: 'forced', count: 1, detail: { toolChoice: 'required' } }];
    rec?.captureEffects(call, forced as never);
    call.trace.attempts++;
    const t0 = performance.now();
    // A build from before the headers as sent were kept takes (call, body, sentAt).
    if (rec && rec.captureAttemptSent.length >= 4) rec.captureAttemptSent(call, sent, SENT_HEADERS, t0);
    else
      (rec?.captureAttemptSent as unknown as ((c: unknown, b: unknown, t: number) => void) | undefined)?.(
        call,
        sent,
        t0,
      );
    rec?.captureAttemptOpened(call, t0, { status: 200 });
    const w = call.capture;
    let r = 0;
    let f = 0;
    for (const read of s.reads) {
      const bytes = Buffer.from(read.bytes);
      rec?.captureRead(call, bytes, read.events);
      // The frames those events became, written as they come.
      const until = Math.min(s.frames.length, f + read.events);
      for (; f < until; f++) {
        const frame = `data: ${JSON.stringify(s.frames[f])}\n\n`;
        w?.client(frame);
      }
      r++;
    }
    w?.client('data: [DONE]\n\n');
    const end = fx
      ? [fx.finalAnswerEffect(false, false, false, undefined), fx.schemaAnswerEffect('valid')]
      : [
          {
            policy: 'force-tool-use',
            kind: 'final-answer',
            count: 1,
            detail: { mixed: false, truncated: false, raw: false },
          },
          { policy: 'force-tool-use', kind: 'schema-answer', count: 1, detail: { outcome: 'valid' } },
        ];
    rec?.captureEffects(call, end as never);
    rec?.captureAttemptEnd(call);
    // The harness summary, by the server's own function: made for the capture alone (the bench's
    // server logs above info), or found by a build that takes the function.
    call.trace.finalKind = 'final_answer';
    rec?.finishCapture(
      call,
      200,
      true,
      { prompt_tokens: 120, completion_tokens: 20, total_tokens: 140 },
      undefined,
      harnessFn ? harnessOf : harnessOf(call, undefined),
      undefined,
    );
    if (r < 0) console.log(call); // keeps the call made on every side
  };
  const rl = createInterface({ input: process.stdin });
  for await (const line of rl) {
    // `heap`: the heap in use after full collections (run with --expose-gc): bytes a record holds.
    // `snap PATH`: a heap snapshot (two of them, N requests apart, count the heap objects a
    // record keeps: what the collector promotes).
    if (line.startsWith('snap ')) {
      (await import('node:v8')).writeHeapSnapshot(line.slice(5));
      process.stdout.write('0\n');
      continue;
    }
    if (line === 'heap') {
      const gc = (globalThis as { gc?: () => void }).gc;
      for (let i = 0; i < 3; i++) gc?.();
      process.stdout.write(`${process.memoryUsage().heapUsed} ${ring?.size ?? 0}\n`);
      continue;
    }
    const [name, count] = line.split(' ');
    let s = shapes.get(name!);
    if (!s) shapes.set(name!, (s = shapeOf(name!)));
    const n = Number(count);
    const c0 = process.cpuUsage();
    for (let i = 0; i < n; i++) one(s);
    // Let a request's end run its course as in a server (timers, a turn of the loop).
    await new Promise((r) => setImmediate(r));
    const c = process.cpuUsage(c0);
    process.stdout.write(`${((c.user + c.system) / n).toFixed(2)}\n`);
  }
}

async function main(): Promise<void> {
  if (args.has('child')) return child(args.get('child') || undefined);
  prepareServer(ROOT, 'build', console.log);
  const before = args.get('before');
  const sides = [
    { name: 'none', dir: '' },
    { name: 'after', dir: resolve(ROOT, BUILD_DIR) },
    ...(before ? [{ name: 'before', dir: resolve(before) }] : []),
  ].map((s) => {
    const p = spawn(
      process.execPath,
      ['--max-semi-space-size=8', '--import', 'tsx', fileURLToPath(import.meta.url), `--child=${s.dir}`],
      { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] },
    );
    const lines = createInterface({ input: p.stdout! })[Symbol.asyncIterator]();
    const ask = async (line: string): Promise<number> => {
      p.stdin!.write(`${line}\n`);
      const r = await lines.next();
      if (r.done) throw new Error(`${s.name}: child ended`);
      return Number(r.value);
    };
    return { ...s, p, ask };
  });
  const rounds = Number(args.get('rounds') || 12);
  const requests = Number(args.get('requests') || 4000);
  for (const name of (args.get('cases') || 'short,long,agent').split(',')) {
    const n = name === 'short' ? requests : Math.max(100, Math.floor(requests / (name === 'long' ? 8 : 4)));
    for (const s of sides) for (let i = 0; i < 3; i++) await s.ask(`${name} ${n}`);
    const us = sides.map(() => [] as number[]);
    for (let r = 0; r < rounds; r++)
      for (let k = 0; k < sides.length; k++) {
        const i = (k + r) % sides.length;
        us[i]!.push(await sides[i]!.ask(`${name} ${n}`));
      }
    console.log(`${name}: CPU µs per request (${rounds} rounds of ${n}), capture = side - none:`);
    sides.forEach((s, i) => {
      const own = us[i]!.map((x, r) => x - us[0]![r]!);
      console.log(
        `  ${s.name.padEnd(7)} ${median(us[i]!).toFixed(1).padStart(8)} [${us[i]!.map((x) => x.toFixed(0)).join(' ')}]${
          i === 0
            ? ''
            : `; capture ${median(own).toFixed(1)} µs (rounds ${Math.min(...own).toFixed(1)} to ${Math.max(...own).toFixed(1)})`
        }`,
      );
    });
  }
  for (const s of sides) s.p.stdin!.end();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
