/**
 * How toolproof is started for the bench:
 * - 'build' (default): compiled JavaScript, as in production (`npm start`), but compiled into a
 *   private folder, bench/results/.build, so the bench never races a teammate's `npm run build`
 *   into dist/. Rebuilt when any source file is newer than the last build.
 * - 'dist': the existing dist/server/main.js as it is (e.g. the image's build).
 * - 'tsx': the TypeScript sources through tsx (no build; slower start, same steady state).
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
import { join } from 'node:path';

export type ServerMode = 'build' | 'dist' | 'tsx';

/**
 * The node flags `npm start` gives the server (package.json's start script, the one place they
 * are written; the image's command repeats them and a test keeps the two equal), so the bench
 * measures the process users run.
 */
export function startFlags(root: string): string[] {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    scripts?: { start?: string };
  };
  const words = (pkg.scripts?.start ?? '').split(/\s+/).filter(Boolean);
  return words.slice(1).filter((w) => w.startsWith('--'));
}

export const BUILD_DIR = 'bench/results/.build';
const SOURCE_DIRS = ['protocol', 'server', 'parsers', 'policies', 'cli'];
const SOURCE_FILES = ['tsconfig.json', 'tsconfig.build.json', 'package.json', 'package-lock.json'];

function newestMtime(root: string): number {
  let newest = 0;
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile() && /\.(ts|json)$/.test(entry.name))
        newest = Math.max(newest, statSync(path).mtimeMs);
    }
  };
  for (const dir of SOURCE_DIRS) if (existsSync(join(root, dir))) walk(join(root, dir));
  for (const file of SOURCE_FILES)
    if (existsSync(join(root, file))) newest = Math.max(newest, statSync(join(root, file)).mtimeMs);
  return newest;
}

/**
 * Compiles into BUILD_DIR when it is missing or older than the sources. Type errors elsewhere in
 * the tree do not stop the bench as long as tsc emitted main.js (tsc emits despite them); they are
 * reported as a warning. Returns the node arguments that start the server.
 */
export function prepareServer(root: string, mode: ServerMode, log: (line: string) => void): string[] {
  const flags = startFlags(root);
  if (mode === 'tsx')
    return [
      ...flags.filter((f) => f !== '--enable-source-maps'),
      '--import',
      'tsx',
      join(root, 'server/main.ts'),
    ];
  if (mode === 'dist') {
    const main = join(root, 'dist/server/main.js');
    if (!existsSync(main))
      throw new Error(`${main} does not exist: run npm run build first (or use --server=build)`);
    return [...flags, main];
  }
  const outDir = join(root, BUILD_DIR);
  const main = join(outDir, 'server/main.js');
  const stamp = join(outDir, '.stamp');
  const sourcesAt = newestMtime(root);
  if (existsSync(main) && existsSync(stamp) && statSync(stamp).mtimeMs >= sourcesAt) {
    log(`toolproof build is up to date (${BUILD_DIR})`);
    return [...flags, main];
  }
  log(`building toolproof into ${BUILD_DIR} (tsc -p tsconfig.build.json) ...`);
  mkdirSync(outDir, { recursive: true });
  const started = Date.now();
  const tsc = join(root, 'node_modules/typescript/bin/tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--outDir', outDir], {
    cwd: root,
    encoding: 'utf8',
  });
  if (!existsSync(main) || statSync(main).mtimeMs < started - 1000) {
    throw new Error(`tsc did not emit ${main}:\n${result.stdout}${result.stderr}`);
  }
  if (result.status !== 0) {
    const errors = (result.stdout + result.stderr).split('\n').filter((l) => l.includes('error TS'));
    log(`warning: tsc reported ${errors.length} type error(s); the emitted JavaScript is used anyway:`);
    for (const line of errors.slice(0, 5)) log(`  ${line}`);
  }
  // The stamp carries the build's start time: a file saved during the build makes the next run rebuild.
  writeFileSync(stamp, new Date(started).toISOString());
  utimesSync(stamp, new Date(started), new Date(started));
  log(`built in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return [...flags, main];
}
