/**
 * Capture's calls timed one by one inside a running server (`bench/capture-cpu.ts --calls`): a
 * copy of a build whose capture functions are wrapped in timers, so what each call costs among a
 * server's other work (32 streams in flight: caches cold) is read per call, for two builds in
 * one run. A whole-server CPU ratio spreads by ±20% on a loaded box; the calls no build changed read
 * within ~5-10% of each other across the two sides of a run (load average 6-10).
 *
 * The copy goes under bench/results/ (its imports resolve the tree's node_modules). Wrapped:
 * every function server/capture/recorder.js exports (a wrapper in place of the declaration, so
 * its calls from within the file are timed too: figures are inclusive), harnessOf and affinityKey
 * (with one replica and logs above info, made for the capture alone by builds before
 * capture-cpu8), namedSessionKey and redactedHeaderText (redactedHeaderPairs since glass13), and the
 * ring's methods a request's record goes through (open, reset, release, note, fromBytes,
 * encodedHeaders or headerPairs, client: a frame)
 * and the arena's append and the ring's charge (its evictions), and the journal's flush (its ops
 * applied, many requests' at once: over 5 ms left out; TP_CALLS_OVER_MS in the environment sets
 * the others' bound, e.g. 5 to count a flush nested in another call alike). `(outermost)`: the calls no other timed
 * call is inside, summed: capture's whole, nothing counted twice. A sample over 200 µs (a collection, a preemption) is left out and counted. The sums are
 * written at the process's exit to `<out>-<pid>.json`.
 */
import { cpSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const PRELUDE = `
import { performance as __perf } from 'node:perf_hooks';
import { writeFileSync as __write } from 'node:fs';
const __T = (globalThis.__tpCalls ??= (() => {
  const t = { sum: new Map(), n: new Map(), out: new Map(), depth: 0 };
  process.on('exit', () => {
    const o = {};
    for (const [k, v] of t.sum) o[k] = { us: v * 1000, calls: t.n.get(k), over200us: t.out.get(k) ?? 0 };
    if (process.env.TP_CALLS_OUT) __write(process.env.TP_CALLS_OUT + '-' + process.pid + '.json', JSON.stringify(o));
  });
  return t;
})());
const __OVER_MS = Number(process.env.TP_CALLS_OVER_MS || 0.2);
function __acc(name, t0) {
  const d = __perf.now() - t0;
  // The journal's flush applies many requests' ops at once: its own bound is higher (5 ms, or
  // TP_CALLS_FLUSH_MS: a flush that starts a batch's export inside it can take longer).
  if (d > (name.endsWith('flushJournal') || name.endsWith('flushSpanEnds') ? Number(process.env.TP_CALLS_FLUSH_MS || 5) : __OVER_MS)) { __T.out.set(name, (__T.out.get(name) ?? 0) + 1); return; }
  __T.sum.set(name, (__T.sum.get(name) ?? 0) + d);
  __T.n.set(name, (__T.n.get(name) ?? 0) + 1);
  // The calls no other timed call is inside: their sum is capture's whole, nothing counted twice.
  if (__T.depth === 0) __T.sum.set('(outermost)', (__T.sum.get('(outermost)') ?? 0) + d);
}
`;

/** `export function NAME(` -> a timed wrapper of the same name around NAME__timed. */
export function wrapExports(src: string, only?: readonly string[], label = ''): string {
  const names: string[] = [];
  const out = src.replace(/^export function (\w+)\(/gm, (m, name: string) => {
    if (only && !only.includes(name)) return m;
    names.push(name);
    return `function ${name}__timed(`;
  });
  const wrappers = names
    .map(
      (n) =>
        `export function ${n}(a, b, c, d, e, f, g, h, i) { const t0 = __perf.now(); __T.depth++; try { return ${n}__timed(a, b, c, d, e, f, g, h, i); } finally { __T.depth--; __acc('${label}${n}', t0); } }`,
    )
    .join('\n');
  return `${PRELUDE}\n${out}\n${wrappers}\n`;
}

export function wrapMethods(src: string, cls: string, methods: readonly string[], label = ''): string {
  const patches = methods
    .map(
      (m) =>
        `{ const f = ${cls}.prototype.${m}; ${cls}.prototype.${m} = function (a, b, c) { const t0 = __perf.now(); __T.depth++; try { return f.call(this, a, b, c); } finally { __T.depth--; __acc('${label}${cls}.${m}', t0); } }; }`,
    )
    .join('\n');
  return `${src}\n${patches}\n`;
}

/**
 * A timed copy of the build at `buildDir` in `into` (replaced); returns `into`. `top`: only the
 * calls a request makes (recorder.js's exports and the response's frames), none inside them: each
 * timer costs two clock reads (~0.1-0.15 µs each on this VM), which the inner ones add to their
 * callers' figures.
 */
export function timedBuild(buildDir: string, into: string, top = false, mode = ''): string {
  rmSync(into, { recursive: true, force: true });
  cpSync(buildDir, into, { recursive: true });
  const edit = (rel: string, f: (src: string) => string) => {
    const file = join(into, rel);
    if (existsSync(file)) writeFileSync(file, f(readFileSync(file, 'utf8')));
  };
  // `--calls=ops`: the journal's ops too (recorder.js's apply* functions, each op's work inside
  // a flush), to split a flush by what it applies.
  // `top` and `ops`: the response's frame hook (take: a frame handed to the record, or to the
  // journal) too, a call each request makes per frame it writes.
  edit('server/capture/recorder.js', (s) => {
    const frames = top ? s.replace(/^function take\(/m, 'export function take(') : s;
    return wrapExports(
      mode === 'ops' ? frames.replace(/^function (apply(?!Journal)\w+)\(/gm, 'export function $1(') : frames,
    );
  });
  // The journal's flush (builds since glass11): the hooks' work, many requests' at once.
  edit('server/capture/journal.js', (s) => wrapExports(s, ['flushJournal']));
  if (top) {
    edit('server/capture/ring.js', (s) =>
      wrapMethods(
        `${PRELUDE}\n${s}`,
        'RecordWriter',
        mode === 'ops' ? ['client', 'read', 'event'] : ['client'],
      ),
    );
    return into;
  }
  edit('server/chat/harness-summary.js', (s) => wrapExports(s, ['harnessOf']));
  edit('server/affinity.js', (s) => wrapExports(s, ['affinityKey', 'namedSessionKey']));
  edit('server/capture/redact.js', (s) => wrapExports(s, ['redactedHeaderText', 'redactedHeaderPairs']));
  edit('server/capture/ring.js', (s) =>
    wrapMethods(
      wrapMethods(`${PRELUDE}\n${s}`, 'CaptureRing', ['open', 'append', 'charge']),
      'RecordWriter',
      ['client', 'release', 'fromBytes', 'encodedHeaders', 'headerPairs', 'note', 'reset'],
    ),
  );
  return into;
}

/** The sums a timed process wrote, µs per captured request (finishCapture's count). */
export function readCalls(file: string): {
  perRequest: Map<string, number>;
  over: Map<string, number>;
  /** Calls per captured request (timed and left out alike). */
  count: Map<string, number>;
} {
  const o = JSON.parse(readFileSync(file, 'utf8')) as Record<
    string,
    { us: number; calls: number; over200us: number }
  >;
  const requests = (o.finishCapture?.calls ?? 0) + (o.finishCapture?.over200us ?? 0);
  const perRequest = new Map<string, number>();
  const over = new Map<string, number>();
  const count = new Map<string, number>();
  for (const [k, v] of Object.entries(o)) {
    perRequest.set(k, requests > 0 ? v.us / requests : 0);
    over.set(k, v.over200us);
    count.set(k, requests > 0 ? ((v.calls ?? 0) + v.over200us) / requests : 0);
  }
  return { perRequest, over, count };
}
