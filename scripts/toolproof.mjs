#!/usr/bin/env node
/**
 * The `toolproof` bin (package.json `bin`): compiles dist/ when it is missing or stale, as
 * `npm start` does, then runs the compiled CLI (dist/cli/toolproof.js). So `npx toolproof launch
 * claude` works in a fresh clone right after `npm ci`, and after `npm link`, with no build step
 * to remember; the first run says it is building (on stderr, so `--print` output stays clean).
 *
 * Plain JavaScript on purpose: it runs before anything is compiled. Without TypeScript installed
 * (a production install of a built tree) it runs dist/ as it is.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

if (
  existsSync(join(ROOT, 'node_modules/typescript')) &&
  existsSync(join(ROOT, 'scripts/build-if-stale.mjs'))
) {
  // tsc's diagnostics go to stderr too: this process's stdout belongs to the command.
  const built = spawnSync(process.execPath, [join(ROOT, 'scripts/build-if-stale.mjs')], {
    stdio: ['ignore', 2, 2],
  });
  if (built.status !== 0) process.exit(built.status ?? 1);
}
await import(pathToFileURL(join(ROOT, 'dist/cli/toolproof.js')).href);
