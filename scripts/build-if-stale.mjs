#!/usr/bin/env node
/**
 * `npm start`'s prestart: compiles TypeScript into dist/ only when dist/ is out of date, so a
 * restart serves within a second instead of paying a full tsc run (about 7 s) every time. The
 * `toolproof` bin (scripts/toolproof.mjs) and the benches (bench/lib/build.ts, with
 * `--out bench/results/.build --allow-type-errors`) build through it too: one staleness rule.
 *
 * Out of date means: no server/main.js in the output folder, no stamp, a source file newer than
 * the stamp (its mtime is the start of the last build, so a file saved during a build is caught
 * next time), or a different set of source files (one was added, removed or renamed). A rebuild
 * is incremental (tsc --incremental, its build info kept next to the output).
 *
 * Options: `--out DIR` (default dist, relative to the repository root); `--allow-type-errors`:
 * a build whose JavaScript tsc emitted despite type errors elsewhere counts (the errors are
 * printed as a warning), for the benches, which measure a teammate's half-finished tree too.
 *
 * Plain JavaScript on purpose: it runs before anything is compiled, and fast (no tsx).
 */
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
// What tsconfig.build.json compiles, plus the files that change how it compiles.
const SOURCE_DIRS = ['protocol', 'server', 'parsers', 'policies', 'cli'];
const SOURCE_FILES = ['tsconfig.json', 'tsconfig.build.json', 'package.json', 'package-lock.json'];
const args = process.argv.slice(2);
const outAt = args.indexOf('--out');
const OUT = resolve(ROOT, outAt >= 0 && args[outAt + 1] ? args[outAt + 1] : 'dist');
const ALLOW_TYPE_ERRORS = args.includes('--allow-type-errors');
const OUT_NAME = relative(ROOT, OUT).startsWith('..') ? OUT : relative(ROOT, OUT) || '.';
const MAIN = join(OUT, 'server/main.js');
const STAMP = join(OUT, '.build-stamp');

function sources() {
  const files = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile() && /\.(ts|json)$/.test(entry.name)) files.push(path);
    }
  };
  for (const dir of SOURCE_DIRS) if (existsSync(join(ROOT, dir))) walk(join(ROOT, dir));
  for (const file of SOURCE_FILES) if (existsSync(join(ROOT, file))) files.push(join(ROOT, file));
  return files;
}

/** Why a build is needed, or null when dist/ is current. */
function staleness(files, list) {
  if (!existsSync(MAIN)) return `no ${OUT_NAME}/server/main.js`;
  if (!existsSync(STAMP)) return 'no build stamp';
  const builtAt = statSync(STAMP).mtimeMs;
  const newer = files.find((f) => statSync(f).mtimeMs > builtAt);
  if (newer) return `${relative(ROOT, newer)} changed`;
  if (readFileSync(STAMP, 'utf8') !== list) return 'source files were added or removed';
  return null;
}

const files = sources();
const list = files
  .map((f) => relative(ROOT, f))
  .sort()
  .join('\n');
const why = staleness(files, list);
if (why === null) process.exit(0);

process.stderr.write(`toolproof: building ${OUT_NAME}/ (${why}) ...\n`);
const started = new Date();
const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
const result = spawnSync(
  process.execPath,
  [
    tsc,
    '-p',
    'tsconfig.build.json',
    '--outDir',
    OUT,
    '--incremental',
    '--tsBuildInfoFile',
    join(OUT, '.tsbuildinfo'),
  ],
  { cwd: ROOT, stdio: ALLOW_TYPE_ERRORS ? ['ignore', 'pipe', 'pipe'] : 'inherit', encoding: 'utf8' },
);
if (result.status !== 0) {
  // tsc's status 2 means type errors with the JavaScript emitted anyway (1 and 3: nothing emitted).
  if (!ALLOW_TYPE_ERRORS || result.status !== 2) {
    if (ALLOW_TYPE_ERRORS) process.stderr.write(`${result.stdout ?? ''}${result.stderr ?? ''}`);
    process.exit(result.status ?? 1);
  }
  const errors = `${result.stdout}${result.stderr}`.split('\n').filter((l) => l.includes('error TS'));
  process.stderr.write(
    `toolproof: warning: tsc reported ${errors.length} type error(s); the emitted JavaScript is used anyway:\n`,
  );
  for (const line of errors.slice(0, 5)) process.stderr.write(`  ${line}\n`);
}
mkdirSync(OUT, { recursive: true });
writeFileSync(STAMP, list);
utimesSync(STAMP, started, started);
process.stderr.write(`toolproof: built in ${((Date.now() - started.getTime()) / 1000).toFixed(1)} s\n`);
