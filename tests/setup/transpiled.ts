/**
 * Global setup (vitest.config.ts `globalSetup`): the sources transpiled once per run, file by
 * file, into a JS tree with the repository's layout (node_modules/.cache/toolproof-tests/js-PID/),
 * for the tests that start toolproof or a probe as a child process (nodeEntry in
 * tests/support/toolproof-process.ts). The same transpiler tsx uses (esbuild, one file at a time,
 * no bundling), run once instead of in every child: `node --import tsx server/main.ts` cost
 * ~1.7 s of CPU to start, the transpiled file ~0.7 s, and the suite starts ~25 such children.
 * The tree is rebuilt on every run (~2 s of CPU, esbuild spreads it over the cores) and removed
 * after it, so a child never runs stale code.
 */
import { mkdirSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { join, relative } from 'node:path';
import { build } from 'esbuild';
import type { TestProject } from 'vitest/node';

/** What a child can load: the product's folders, and the tests' helpers and probes. */
const FOLDERS = ['server', 'protocol', 'parsers', 'policies', 'cli', 'simulator', 'tests'];

function sourceFiles(root: string): string[] {
  return FOLDERS.flatMap((folder) =>
    readdirSync(join(root, folder), { recursive: true, encoding: 'utf8' })
      .map((f) => join(folder, f))
      .filter(
        (f) =>
          f.endsWith('.ts') &&
          !f.endsWith('.d.ts') &&
          !f.endsWith('.test.ts') &&
          !/^tests\/(agents|artifacts|fixtures)\//.test(f),
      ),
  );
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** The transpiled tree's root (tests/support/toolproof-process.ts nodeEntry). */
    transpiledRoot: string;
  }
}

export default async function setup(project: TestProject): Promise<() => void> {
  const root = project.config.root;
  // Under node_modules: packages resolve from it as from the sources, and no linter reads it.
  const out = join(root, 'node_modules', '.cache', 'toolproof-tests', `js-${process.pid}`);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  await build({
    entryPoints: sourceFiles(root).map((f) => join(root, f)),
    outdir: out,
    outbase: root,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'warning',
  });
  // The inspector's page is read next to the sources (server/routes/inspect.ts, ../../inspect/).
  symlinkSync(relative(out, join(root, 'inspect')), join(out, 'inspect'));
  project.provide('transpiledRoot', out);
  return () => rmSync(out, { recursive: true, force: true });
}
