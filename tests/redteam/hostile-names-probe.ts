/**
 * Child-process probe for inspector-hostile-shapes.test.ts (run with --expose-gc; not a test file
 * itself): toolproof in front of an upstream (in this process) whose model makes up a tool of a
 * NAME_KB name on every answer, COUNT chat requests whose model name and prompt are NAME_KB too;
 * prints the heap's growth after a full GC, the capture ring's own count and how many records it
 * holds. What the glass box keeps is bounded by its own counts (the ring's bytes, the span limits
 * times the span queue): what it keeps beyond them (a name kept whole, a cut that holds its
 * parent) is the finding.
 *
 * Usage: hostile-names-probe.ts MODE[,MODE...] COUNT NAME_KB [WARM] (one result per mode, in one
 * process; each mode warms up with 20 requests first, a mode after the first with WARM, default 20)
 * - capture: a 1 MB ring with 1 KB cuts, no tracing;
 * - tracing-json, tracing-proto: capture off, traces on (OTLP over http/json or http/protobuf)
 *   with the content opt-in, 1 KB attribute values, and a batch delay longer than the run (the
 *   spans wait in the queue, as behind a slow collector; the endpoint is never reached).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildApp } from '../../server/app.js';
import { loadConfig } from '../../server/config.js';
import { sendCompletion } from '../support/completion.js';
import { fullGc } from '../support/gc.js';

const modes = (process.argv[2] ?? 'capture').split(',');
const count = Number(process.argv[3] ?? 60);
const nameChars = Number(process.argv[4] ?? 100) * 1024;
const warmLater = Number(process.argv[5] ?? 20);
let n = 0;
/** A name of its own per use (no string shared between requests): `prefix` then the fill. */
const name = (prefix: string) => `${prefix}${n++}-${'N'.repeat(nameChars)}`;

const upstream = createServer((req, res) => {
  req.resume();
  req.on('end', () =>
    sendCompletion(
      res,
      {
        content: null,
        tool_calls: [{ id: 't1', type: 'function', function: { name: name('t'), arguments: '{}' } }],
      },
      'tool_calls',
    ),
  );
});
await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;

const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }];
// The batch processor reads its delay from the environment itself.
process.env.OTEL_BSP_SCHEDULE_DELAY = '600000';
// The collector is never reached (the delay): the spans still batched at close go nowhere, fast.
process.env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT = '100';

async function measure(mode: string, warm: number): Promise<Record<string, unknown>> {
  const tracing = mode.startsWith('tracing-');
  const env: Record<string, string> = tracing
    ? {
        TOOLPROOF_CAPTURE_MB: '0',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:9/v1/traces',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: mode === 'tracing-json' ? 'http/json' : 'http/protobuf',
        OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
        OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT: '1024',
      }
    : { TOOLPROOF_CAPTURE_MB: '1', TOOLPROOF_CAPTURE_BODY_KB: '1' };
  const app = await buildApp(loadConfig({ TOOLPROOF_UPSTREAM_URL: upstreamUrl, ...env }), { logger: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const send = async () => {
    const res = await fetch(`${origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: name('m'), messages: [{ role: 'user', content: name('p') }], tools }),
    });
    await res.arrayBuffer();
    return res.status;
  };
  // Warm up (the code's own first-use allocations), then measure.
  for (let i = 0; i < warm; i++) await send();
  await fullGc();
  const before = process.memoryUsage().heapUsed;
  const statuses = new Set<number>();
  for (let i = 0; i < count; i++) statuses.add(await send());
  await fullGc();
  const growth = process.memoryUsage().heapUsed - before;
  const ring = app.toolproof.capture;
  const out = {
    growthMb: growth / 2 ** 20,
    ringMb: (ring?.bytes ?? 0) / 2 ** 20,
    records: ring?.size ?? 0,
    statuses: [...statuses],
  };
  await app.close();
  return out;
}

const results: Record<string, unknown> = {};
for (const [i, mode] of modes.entries()) results[mode] = await measure(mode, i === 0 ? 20 : warmLater);
process.stdout.write(JSON.stringify(results));
upstream.close();
