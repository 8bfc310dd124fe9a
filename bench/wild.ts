/**
 * Recall and precision of recovery on one fixture file of field captures (wild.json,
 * wild2.json): `npx tsx bench/wild.ts tests/fixtures/parsers/wild2.json`.
 * - recalled: expected calls read with the same name and arguments;
 * - misread: calls read that no expectation names (wrong arguments, or a call fabricated
 *   from text that was not one: the number that must stay 0);
 * - deliberate misses: real calls the fixture keeps as text on purpose (`disagreement`),
 *   counted as missed calls so the recall printed is the honest one;
 * - streamed: the text pushed one character at a time must give the same calls and content.
 * When cases name their format family in their note (`[family: NAME]`, wild13 on), the same
 * counts are printed per family: cases, calls expected, recalled, misread, cases left as
 * content (no call read), exact, streamed != whole.
 */
import { readFileSync } from 'node:fs';
import { recoverMessage } from '../parsers/recover.js';
import { type FixtureCase, optionsFor, streamedByChar } from '../tests/parsers/fixtures.js';

const file = process.argv[2];
if (!file) throw new Error('usage: tsx bench/wild.ts <fixture.json>');
const cases: FixtureCase[] = JSON.parse(readFileSync(file, 'utf8'));

const n = { pos: 0, neg: 0, expected: 0, recalled: 0, misread: 0, deliberate: 0, exact: 0, streamDiff: 0 };
const key = (name: string, args: string) => JSON.stringify([name, JSON.parse(args)]);
type Row = {
  cases: number;
  expected: number;
  recalled: number;
  misread: number;
  content: number;
  exact: number;
  streamDiff: number;
};
const families = new Map<string, Row>();

for (const c of cases) {
  const r = recoverMessage({ content: c.text, reasoning: c.reasoning ?? null }, optionsFor(c));
  const family = /\[family: ([^\]]+)\]/.exec(c.note ?? '')?.[1];
  const row: Row = {
    cases: 1,
    expected: c.expect.calls.length + (c.disagreement !== undefined ? 1 : 0),
    recalled: 0,
    misread: 0,
    content: r.calls.length === 0 ? 1 : 0,
    exact: 0,
    streamDiff: 0,
  };
  const want = c.expect.calls.map((w) => JSON.stringify([w.name, w.arguments]));
  if (c.disagreement !== undefined) n.deliberate++;
  if (want.length > 0 || c.disagreement !== undefined) n.pos++;
  else n.neg++;
  n.expected += want.length;
  const left = [...want];
  for (const got of r.calls) {
    const i = left.indexOf(key(got.name, got.arguments));
    if (i >= 0) {
      n.recalled++;
      row.recalled++;
      left.splice(i, 1);
    } else {
      n.misread++;
      row.misread++;
    }
  }
  const exact = left.length === 0 && r.calls.length === want.length && r.content === c.expect.content;
  if (exact) {
    n.exact++;
    row.exact++;
  } else
    console.log(`MISMATCH ${c.name}: calls ${JSON.stringify(r.calls.map((x) => [x.name, x.arguments]))}`);

  const streamed = streamedByChar(c);
  const calls = (x: typeof r) => JSON.stringify(x.calls.map((k) => [k.name, k.arguments]));
  if (calls(streamed) !== calls(r) || streamed.content !== r.content) {
    n.streamDiff++;
    row.streamDiff++;
    console.log(`STREAM DIFF ${c.name}`);
  }
  if (family !== undefined) {
    const f = families.get(family);
    if (!f) families.set(family, row);
    else for (const k of Object.keys(row) as (keyof Row)[]) f[k] += row[k];
  }
}

if (families.size > 0) {
  console.log('family | cases | calls | recalled | misread | left as content | exact | streamed != whole');
  for (const [name, f] of [...families].sort(([a], [b]) => a.localeCompare(b)))
    console.log(
      `${name} | ${f.cases} | ${f.expected} | ${f.recalled} | ${f.misread} | ${f.content} | ${f.exact} | ${f.streamDiff}`,
    );
}

const total = n.expected + n.deliberate;
const pct = total === 0 ? 'n/a' : `${((100 * n.recalled) / total).toFixed(1)}%`;
console.log(
  `${file}: ${cases.length} cases (${n.pos} with a call, ${n.neg} without); calls ${total} ` +
    `(${n.deliberate} kept as text on purpose), recalled ${n.recalled} (${pct}), misread ${n.misread}, ` +
    `exact ${n.exact}/${cases.length}, streamed != whole ${n.streamDiff}`,
);
