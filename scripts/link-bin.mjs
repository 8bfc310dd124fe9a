#!/usr/bin/env node
/**
 * package.json's `prepare` (run by `npm ci` and `npm install` in this repository): links the
 * project's own `toolproof` bin into node_modules/.bin. npm links the bins of dependencies only,
 * and `npx` run inside the package that declares a bin finds the package "already installed"
 * and looks for the bin in node_modules/.bin alone ("sh: 1: toolproof: not found"). With the
 * link, `npx toolproof launch claude` works in a fresh clone after `npm ci`.
 *
 * Does nothing when this package is itself installed as a dependency (npm links its bin then).
 */
import { existsSync, lstatSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const inside = ROOT.split(sep).includes('node_modules');
const modules = join(ROOT, 'node_modules');
if (!inside && existsSync(modules)) {
  const binDir = join(modules, '.bin');
  const link = join(binDir, 'toolproof');
  mkdirSync(binDir, { recursive: true });
  try {
    lstatSync(link);
    rmSync(link, { force: true });
  } catch {
    // no link yet
  }
  symlinkSync(relative(binDir, join(ROOT, 'scripts/toolproof.mjs')), link);
}
