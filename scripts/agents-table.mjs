#!/usr/bin/env node
/**
 * Rewrites the harness-effect table in README.md (between the agents-table markers) from the agent
 * suite's last run, tests/agents/results.json (written by tests/agents/lib/results-reporter.ts):
 * one row per agent and API, each mode straight to the backend and through toolproof, and the
 * real-content cases (a PDF, an image, 2 MB of tool output: tests/agents/real-content.test.ts).
 *
 *   node scripts/agents-table.mjs           rewrite README.md
 *   node scripts/agents-table.mjs --check   exit 1 when README.md is not what the JSON gives
 *   node scripts/agents-table.mjs --print   print the table
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..');
const START =
  '<!-- agents-table:start (scripts/agents-table.mjs writes this from tests/agents/results.json) -->';
const END = '<!-- agents-table:end -->';
const MODES = ['leak', 'prose', 'clean'];
const API = { chat: 'chat', responses: 'Responses', messages: 'Messages' };

/** Through toolproof: ✓ when every task of the mode passed, else passed/run. */
function through(cases) {
  if (cases.length === 0) return '–';
  const ok = cases.filter((c) => c.state === 'passed').length;
  return ok === cases.length ? '✓' : `✗ ${ok}/${cases.length}`;
}

/** Straight to the backend: leak and prose cases pass when the agent fails as expected. */
function direct(c, mode) {
  if (!c) return '–';
  if (c.state !== 'passed') return '?';
  return mode === 'clean' ? '✓' : mode === 'leak' ? '✗ markup' : '✗ no file';
}

export function renderTable(results) {
  const rows = new Map();
  for (const c of results.cases) {
    const key = `${c.label} (${API[c.api] ?? c.api})`;
    if (!rows.has(key)) rows.set(key, []);
    rows.get(key).push(c);
  }
  const lines = [
    '| agent (API) | straight to the backend: leak / prose / clean | through toolproof: leak / prose / clean | real content, through toolproof |',
    '|---|---|---|---|',
  ];
  for (const [key, all] of [...rows].sort(([a], [b]) => a.localeCompare(b))) {
    // Real-content cases (issue 26) have their own column; the modes count the scripted tasks.
    const cases = all.filter((c) => !c.content);
    const d = MODES.map((m) =>
      direct(
        cases.find((c) => c.via === 'direct' && c.mode === m),
        m,
      ),
    );
    const t = MODES.map((m) => through(cases.filter((c) => c.via === 'toolproof' && c.mode === m)));
    const noDirect = d.every((x) => x === '–');
    const real = all
      .filter((c) => c.content)
      .sort((a, b) => a.content.localeCompare(b.content))
      .map((c) => `${c.content} ${c.state === 'passed' ? '✓' : '✗'}`);
    lines.push(
      `| ${key} | ${noDirect ? '–' : d.join(' / ')} | ${t.join(' / ')} | ${real.join('; ') || '–'} |`,
    );
  }
  const last =
    results.cases
      .map((c) => c.at)
      .sort()
      .at(-1)
      ?.slice(0, 10) ?? '?';
  // Tasks are counted, not listed (the README stays under 12 KB); results.json names each.
  const tasks = new Set(results.cases.map((c) => c.task.replace(/ \(.*\)$/, ''))).size;
  lines.push(
    '',
    `Last run ${last}: ${results.cases.length} cases over ${tasks} tasks (tests/agents/results.json).`,
  );
  return lines.join('\n');
}

export function rewrite(readme, table) {
  const a = readme.indexOf(START);
  const b = readme.indexOf(END);
  if (a === -1 || b < a) throw new Error('README.md has no agents-table markers');
  return `${readme.slice(0, a + START.length)}\n${table}\n${readme.slice(b)}`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const results = JSON.parse(readFileSync(join(ROOT, 'tests', 'agents', 'results.json'), 'utf8'));
  const table = renderTable(results);
  const path = join(ROOT, 'README.md');
  const readme = readFileSync(path, 'utf8');
  const next = rewrite(readme, table);
  if (process.argv.includes('--print')) process.stdout.write(`${table}\n`);
  else if (process.argv.includes('--check')) {
    if (next !== readme) {
      process.stderr.write('README.md: the agents table is stale; run node scripts/agents-table.mjs\n');
      process.exit(1);
    }
  } else {
    writeFileSync(path, next);
    process.stdout.write(
      `README.md: agents table from ${results.cases.length} cases (${Buffer.byteLength(next)} bytes)\n`,
    );
  }
}
