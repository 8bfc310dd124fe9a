/**
 * How toolproof is started for the bench:
 * - 'build' (default): compiled JavaScript, as in production (`npm start`), but compiled into a
 *   private folder, bench/results/.build, so the bench never races a teammate's `npm run build`
 *   into dist/. Rebuilt by the script `npm start` uses (scripts/build-if-stale.mjs), when it is
 *   stale by the same rule; type errors elsewhere in the tree only warn.
 * - 'dist': the existing dist/server/main.js as it is (e.g. the image's build).
 * - 'tsx': the TypeScript sources through tsx (no build; slower start, same steady state).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
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

/**
 * `serverArgs` (prepareServer's) starting the build in `dir` instead (an A/B's `--before` side: a
 * copy of BUILD_DIR made before a change; a timed copy of a build).
 */
export function serverArgsAt(serverArgs: readonly string[], dir: string): string[] {
  return serverArgs.map((a) => (a.endsWith('server/main.js') ? join(dir, 'server/main.js') : a));
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
  // One staleness rule for npm start, the bin and the benches: scripts/build-if-stale.mjs.
  const main = join(root, BUILD_DIR, 'server/main.js');
  const result = spawnSync(
    process.execPath,
    [join(root, 'scripts/build-if-stale.mjs'), '--out', BUILD_DIR, '--allow-type-errors'],
    { cwd: root, encoding: 'utf8' },
  );
  for (const line of result.stderr.split('\n')) if (line.trim()) log(line.replace(/^toolproof: /, ''));
  if (result.status !== 0 || !existsSync(main)) throw new Error(`could not build ${main} (see above)`);
  if (!result.stderr.trim()) log(`toolproof build is up to date (${BUILD_DIR})`);
  return [...flags, main];
}
