/**
 * Recall on peer parser test cases whose expectations are the peer's own (not today's reading):
 * `npx tsx bench/peer.ts [bench/peer-new.json]`. Per source file and in total:
 * - positives: cases whose test expects calls, all to tools the test declares (a case that
 *   calls a tool its test does not declare is counted apart: toolproof refuses it on purpose);
 * - recalled: the same calls (names, arguments, order) read;
 * - negatives turned into calls: cases the peer reads no call from that toolproof reads one from;
 * - streamed != whole: one character at a time gives other calls or content than the whole text;
 * - content differs: informational (the peer's content conventions are not toolproof's).
 * A miss or a call read from a negative whose case is a listed deliberate disagreement
 * (parsers/disagreements.json) is also counted apart, as `disagreed`.
 */
import { readFileSync } from 'node:fs';
import { recoverMessage } from '../parsers/recover.js';
import { type FixtureCase, optionsFor, streamedByChar } from '../tests/parsers/fixtures.js';

const file = process.argv.slice(2).find((a) => !a.startsWith('-')) ?? 'bench/peer-new.json';
const listed = new Set(
  (JSON.parse(readFileSync('parsers/disagreements.json', 'utf8')) as { source: string }[]).map(
    (d) => d.source,
  ),
);
const cases: FixtureCase[] = JSON.parse(readFileSync(file, 'utf8'));
const verbose = process.argv.includes('-v');

interface Tally {
  pos: number;
  recalled: number;
  undeclared: number;
  neg: number;
  fabricated: number;
  streamDiff: number;
  contentDiff: number;
  disagreedPos: number;
  disagreedNeg: number;
}
const blank = (): Tally => ({
  pos: 0,
  recalled: 0,
  undeclared: 0,
  neg: 0,
  fabricated: 0,
  streamDiff: 0,
  contentDiff: 0,
  disagreedPos: 0,
  disagreedNeg: 0,
});
const per = new Map<string, Tally>();
const total = blank();
/** Canonical JSON: object keys sorted, so argument order does not count (JSON objects are unordered). */
const canon = (v: unknown): string =>
  Array.isArray(v)
    ? `[${v.map(canon).join(',')}]`
    : v !== null && typeof v === 'object'
      ? `{${Object.keys(v)
          .sort()
          .map((k) => `${JSON.stringify(k)}:${canon((v as Record<string, unknown>)[k])}`)
          .join(',')}}`
      : JSON.stringify(v);
const callsOf = (r: ReturnType<typeof recoverMessage>) =>
  canon(r.calls.map((k) => [k.name, JSON.parse(k.arguments)]));

for (const c of cases) {
  const key = (c.source ?? c.name).split('::')[0]!;
  const t = per.get(key) ?? blank();
  per.set(key, t);
  const r = recoverMessage({ content: c.text, reasoning: c.reasoning ?? null }, optionsFor(c));
  const want = canon(c.expect.calls.map((w) => [w.name, w.arguments]));
  const declared = new Set(c.tools.map((x) => x.name));
  const bump = (k: keyof Tally) => {
    t[k]++;
    total[k]++;
  };
  if (c.expect.calls.length === 0) {
    bump('neg');
    if (r.calls.length > 0) {
      bump('fabricated');
      if (listed.has(c.source ?? c.name)) bump('disagreedNeg');
      console.log(`FABRICATED ${c.name}: ${callsOf(r)}`);
    }
  } else if (c.expect.calls.some((w) => !declared.has(w.name))) bump('undeclared');
  else {
    bump('pos');
    if (callsOf(r) === want) bump('recalled');
    else if (listed.has(c.source ?? c.name)) {
      bump('disagreedPos');
      console.log(`DISAGREED ${c.name}: got ${callsOf(r)} want ${want}`);
    } else console.log(`MISSED ${c.name}: got ${callsOf(r)} want ${want}`);
  }
  if (r.content !== c.expect.content) {
    bump('contentDiff');
    if (verbose)
      console.log(`CONTENT ${c.name}: ${JSON.stringify(r.content)} want ${JSON.stringify(c.expect.content)}`);
  }
  const streamed = streamedByChar(c);
  if (callsOf(streamed) !== callsOf(r) || streamed.content !== r.content) {
    bump('streamDiff');
    console.log(`STREAM DIFF ${c.name}`);
  }
}

const pct = (a: number, b: number) => (b === 0 ? 'n/a' : `${((100 * a) / b).toFixed(1)}%`);
const row = (name: string, t: Tally) =>
  `${name}: recalled ${t.recalled}/${t.pos} (${pct(t.recalled, t.pos)}), undeclared ${t.undeclared}, ` +
  `negatives turned into calls ${t.fabricated}/${t.neg}, streamed != whole ${t.streamDiff}, content differs ${t.contentDiff}; ` +
  `listed disagreements ${t.disagreedPos} positives + ${t.disagreedNeg} negatives, recalled of the rest ` +
  `${t.recalled}/${t.pos - t.disagreedPos} (${pct(t.recalled, t.pos - t.disagreedPos)}), negatives read of the rest ${t.fabricated - t.disagreedNeg}`;
for (const [k, t] of [...per].sort()) console.log(row(k, t));
console.log(row(`TOTAL ${file} (${cases.length} cases)`, total));
