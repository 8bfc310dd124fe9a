/**
 * The perturbation generator's counts (recall7): every published format x small-model slip x
 * schema (tests/parsers/perturb-cases.ts), read whole and streamed at several chunkings.
 * Streamed one character at a time, in fixed sizes, seeded random cuts and cut in two at every
 * position. `npx tsx bench/perturb.ts [-v]`: per format, correct / wrong / miss / content kept / bytes
 * lost / streamed differs; -v lists every wrong, miss, lost and parity case; `--set recall8` or
 * `--set recall9`, `--set recall10`, `--set recall11`, `--set recall12`, `--set recall14`, `--set recall15`, `--set recall16`, `--set recall17` or `--set recall18` counts only the cases that session's generator first wrote.
 */
import { type Classified, classify, generateCases } from '../tests/parsers/perturb-cases.js';

const verbose = process.argv.includes('-v');
/** `--set recall8` … `--set recall18`: only the cases that session's generator first wrote. */
const setArg = process.argv.indexOf('--set');
const only = setArg >= 0 ? process.argv[setArg + 1] : undefined;
const rows = new Map<string, Record<string, number>>();
const bad: Classified[] = [];
for (const c of generateCases()) {
  if (only !== undefined && c.set !== only) continue;
  const k = classify(c, { everyCut: true });
  const row = rows.get(c.format) ?? {
    cases: 0,
    correct: 0,
    wrong: 0,
    miss: 0,
    'content-ok': 0,
    'lost-bytes': 0,
    parity: 0,
  };
  row.cases = (row.cases ?? 0) + 1;
  row[k.verdict] = (row[k.verdict] ?? 0) + 1;
  if (k.parity) row.parity = (row.parity ?? 0) + 1;
  rows.set(c.format, row);
  if (
    k.verdict === 'wrong' ||
    k.verdict === 'leftover' ||
    k.verdict === 'miss' ||
    k.verdict === 'lost-bytes' ||
    k.parity
  )
    bad.push(k);
}
const cols = ['cases', 'correct', 'leftover', 'wrong', 'miss', 'content-ok', 'lost-bytes', 'parity'];
console.log(['format', ...cols].join('\t'));
const total: Record<string, number> = {};
for (const [f, row] of rows) {
  console.log([f.padEnd(22), ...cols.map((c) => row[c] ?? 0)].join('\t'));
  for (const c of cols) total[c] = (total[c] ?? 0) + (row[c] ?? 0);
}
console.log(['total'.padEnd(22), ...cols.map((c) => total[c] ?? 0)].join('\t'));
if (verbose) {
  for (const k of bad) {
    console.log(
      `\n${k.verdict}${k.parity ? ' PARITY' : ''} ${k.c.id} (${k.c.truth})\n  text: ${JSON.stringify(k.c.text)}\n  got:  ${k.got}`,
    );
  }
}
