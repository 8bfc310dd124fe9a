// Runtime import cycles among the .ts files under the given folders (import type and
// type-only named imports do not count): node scripts/import-cycles.mjs server parsers policies protocol simulator cli
// With --types, type-only imports count too (a type cycle ties two modules as tightly for a
// reader, if not for the loader): node scripts/import-cycles.mjs --types policies
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, dirname, resolve, relative } from 'node:path';
const root = process.cwd();
const files = [];
const walk = (d) => {
  for (const n of readdirSync(d)) {
    const p = join(d, n);
    if (n === 'node_modules' || n.startsWith('.')) continue;
    const s = statSync(p);
    if (s.isDirectory()) walk(p);
    else if (p.endsWith('.ts')) files.push(resolve(p));
  }
};
const args = process.argv.slice(2);
const withTypes = args.includes('--types');
for (const d of args.filter((a) => !a.startsWith('--'))) walk(d);
const graph = new Map();
for (const f of files) {
  const src = readFileSync(f, 'utf8');
  const deps = [];
  const re = /^\s*(import|export)\s+(type\s+)?([^'"]*?from\s+)?['"](\.[^'"]+)['"]/gms;
  let m;
  while ((m = re.exec(src))) {
    const clause = m[3] ?? '';
    if (withTypes) {
      deps.push(resolve(dirname(f), m[4].replace(/\.js$/, '.ts')));
      continue;
    }
    if (m[2]) continue;
    // import { type A, type B } from: all type-only
    const inner = /\{([^}]*)\}/.exec(clause);
    if (
      inner &&
      !/^\s*\w+\s*,/.test(clause) &&
      inner[1]
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean)
        .every((x) => x.startsWith('type '))
    )
      continue;
    const t = resolve(dirname(f), m[4].replace(/\.js$/, '.ts'));
    deps.push(t);
  }
  graph.set(
    f,
    deps.filter((d) => graph.has(d) || files.includes(d)),
  );
}
const cycles = [];
const state = new Map();
const stack = [];
const dfs = (n) => {
  state.set(n, 1);
  stack.push(n);
  for (const d of graph.get(n) ?? []) {
    if (state.get(d) === 1)
      cycles.push(
        stack
          .slice(stack.indexOf(d))
          .concat(d)
          .map((x) => relative(root, x))
          .join(' -> '),
      );
    else if (!state.get(d)) dfs(d);
  }
  stack.pop();
  state.set(n, 2);
};
for (const f of files) if (!state.get(f)) dfs(f);
const what = withTypes ? 'import cycle (type imports included)' : 'runtime import cycle';
console.log(cycles.length ? cycles.join('\n') : `no ${what}`);
console.log(`${files.length} files`);
if (cycles.length) process.exitCode = 1;
