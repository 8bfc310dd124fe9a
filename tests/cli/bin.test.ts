/**
 * The `toolproof` bin in a fresh clone: `npm ci` runs `prepare`, which links the project's own
 * bin into node_modules/.bin (npm links only dependencies' bins, and `npx toolproof` inside this
 * package looked there alone: "sh: 1: toolproof: not found"); the bin compiles dist/ when it is
 * stale, then runs the compiled CLI with its arguments and exit status. Checked on a copy of the
 * two scripts beside a stand-in dist/ (a real tsc build costs a minute on a loaded machine).
 */
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function clone(): string {
  dir = mkdtempSync(join(tmpdir(), 'toolproof-bin-'));
  mkdirSync(join(dir, 'scripts'));
  mkdirSync(join(dir, 'node_modules'));
  for (const f of ['toolproof.mjs', 'link-bin.mjs'])
    copyFileSync(join(ROOT, 'scripts', f), join(dir, 'scripts', f));
  mkdirSync(join(dir, 'dist/cli'), { recursive: true });
  writeFileSync(
    join(dir, 'dist/cli/toolproof.js'),
    'process.stdout.write(JSON.stringify(process.argv.slice(2))); process.exitCode = 3;\n',
  );
  return dir;
}

it('package.json names the bin and the prepare script that links it', () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    bin: Record<string, string>;
    scripts: Record<string, string>;
  };
  expect(pkg.bin.toolproof).toBe('scripts/toolproof.mjs');
  expect(pkg.scripts.prepare).toBe('node scripts/link-bin.mjs');
});

it('prepare links node_modules/.bin/toolproof to the bin, and running it runs dist/cli with the arguments', () => {
  const root = clone();
  for (let i = 0; i < 2; i++) {
    // twice: an existing link is replaced, not an error
    const linked = spawnSync(process.execPath, [join(root, 'scripts/link-bin.mjs')], { encoding: 'utf8' });
    expect(linked.status, linked.stderr).toBe(0);
  }
  const link = join(root, 'node_modules/.bin/toolproof');
  expect(realpathSync(link)).toBe(realpathSync(join(root, 'scripts/toolproof.mjs')));
  const ran = spawnSync(process.execPath, [link, 'launch', 'claude', '--print'], { encoding: 'utf8' });
  expect(ran.stdout).toBe('["launch","claude","--print"]');
  expect(ran.status).toBe(3);
});

it('links nothing when the package is itself installed under node_modules', () => {
  const root = clone();
  const nested = join(root, 'node_modules', 'toolproof');
  mkdirSync(join(nested, 'scripts'), { recursive: true });
  mkdirSync(join(nested, 'node_modules'));
  copyFileSync(join(root, 'scripts/link-bin.mjs'), join(nested, 'scripts/link-bin.mjs'));
  expect(spawnSync(process.execPath, [join(nested, 'scripts/link-bin.mjs')]).status).toBe(0);
  expect(() => realpathSync(join(nested, 'node_modules/.bin/toolproof'))).toThrow();
});
