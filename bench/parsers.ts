/**
 * npx tsx bench/parsers.ts: throughput of the leak-recovery engine (parsers/recover.ts).
 *
 * - 1 MB of prose with no markers, against a plain indexOf scan of the same text (the floor any
 *   marker scan pays) and the ratio between the two; and 1 MB of HTML-like code, full of '<'
 *   (the first char of most markers) but with none of them;
 * - 1 MB made of many calls (hermes, qwen3-coder): MB/s and calls/s;
 * - the streaming path with 1 MB in ~8-char chunks: cost per chunk; also as reasoning that the
 *   prompt opened (startsInReasoning: every chunk is checked for a reasoning close).
 * Each case is warmed up, then the median of several runs is reported. Prints a table and
 * writes bench/results/parsers.json. Options: --runs=N (default 7), --out=PATH.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRecoveryStream, recoverMessage } from '../parsers/recover.js';
import { PARSERS } from '../parsers/registry.js';
import type { DeclaredTool } from '../parsers/types.js';

const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const RUNS = Number(arg('runs') ?? 7);
const here = dirname(fileURLToPath(import.meta.url));
const OUT = resolve(arg('out') ?? join(here, 'results', 'parsers.json'));

const MB = 1 << 20;
const fill = (unit: string) => unit.repeat(Math.ceil(MB / unit.length));
const tools = new Map<string, DeclaredTool>([
  [
    'get_weather',
    {
      name: 'get_weather',
      parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } } },
    },
  ],
]);
function options(startsInReasoning = false) {
  let n = 0;
  return { tools, newId: () => `call_${n++}`, startsInReasoning };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
}

function time(fn: () => unknown): number {
  for (let i = 0; i < 5; i++) fn();
  const ts: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = process.hrtime.bigint();
    fn();
    ts.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return median(ts);
}

const prose = fill('The quick brown fox jumps over the lazy dog; café ☕ 42. ').slice(0, MB);
const html = fill('<div class="x"><p>Hello <b>world</b>, Map<string, T> f(a) -> b</p><br/></div>\n').slice(
  0,
  MB,
);
const hermes = fill(
  'Checking.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tool_call>\n',
);
const qwen = fill(
  '<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>\n',
);

interface Row {
  case: string;
  bytes: number;
  ms: number;
  mb_per_s: number;
  calls?: number;
  note?: string;
  us_per_chunk?: number;
}
const rows: Row[] = [];
const mbps = (bytes: number, ms: number) => bytes / MB / (ms / 1000);

// the floor: one indexOf per distinct marker over the text (what "is any marker here?" costs natively)
const markers = [...new Set(PARSERS.flatMap((p) => p.markers))];
const indexOfMs = time(() => {
  let hits = 0;
  for (const m of markers) if (prose.indexOf(m) >= 0) hits++;
  return hits;
});
const oneIndexOfMs = time(() => prose.indexOf('<tool_call>'));
const proseMs = time(() => recoverMessage({ content: prose, reasoning: null }, options()));
rows.push({
  case: `indexOf x1 (floor)`,
  bytes: prose.length,
  ms: oneIndexOfMs,
  mb_per_s: mbps(prose.length, oneIndexOfMs),
});
rows.push({
  case: `indexOf x${markers.length} markers`,
  bytes: prose.length,
  ms: indexOfMs,
  mb_per_s: mbps(prose.length, indexOfMs),
});
rows.push({
  case: 'recoverMessage, no markers',
  bytes: prose.length,
  ms: proseMs,
  mb_per_s: mbps(prose.length, proseMs),
  note: `${(proseMs / oneIndexOfMs).toFixed(1)}x one indexOf, ${(proseMs / indexOfMs).toFixed(2)}x ${markers.length} indexOf`,
});
const htmlMs = time(() => recoverMessage({ content: html, reasoning: null }, options()));
rows.push({
  case: "recoverMessage, no markers, '<' HTML",
  bytes: html.length,
  ms: htmlMs,
  mb_per_s: mbps(html.length, htmlMs),
});

for (const [name, text] of [
  ['hermes', hermes],
  ['qwen3-coder', qwen],
] as const) {
  let calls = 0;
  const ms = time(() => {
    calls = recoverMessage({ content: text, reasoning: null }, options()).calls.length;
  });
  rows.push({
    case: `recoverMessage, many ${name} calls`,
    bytes: text.length,
    ms,
    mb_per_s: mbps(text.length, ms),
    calls,
    note: `${Math.round(calls / (ms / 1000))} calls/s`,
  });
}

for (const [name, text, inReasoning] of [
  ['prose', prose, false],
  ['hermes', hermes, false],
  ['prose as reasoning', prose, true],
] as const) {
  const CHUNK = 8;
  const chunks = Math.ceil(text.length / CHUNK);
  const ms = time(() => {
    const s = createRecoveryStream(options(inReasoning));
    for (let i = 0; i < text.length; i += CHUNK) s.push({ content: text.slice(i, i + CHUNK) });
    s.finish();
  });
  rows.push({
    case: `stream ${name}, ${CHUNK}-char chunks`,
    bytes: text.length,
    ms,
    mb_per_s: mbps(text.length, ms),
    us_per_chunk: (ms * 1000) / chunks,
  });
}

const pad = (s: string, n: number) => s.padEnd(n);
console.log(`${pad('case', 40)} ${'ms'.padStart(9)} ${'MB/s'.padStart(9)} ${'µs/chunk'.padStart(9)}  note`);
for (const r of rows) {
  console.log(
    `${pad(r.case, 40)} ${r.ms.toFixed(2).padStart(9)} ${r.mb_per_s.toFixed(1).padStart(9)} ${(r.us_per_chunk?.toFixed(2) ?? '').padStart(9)}  ${r.note ?? ''}`,
  );
}
mkdirSync(dirname(OUT), { recursive: true });
writeFileSync(
  OUT,
  `${JSON.stringify({ node: process.version, cpu: cpus()[0]?.model ?? 'unknown', runs: RUNS, parsers: PARSERS.length, rows }, null, 2)}\n`,
);
console.log(`wrote ${OUT}`);
