/**
 * How often a corpus's outputs would be re-asked rather than read (issue 30): an output whose
 * recovery leaves a leak record `unrecovered` or `rejected` is what corrective retry re-asks,
 * counted as toolproof_leak_reasks_total. `npx tsx bench/reasks.ts <fixture.json> ...`
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { recoverMessage } from '../parsers/recover.js';
import { type FixtureCase, optionsFor } from '../tests/parsers/fixtures.js';

for (const file of process.argv.slice(2)) {
  const cases: FixtureCase[] = JSON.parse(readFileSync(file, 'utf8'));
  const n = { pos: 0, neg: 0, posReask: 0, negReask: 0 };
  const causes = new Map<string, number>();
  for (const c of cases) {
    const r = recoverMessage({ content: c.text, reasoning: c.reasoning ?? null }, optionsFor(c));
    const positive = c.expect.calls.length > 0 || c.disagreement !== undefined;
    if (positive) n.pos++;
    else n.neg++;
    const left =
      r.leaks.find((l) => l.outcome === 'unrecovered') ?? r.leaks.find((l) => l.outcome === 'rejected');
    if (!left) continue;
    if (positive) n.posReask++;
    else n.negReask++;
    const k = `${left.outcome}:${left.reason ?? '-'}`;
    causes.set(k, (causes.get(k) ?? 0) + 1);
  }
  const pct = (a: number, b: number) => (b === 0 ? 'n/a' : `${((100 * a) / b).toFixed(1)}%`);
  console.log(
    `${basename(file)}: ${cases.length} outputs; re-asked ${n.posReask}/${n.pos} with a call (${pct(n.posReask, n.pos)}), ` +
      `${n.negReask}/${n.neg} without (${pct(n.negReask, n.neg)}); ${[...causes].map(([k, v]) => `${k} ${v}`).join(', ')}`,
  );
}
