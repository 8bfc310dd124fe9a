/**
 * Child-process probe for inspector-hostile-shapes.test.ts (run with --expose-gc; not a test file
 * itself): toolproof with a 1 MB capture ring and 1 KB cuts in front of an upstream (in this
 * process) whose model makes up a tool of a NAME_KB name on every answer, COUNT chat requests
 * whose model name is NAME_KB too; prints the heap's growth after a full GC, the ring's own count
 * and how many records it holds. The ring's count is the capture's only bound on memory: what
 * its records keep beyond it (a name kept whole, a cut that holds its parent) is the finding.
 *
 * Usage: capture-hostile-probe.ts COUNT NAME_KB
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildApp } from '../../server/app.js';
import { loadConfig } from '../../server/config.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');
const fullGc = async () => {
  for (let i = 0; i < 4; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 20));
  }
};

const count = Number(process.argv[2] ?? 150);
const nameChars = Number(process.argv[3] ?? 100) * 1024;
let n = 0;
/** A name of its own per use (no string shared between requests): `prefix` then the fill. */
const name = (prefix: string) => `${prefix}${n++}-${'N'.repeat(nameChars)}`;

const upstream = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        id: 'c1',
        object: 'chat.completion',
        created: 1,
        model: 'm1',
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: null,
              tool_calls: [{ id: 't1', type: 'function', function: { name: name('t'), arguments: '{}' } }],
            },
            finish_reason: 'tool_calls',
          },
        ],
      }),
    );
  });
});
await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;

const app = await buildApp(
  loadConfig({
    TOOLPROOF_UPSTREAM_URL: upstreamUrl,
    TOOLPROOF_CAPTURE_MB: '1',
    TOOLPROOF_CAPTURE_BODY_KB: '1',
    TOOLPROOF_CORRECTIVE_RETRY: 'false',
  }),
  { logger: false },
);
await app.listen({ host: '127.0.0.1', port: 0 });
const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }];

const send = async () => {
  const res = await fetch(`${origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: name('m'), messages: [{ role: 'user', content: 'hi' }], tools }),
  });
  await res.arrayBuffer();
  return res.status;
};
// Warm up (the code's own first-use allocations), then measure.
for (let i = 0; i < 20; i++) await send();
await fullGc();
const before = process.memoryUsage().heapUsed;
const statuses = new Set<number>();
for (let i = 0; i < count; i++) statuses.add(await send());
await fullGc();
const growth = process.memoryUsage().heapUsed - before;
const ring = app.toolproof.capture;
process.stdout.write(
  JSON.stringify({
    growthMb: growth / 2 ** 20,
    ringMb: (ring?.bytes ?? 0) / 2 ** 20,
    records: ring?.size ?? 0,
    statuses: [...statuses],
  }),
);
await app.close();
upstream.close();
